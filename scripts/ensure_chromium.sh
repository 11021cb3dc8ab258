#!/usr/bin/env bash
# Install Debian's Chromium for the browser test if it is missing (no browser download by Playwright).
# Run by `make browser-deps`, and by `make test` only in CI (CI=true); never by a plain `make test`.
# Without root or apt-get it only reports; the browser test then skips unless COURSE_REQUIRE_BROWSER=1.
set -u
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's chromium for the browser test..."
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends chromium >/dev/null \
        && exit 0
    echo "chromium could not be installed; the browser test will be skipped" >&2
else
    echo "chromium is not installed: as root, \`make browser-deps\` installs Debian's 'chromium'; or" \
         "\`sudo apt install chromium\`, or set COURSE_CHROMIUM to a Chromium binary. The browser test will be skipped." >&2
fi
exit 0
