#!/usr/bin/env bash
# Installs what is missing, builds bin/svc and runs `svc serve` on ./data/svc.db (flags pass through).
set -euo pipefail
cd "$(dirname "$0")"
./install.sh
exec ./bin/svc serve "$@"
