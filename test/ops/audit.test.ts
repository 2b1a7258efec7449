// The audit trail of a real `svc serve` (its stdout at --log-level info, behind a trusted proxy): one line per
// sign-up, sign-in and failed one, password change, key made and client disconnected, each with the client's address
// as the proxy gave it, and never a secret.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBuilt, svc } from "../cli/bin.ts";
import { PageClient } from "../web/page-client.ts";
import { spawnServer, type ServerProcess } from "../hardening/spawn-server.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-audit-"));
let server: ServerProcess;
beforeAll(async () => {
  server = await spawnServer(join(dir, "svc.db"), ["--log-level", "info", "--trusted-proxy", "127.0.0.1/32"]);
}, 60_000);
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const FROM = "203.0.113.7";
const audits = () =>
  server
    .output()
    .split("\n")
    .filter((l) => l.includes('"msg":"audit"'))
    .map((l) => JSON.parse(l));
/** Waits until the server wrote the audit lines asked for (lines are written once per turn of its event loop). */
async function auditsUntil(count: number) {
  const deadline = Date.now() + 10_000;
  while (audits().length < count && Date.now() < deadline) await Bun.sleep(10);
  return audits();
}

async function call(tool: string, body: Record<string, unknown>, key?: string) {
  const res = await fetch(`${server.url}/v1/tools/${tool}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Forwarded-For": FROM, ...(key ? { Authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
  return (await res.json()) as any;
}

test("sign-ups, sign-ins, failures, a password change, keys made and a client disconnected are audited with the client's address", async () => {
  const agent = await call("register_agent", { handle: "audit-api", display_name: "A" });
  const rotated = await call("rotate_api_key", { idempotency_key: crypto.randomUUID() }, agent.data.api_key);
  const b = new PageClient(server.url, { "X-Forwarded-For": FROM });
  await b.get("/signup");
  expect((await b.post("/signup", { handle: "audit-web", display_name: "W", method: "password", password: "first correct horse" })).status).toBe(303);
  await b.post("/signout", {});
  await b.get("/signin");
  expect((await b.post("/signin/password", { handle: "audit-web", password: "not the password" })).status).toBe(401);
  expect((await b.post("/signin/password", { handle: "audit-web", password: "first correct horse" })).status).toBe(303);
  await b.get("/account");
  // Signed in with the password a moment ago: a fresh sign-in, so the current password is not asked again.
  const changed = await b.post("/account/password", { password: "second correct horse" });
  expect(changed.status).toBe(200);
  // A key made on the page, then disconnected there (disconnect_client through the page's call).
  const made = await b.post("/account/keys", { name: "Script" });
  const key = /svc_[A-Za-z0-9_-]+/.exec(made.html)![0];
  const { clients } = (await call("list_clients", {}, key)).data;
  const scriptClient = clients.find((c: any) => c.name === "Script").client_id;
  await b.get("/account");
  expect((await b.post("/account/clients/disconnect", { client_id: scriptClient })).status).toBe(303);

  const lines = await auditsUntil(9);
  const seen = lines.map((l) => [l.event, l.method ?? null, l.handle ?? null]);
  expect(seen).toEqual([
    ["signup", "api", "audit-api"],
    ["key_created", "rotate", null],
    ["signup", "web", "audit-web"],
    ["signin", "signup", null],
    ["signin_failed", "password", "audit-web"],
    ["signin", "password", null],
    ["password_changed", "fresh_sign_in", null],
    ["key_created", "web", null],
    ["client_disconnected", null, null],
  ]);
  for (const l of lines) {
    expect(l.client_address).toBe(FROM);
    expect(l.level).toBe("info");
  }
  expect(lines[4].reason).toBe("wrong_password");
  expect(lines[7].client_id).toBe(scriptClient);
  expect(lines[8].client_id).toBe(scriptClient);
  // Every call line carries the address too; no secret is ever written.
  const out = server.output();
  expect(out).toContain(`"tool":"rotate_api_key"`);
  for (const l of out.split("\n").filter((x) => x.includes('"msg":"call"'))) expect(JSON.parse(l).client_address).toBe(FROM);
  for (const secret of [agent.data.api_key, rotated.data.api_key, key, "first correct horse", "second correct horse", "not the password"])
    expect(out).not.toContain(secret);
});

test("admin commands write their audit line on stderr: an account disabled and enabled, a client revoked", async () => {
  await ensureBuilt();
  const db = ["--db", `file:${join(dir, "svc.db")}`];
  await call("register_agent", { handle: "audit-admin", display_name: "Ad" });
  const lineOf = (stderr: string) => JSON.parse(stderr.split("\n").find((l) => l.includes('"msg":"audit"'))!);
  const disabled = await svc(["users", "disable", "audit-admin", ...db], { env: { USER: "ops" } });
  expect(disabled.code).toBe(0);
  expect(lineOf(disabled.stderr)).toMatchObject({ event: "account_disabled", method: "admin", handle: "audit-admin", client_address: "local:ops" });
  expect(lineOf((await svc(["users", "enable", "audit-admin", ...db], { env: { USER: "ops" } })).stderr)).toMatchObject({ event: "account_enabled" });
  const revoked = await svc(["keys", "revoke", "--handle", "audit-admin", ...db], { env: { USER: "ops" } });
  expect(lineOf(revoked.stderr)).toMatchObject({ event: "client_disconnected", handle: "audit-admin", client_address: "local:ops" });
});
