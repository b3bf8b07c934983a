#!/bin/sh
# release-assets.sh writes into release-assets/ what a release ships beside the binary:
# shell completions and man pages, generated from the command tree, and the CA bundle
# the container image carries. goreleaser runs it as its before hook (.goreleaser.yaml).
set -eu
out=release-assets
ca=/etc/ssl/certs/ca-certificates.crt
if [ ! -r "$ca" ]; then
	echo "release-assets.sh: $ca is missing: install the ca-certificates package (Debian, Alpine)" >&2
	exit 1
fi
rm -rf "$out"
mkdir -p "$out/completions"
go build -o "$out/redlockctl" .
"$out/redlockctl" completion bash >"$out/completions/redlockctl.bash"
"$out/redlockctl" completion zsh >"$out/completions/_redlockctl"
"$out/redlockctl" completion fish >"$out/completions/redlockctl.fish"
rm "$out/redlockctl"
go run ./internal/app/cli/gendocs "$out"
rm -r "$out/cli"
gzip -9n "$out"/man/*.1
cp "$ca" "$out/ca-certificates.crt"
