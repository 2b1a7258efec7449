#!/usr/bin/env bash
# Installs Debian's Chromium for the page tests when it is missing; the browser is never downloaded by playwright.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
# Test files run in parallel (./test.sh): one installs, the others wait for it and find it there.
exec 9>"${TMPDIR:-/tmp}/svc-ensure-chromium.lock"
flock 9
if [ -x /usr/bin/chromium ]; then exit 0; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
test -x /usr/bin/chromium
