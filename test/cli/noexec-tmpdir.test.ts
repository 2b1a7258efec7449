// The compiled binary where $TMPDIR is mounted noexec (common hardening): it loads its database driver from /var/tmp
// or ~/.cache/svc instead, and where no directory allows it, says so in one line naming TMPDIR. Each case runs in a
// mount namespace of its own (unshare -m), so the noexec mounts are seen by nothing else.
import { beforeAll, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SVC, cleanEnv, ensureBuilt } from "./bin.ts";

beforeAll(() => ensureBuilt(), 120_000);

async function inNamespace(script: string) {
  const proc = Bun.spawn(["unshare", "-m", "sh", "-ec", script], { env: { ...cleanEnv(), SVC: SVC }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

test("with a noexec TMPDIR the binary still opens a database", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-noexec-"));
  const r = await inNamespace(
    `mkdir -p ${dir}/tmp && mount -t tmpfs -o noexec tmpfs ${dir}/tmp && TMPDIR=${dir}/tmp "$SVC" migrate --db file:${dir}/svc.db && echo "code=$?"`,
  );
  expect(r.stderr).toBe("");
  expect(r.stdout).toContain("Applied");
  expect(r.stdout).toContain("code=0");
});

test("where no directory allows executables a database command says so in one line, naming TMPDIR", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-noexec-"));
  const r = await inNamespace(
    `mkdir -p ${dir}/tmp && mount -t tmpfs -o noexec tmpfs ${dir}/tmp && mount -t tmpfs -o noexec tmpfs /var/tmp && HOME=${dir}/tmp TMPDIR=${dir}/tmp "$SVC" migrate --db file:${dir}/svc.db || echo "code=$?"`,
  );
  expect(r.stdout).toBe("code=1\n");
  expect(r.stderr.trim().split("\n")).toHaveLength(1);
  expect(r.stderr).toContain("cannot load its database driver");
  expect(r.stderr).toContain("set TMPDIR to a directory that does");
});

test("there, the commands that need no database still run: the driver is loaded only by those that do", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-noexec-"));
  const r = await inNamespace(
    `mkdir -p ${dir}/tmp && mount -t tmpfs -o noexec tmpfs ${dir}/tmp && mount -t tmpfs -o noexec tmpfs /var/tmp && HOME=${dir}/tmp TMPDIR=${dir}/tmp && export HOME TMPDIR && "$SVC" --version && "$SVC" completion bash >/dev/null && "$SVC" __complete -- call get_bal && echo "code=$?"`,
  );
  expect(r.stderr).toBe("");
  expect(r.stdout).toMatch(/^\d+\.\d+\.\d+\nget_balances\ncode=0\n$/);
});
