#!/usr/bin/env bash
# Installs Debian's systemd (for systemd-analyze, which checks the units in deploy/systemd) when it is missing.
set -euo pipefail
if command -v systemd-analyze >/dev/null 2>&1; then exit 0; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends systemd >/dev/null
command -v systemd-analyze >/dev/null
