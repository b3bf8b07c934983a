#!/bin/sh
# postinstall: the unprivileged user redlockctl.service runs as, and systemd told of the
# new unit (where systemd runs). The service is neither enabled nor started: its config
# names the masters first.
set -e
if ! getent group redlockctl >/dev/null; then
	groupadd --system redlockctl
fi
if ! getent passwd redlockctl >/dev/null; then
	useradd --system --gid redlockctl --no-create-home --home-dir /nonexistent \
		--shell /usr/sbin/nologin --comment "redlockctl exporter" redlockctl
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
fi
