// The compiled svc as an embedded replica: the replica's sync runs in a thread of its own (db/replica-sync.ts), whose
// code the build must carry inside the binary; run from another directory, nothing on disk could stand in for it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "../hardening/spawn-server.ts";
import { type Sqld, startSqld } from "../sqld.ts";
import { SVC, cleanEnv, ensureBuilt } from "./bin.ts";

let dir: string;
let sqld: Sqld;
let server: Subprocess | undefined;
beforeAll(async () => {
  await ensureBuilt();
  sqld = await startSqld();
  dir = mkdtempSync(join(tmpdir(), "svc-replica-bin-"));
}, 120_000);
afterAll(async () => {
  server?.kill("SIGTERM");
  await server?.exited;
  await sqld?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function call(url: string, tool: string, args: unknown, key?: string) {
  const res = await fetch(`${url}/v1/tools/${tool}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(args),
  });
  return { status: res.status, body: (await res.json()) as any };
}

test("bin/svc serves as an embedded replica from any directory: writes reach the primary, reads see them", async () => {
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  server = Bun.spawn([SVC, "serve", "--port", String(port), "--db", `file:${join(dir, "replica.db")}`, "--sync-url", sqld.url], {
    cwd: dir,
    env: cleanEnv(),
    stdout: "pipe",
    stderr: "pipe",
  });
  const output = new Response(server.stderr as ReadableStream).text();
  let up = false;
  for (let i = 0; i < 200 && !up && server.exitCode === null; i++) {
    up = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (!up) await Bun.sleep(50);
  }
  if (!up) {
    server.kill();
    throw new Error(`bin/svc did not start as a replica:\n${await output}`);
  }
  const reg = await call(url, "register_agent", { handle: "replica-bin", display_name: "Replica" });
  expect(reg.status).toBe(200);
  // A read right after the write: the replica synced first (read-your-writes) in its sync thread.
  const me = await call(url, "get_me", {}, reg.body.data.api_key);
  expect(me.status).toBe(200);
  expect(me.body.data.agent.handle).toBe("replica-bin");
  expect((await call(url, "list_groups", {}, reg.body.data.api_key)).status).toBe(200);
  expect(await (await fetch(`${url}/readyz`)).json()).toMatchObject({ ok: true, ready: true });

  // The primary stops: the replica still answers reads, and says it is ready but degraded (a load balancer keeps it).
  await sqld.stop();
  const ready = await fetch(`${url}/readyz`);
  expect(ready.status).toBe(200);
  expect(((await ready.json()) as any).degraded).toContain("the primary does not answer");
  expect((await call(url, "list_groups", {}, reg.body.data.api_key)).status).toBe(200);
}, 60_000);
