#!/usr/bin/env bash
# Installs Debian's zsh and fish for the completion tests when they are missing.
set -euo pipefail
if command -v zsh >/dev/null && command -v fish >/dev/null; then exit 0; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends zsh fish >/dev/null
command -v zsh >/dev/null && command -v fish >/dev/null
