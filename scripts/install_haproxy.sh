#!/usr/bin/env bash
# Debian's HAProxy for scripts/serve_class.sh (a class served by several workers) and its tests; `sudo` is used when
# not root. Does nothing when haproxy is already there. scripts/install_browser.sh runs it, so the README's test
# command and CI install it too.
set -euo pipefail
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -qq haproxy >/dev/null 2>&1 || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq haproxy; }
