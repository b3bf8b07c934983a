// Package release tests what a release publishes, from a goreleaser snapshot in the
// repository's dist/: every archive's binary, completions and man pages and its
// checksum, the .deb installed with dpkg and removed again, the .rpm's files and
// scripts, the systemd unit, and the container image built with podman and serving a
// real redis-server's locks. The tests are behind the build tag release and run from
// `make release-check`, which builds dist/ first; without dist/ they fail.
package release
