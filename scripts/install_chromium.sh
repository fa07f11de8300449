#!/bin/sh
# Install Debian's chromium (used by tests/test_report_browser.py) when it is missing and we are
# root; otherwise do nothing. Always exits 0: without a browser the browser tests skip with a reason.
CHROMIUM=/usr/bin/chromium
[ -x "$CHROMIUM" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "install_chromium: $CHROMIUM missing and not root; the browser tests will skip" >&2
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_chromium: no apt-get here; the browser tests will skip" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
APT_OPTS="-o Acquire::http::Timeout=20 -o Acquire::Retries=1"
apt-get $APT_OPTS install -y chromium >/dev/null 2>&1 \
    || { apt-get $APT_OPTS update >/dev/null 2>&1 && apt-get $APT_OPTS install -y chromium >/dev/null 2>&1; } \
    || echo "install_chromium: apt-get could not install chromium; the browser tests will skip" >&2
exit 0
