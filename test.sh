#!/usr/bin/env bash
# Installs everything (./install.sh), checks types, lint and format, and runs the whole test suite;
# ends with one "N passed, N failed" line.
set -uo pipefail
cd "$(dirname "$0")"
./install.sh || exit 1
[ -x .tools/bin/bun ] && export PATH="$(pwd)/.tools/bin:$PATH"

# Guardrails before any test runs: the type check (Bun runs TypeScript without checking it) and Biome's
# lint and format check (biome.jsonc). Both run at once; either failing stops here as one failed check.
tsc_log=$(mktemp)
node_modules/.bin/tsc -p tsconfig.json --noEmit >"$tsc_log" 2>&1 &
tsc_pid=$!
node_modules/.bin/biome check --error-on-warnings --max-diagnostics=50
biome_status=$?
wait "$tsc_pid"
tsc_status=$?
cat "$tsc_log"
rm -f "$tsc_log"
if [ "$tsc_status" -ne 0 ] || [ "$biome_status" -ne 0 ]; then
  [ "$tsc_status" -ne 0 ] && echo "test.sh: the type check failed (node_modules/.bin/tsc -p tsconfig.json --noEmit); no test was run" >&2
  [ "$biome_status" -ne 0 ] && echo "test.sh: biome check failed (node_modules/.bin/biome check; biome format --write fixes formatting); no test was run" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

log=$(mktemp)
# bunfig.toml's [test] timeout is not read by this Bun, so the per-test limit is given here (CI's 2 cores are shared).
# Three files at a time, the slowest first (test/timings.json: refresh it with --update-timings after adding a slow
# file): browser tests leave a core idle while Chromium renders, and a third file fills it (224 s against 285 s two at
# a time on 2 cores). --no-isolate: a worker loads the server's modules once, not once per file (a fifth of the
# suite's CPU); no test sets a global or mocks a module, and every file starts its own servers on its own database.
# Against one shared database server (test/sqld.sh), one file at a time: each file's first server empties it.
parallel=3
[ -n "${SVC_TEST_DB_URL:-}${SVC_TEST_SYNC_URL:-}" ] && parallel=1
bun test --timeout 30000 --parallel=$parallel --no-isolate --timings=test/timings.json "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(grep -Eo '^ *[0-9]+ pass$' "$log" | grep -Eo '[0-9]+' | tail -1)
failed=$(grep -Eo '^ *[0-9]+ fail$' "$log" | grep -Eo '[0-9]+' | tail -1)
rm -f "$log"
passed=${passed:-0}
failed=${failed:-0}
echo "${passed} passed, ${failed} failed"
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ]; then exit 1; fi
