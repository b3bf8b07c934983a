# The redlockctl image: the static binary on an empty base, with a CA bundle, run as an
# unprivileged user; `serve` (the exporter, :7335) by default.
#
# goreleaser builds it from a release's binaries (.goreleaser.yaml, dockers_v2). By hand,
# from this directory:
#   sh packaging/release-assets.sh
#   CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o linux/amd64/redlockctl .
#   podman build --platform linux/amd64 -t redlockctl .
FROM scratch
ARG TARGETPLATFORM
COPY release-assets/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY ${TARGETPLATFORM}/redlockctl /usr/bin/redlockctl
# 65532: the unprivileged "nonroot" user of distroless images; no shell, no passwd entry.
USER 65532:65532
ENV REDLOCKCTL_CONFIG=/etc/redlockctl/config.toml
EXPOSE 7335
ENTRYPOINT ["/usr/bin/redlockctl"]
CMD ["serve"]
