#!/usr/bin/env bash
# Installs everything (./install.sh) and runs the whole test suite; ends with one "N passed, N failed" line.
set -uo pipefail
cd "$(dirname "$0")"
./install.sh || exit 1
[ -x .tools/bin/bun ] && export PATH="$(pwd)/.tools/bin:$PATH"

log=$(mktemp)
bun test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(grep -Eo '^ *[0-9]+ pass$' "$log" | grep -Eo '[0-9]+' | tail -1)
failed=$(grep -Eo '^ *[0-9]+ fail$' "$log" | grep -Eo '[0-9]+' | tail -1)
rm -f "$log"
passed=${passed:-0}
failed=${failed:-0}
echo "${passed} passed, ${failed} failed"
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ]; then exit 1; fi
