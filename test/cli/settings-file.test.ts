// One configuration for svc serve and the admin commands: the settings file (SVC_CONFIG), the base URL the server
// records, and admin commands that never create a database where none is.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../hardening/spawn-server.ts";
import { SVC, cleanEnv, ensureBuilt, freshConfigHome, svc } from "./bin.ts";

const root = mkdtempSync(join(tmpdir(), "svc-settings-"));
const dbFile = join(root, "state", "svc.db");
const settings = join(root, "svc.toml");
const elsewhere = mkdtempSync(join(tmpdir(), "svc-settings-cwd-"));
const port = freePort();
const url = `http://127.0.0.1:${port}`;
let server: ReturnType<typeof Bun.spawn> | undefined;

/** An admin command run from another directory, as an operator's shell would, with only SVC_CONFIG set. */
const admin = (args: string[], env: Record<string, string> = {}) => inDir(elsewhere, [SVC, ...args], { SVC_CONFIG: settings, ...env });

async function inDir(cwd: string, cmd: string[], env: Record<string, string>) {
  const proc = Bun.spawn(cmd, { cwd, env: { ...cleanEnv(), XDG_CONFIG_HOME: freshConfigHome(), ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

beforeAll(async () => {
  await ensureBuilt();
  writeFileSync(
    settings,
    [`db = "file:${dbFile}"`, `host = "127.0.0.1"`, `port = ${port}`, `base_url = "https://svc.example"`, `invite-only = true`, `log-level = "warn"`].join(
      "\n",
    ),
  );
  server = Bun.spawn([SVC, "serve"], { cwd: root, env: { ...cleanEnv(), SVC_CONFIG: settings }, stdout: "pipe", stderr: "pipe" });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && server.exitCode === null) {
    if (
      await fetch(`${url}/healthz`)
        .then((r) => r.ok)
        .catch(() => false)
    )
      return;
    await Bun.sleep(25);
  }
  throw new Error(`svc serve with SVC_CONFIG did not answer at ${url}: ${await new Response(server.stderr as ReadableStream).text()}`);
}, 60_000);
afterAll(async () => {
  server?.kill("SIGTERM");
  await server?.exited;
  rmSync(root, { recursive: true, force: true });
  rmSync(elsewhere, { recursive: true, force: true });
});

describe("the settings file", () => {
  test("svc serve takes its database, port and invite-only from it; an admin command from another directory finds the same database", async () => {
    const register = (code?: string) =>
      fetch(`${url}/v1/tools/register_agent`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ handle: "settings-a", display_name: "A", ...(code ? { platform_invite_code: code } : {}) }),
      });
    expect((await register()).status).toBe(403);
    const made = await admin(["invites", "create", "--json"]);
    expect(made.code).toBe(0);
    const res = await register(JSON.parse(made.stdout).code);
    expect(res.status).toBe(200);
    const list = await admin(["users", "list", "--json"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain("settings-a");
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  test("reset links use the base URL svc serve started with, even where the admin shell has no settings file", async () => {
    const r = await inDir(elsewhere, [SVC, "users", "reset-link", "settings-a", "--json", "--db", `file:${dbFile}`], {});
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).url).toStartWith("https://svc.example/account/reset/");
  });

  test("a flag wins over the environment, which wins over the file", async () => {
    const fromEnv = await admin(["users", "reset-link", "settings-a", "--json"], { SVC_BASE_URL: "https://env.example" });
    expect(JSON.parse(fromEnv.stdout).url).toStartWith("https://env.example/");
    const fromFlag = await admin(["users", "reset-link", "settings-a", "--json", "--base-url", "https://flag.example"], {
      SVC_BASE_URL: "https://env.example",
    });
    expect(JSON.parse(fromFlag.stdout).url).toStartWith("https://flag.example/");
  });

  test("a key no command knows is refused, naming the file", async () => {
    const bad = join(root, "bad.toml");
    writeFileSync(bad, 'dbb = "file:/tmp/x.db"\n');
    const r = await inDir(elsewhere, [SVC, "users", "list"], { SVC_CONFIG: bad });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${bad}: unknown setting "dbb"`);
  });
});

describe("admin commands and a database that is not there", () => {
  test("users list and invites create in an empty directory say where they looked and create nothing", async () => {
    const empty = mkdtempSync(join(tmpdir(), "svc-nodb-"));
    try {
      for (const args of [
        ["users", "list"],
        ["invites", "create"],
      ]) {
        const r = await inDir(empty, [SVC, ...args], {});
        expect(r.code).not.toBe(0);
        expect(r.stderr).toContain(`No database at ${join(empty, "data", "svc.db")}`);
        expect(r.stderr).toContain("SVC_CONFIG");
      }
      expect(readdirSync(empty)).toEqual([]);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  test("migrate --status on a mistyped path creates no directory; migrate itself creates the database", async () => {
    const empty = mkdtempSync(join(tmpdir(), "svc-nodb-"));
    try {
      const status = await inDir(empty, [SVC, "migrate", "--status", "--db", "file:./typo/svc.db"], {});
      expect(status.stdout).toContain("0 applied");
      expect(status.stderr).toContain(`there is no database at ${join(empty, "typo", "svc.db")} yet`);
      expect(existsSync(join(empty, "typo"))).toBe(false);
      const applied = await svc(["migrate", "--db", `file:${join(empty, "new", "svc.db")}`]);
      expect(applied.code).toBe(0);
      expect(existsSync(join(empty, "new", "svc.db"))).toBe(true);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
