#!/usr/bin/env bash
# Debian's Chromium for the end-to-end browser tests (Playwright cannot download browsers here), then Debian's HAProxy
# (scripts/install_haproxy.sh) for scripts/serve_class.sh and its tests. Installs only what is missing.
set -euo pipefail
if [ ! -x /usr/bin/chromium ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y -qq chromium >/dev/null 2>&1 || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium; }
fi
bash "$(dirname "$0")/install_haproxy.sh"
