#!/bin/sh
# preremove: stop the exporter before its binary goes (not on an upgrade: dpkg passes
# "upgrade", rpm a count of 1 or more).
set -e
case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now redlockctl.service >/dev/null 2>&1 || true
	fi
	;;
esac
