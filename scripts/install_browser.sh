#!/usr/bin/env bash
# Debian's Chromium for the end-to-end browser test (Playwright cannot download browsers here).
# Does nothing when /usr/bin/chromium is already there.
set -euo pipefail
[ -x /usr/bin/chromium ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -qq chromium >/dev/null 2>&1 || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium; }
