#!/bin/sh
# postremove: systemd forgets the unit. The user and group stay (files may still belong
# to them), as do the config's edits until a purge.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
fi
