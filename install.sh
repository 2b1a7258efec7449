#!/usr/bin/env bash
# Installs what is missing (Bun from npm), the locked dependencies, and builds bin/svc.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v bun >/dev/null 2>&1; then
  if [ -x .tools/bin/bun ]; then
    :
  else
    echo "install.sh: Bun not found; installing it from npm into .tools/" >&2
    npm install --silent --no-audit --no-fund --prefix .tools bun@1.4.5 >&2
    mkdir -p .tools/bin
    ln -sf "$(pwd)/.tools/node_modules/bun/bin/bun.exe" .tools/bin/bun
  fi
  export PATH="$(pwd)/.tools/bin:$PATH"
fi
echo "install.sh: using bun $(bun --version)" >&2

bun install --frozen-lockfile >&2
mkdir -p bin
bun run scripts/build.ts >&2
echo "install.sh: built bin/svc" >&2
