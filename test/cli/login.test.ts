// svc login without a key (the join flow, a human confirming on the page while it polls), svc logout, svc status.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";
import { PageClient, signInWithCode } from "../web/page-client.ts";
import { LOGIN_PROMPT, SVC, cleanEnv, ensureBuilt, freshConfigHome, svc, watchOutput } from "./bin.ts";

// Each login waits at least one poll interval (5 s) for the human.
setDefaultTimeout(60_000);

let s: TestServer;
let alice: Agent;
beforeAll(async () => {
  await ensureBuilt();
  s = await startTestServer();
  alice = await s.register("login-alice");
}, 120_000);
afterAll(() => s.stop());

/**
 * Starts `svc login` and answers once it has printed the page and the code to check, as a person reads them
 * off the terminal; `done` is its exit with everything it printed.
 */
async function startLogin(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([SVC, "login", "--url", s.url, ...args], { env: { ...cleanEnv(), ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const stdout = new Response(proc.stdout).text();
  const prompt = await watchOutput(proc.stderr, LOGIN_PROMPT);
  const done = (async () => ({ code: await proc.exited, stdout: await stdout, stderr: await prompt.all }))();
  return { enter_url: prompt.match[1]!, user_code: prompt.match[2]!, printed: prompt.match.input, done };
}

/**
 * A browser opener (xdg-open) that writes the page it is asked to open into a file, first on PATH, with a display:
 * `env` for svc, and `opened()`, the page it was given or null.
 */
function fakeBrowser() {
  const dir = mkdtempSync(join(tmpdir(), "svc-browser-"));
  const out = join(dir, "opened");
  writeFileSync(join(dir, "xdg-open"), `#!/bin/sh\nprintf '%s' "$1" > '${out}'\n`);
  chmodSync(join(dir, "xdg-open"), 0o755);
  return {
    env: { PATH: `${dir}:${process.env.PATH}`, DISPLAY: ":0" },
    opened: () => (existsSync(out) ? readFileSync(out, "utf8") : null),
  };
}

/** The human on the join page: enters the code the CLI showed, then signs in to `handle` with a code from its inbox. */
async function humanSignsIn(join: { enter_url: string; user_code: string }, agent: Agent, handle: string) {
  const b = new PageClient(s.url);
  expect(join.enter_url).toStartWith(`${s.url}/join?user_code=`);
  await b.get(join.enter_url.slice(s.url.length));
  const entered = await b.follow(await b.post("/join", { user_code: join.user_code }));
  expect(entered.status).toBe(200);
  const signedIn = await signInWithCode(s, b, "join", handle, agent.key);
  expect(signedIn.html).toContain(`Connect to @${handle}`);
  return b;
}

describe("svc login without a key", () => {
  test("shows the page and the code, polls while the human confirms there, stores the new key (mode 600) and says who", async () => {
    const home = freshConfigHome();
    const browser = fakeBrowser();
    const login = await startLogin(["--name", "Test laptop"], { XDG_CONFIG_HOME: home, ...browser.env });
    expect(login.printed).toContain("Opened the page in your browser.");
    const b = await humanSignsIn(login, alice, "login-alice");
    const approved = await b.follow(await b.post("/join/approve", {}));
    expect(approved.html).toContain("is now connected to <strong>@login-alice</strong>");
    const r = await login.done;
    expect(browser.opened()).toBe(login.enter_url);
    expect({ code: r.code, stdout: r.stdout }).toEqual({
      code: 0,
      stdout: `Logged in to ${s.url} as @login-alice; saved to ${join(home, "svc", "config.json")}\n`,
    });
    const file = join(home, "svc", "config.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, "utf8"));
    expect(stored.url).toBe(s.url);
    expect(stored.api_key).toStartWith("svc_");
    // The key is a client of its own, under the name given, and works for svc call without flags.
    const clients = (await s.ok("list_clients", {}, alice.key)).clients;
    expect(clients.map((c: any) => c.name)).toContain("Test laptop");
    const me = await svc(["call", "get_me"], { env: { XDG_CONFIG_HOME: home } });
    expect(me.json().agent.handle).toBe("login-alice");
    const status = await svc(["status", "--json"], { env: { XDG_CONFIG_HOME: home } });
    expect(status.code).toBe(0);
    expect(status.json()).toMatchObject({
      url: s.url,
      reachable: true,
      key_from: "config file",
      agent: { handle: "login-alice" },
      client: { name: "Test laptop", kind: "api_key" },
      problem: null,
    });
  });

  test("without a display it opens no browser and still waits; a refusal on the page exits 3 and stores nothing", async () => {
    const home = freshConfigHome();
    const browser = fakeBrowser();
    const login = await startLogin([], { XDG_CONFIG_HOME: home, ...browser.env, DISPLAY: "", WAYLAND_DISPLAY: "" });
    expect(login.printed).toContain("Open the page in a browser");
    const b = new PageClient(s.url);
    await b.get(login.enter_url.slice(s.url.length));
    await b.follow(await b.post("/join", { user_code: login.user_code }));
    const denied = await b.follow(await b.post("/join/deny", {}));
    expect(denied.html).toContain("You refused");
    const r = await login.done;
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("svc: the connection was refused on the page.");
    expect(browser.opened()).toBeNull();
    expect(existsSync(join(home, "svc", "config.json"))).toBe(false);
  });
});

test("svc login polls at the server's interval, slows down by 5 s after RATE_LIMITED; --no-browser opens none", async () => {
  // A server that asks for polls every second, then answers the first poll with RATE_LIMITED (slow down).
  const polls: number[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req): Promise<Response> {
      const { origin, pathname: path } = new URL(req.url);
      const ok = (data: unknown) => Response.json({ ok: true, data });
      if (path === "/v1/tools/join_network") {
        return ok({
          enter_url: `${origin}/join?user_code=BCDF-GHJK`,
          user_code: "BCDF-GHJK",
          poll_token: "p",
          expires_at: "2999-01-01T00:00:00Z",
          interval_seconds: 1,
        });
      }
      if (path === "/v1/tools/finish_join") {
        polls.push(performance.now());
        if (polls.length === 1) return Response.json({ ok: false, error: { code: "RATE_LIMITED", message: "slow down" }, retry_after: 1 }, { status: 429 });
        return ok({ status: "connected", api_key: "svc_from-the-join", agent: { handle: "slow" } });
      }
      if (path === "/v1" && req.headers.get("authorization") === "Bearer svc_from-the-join") return ok({ agent: { handle: "slow" } });
      return Response.json({ ok: false, error: { code: "NOT_FOUND", message: path } }, { status: 404 });
    },
  });
  try {
    const home = freshConfigHome();
    const browser = fakeBrowser();
    const r = await svc(["login", "--no-browser", "--url", server.url.href], { env: { XDG_CONFIG_HOME: home, ...browser.env } });
    expect(r.stdout).toContain("as @slow");
    expect(r.code).toBe(0);
    expect(polls).toHaveLength(2);
    expect(browser.opened()).toBeNull();
    // 1 s, the server's interval, plus the 5 s a slow down adds.
    expect(polls[1]! - polls[0]!).toBeGreaterThanOrEqual(6000);
    expect(JSON.parse(readFileSync(join(home, "svc", "config.json"), "utf8")).api_key).toBe("svc_from-the-join");
  } finally {
    server.stop(true);
  }
});

describe("svc logout and svc status", () => {
  test("status says the server, who and the key's client; logout forgets the key but keeps the URL", async () => {
    const home = freshConfigHome();
    const env = { XDG_CONFIG_HOME: home };
    expect((await svc(["login", "--key", alice.key, "--url", s.url], { env })).code).toBe(0);
    const status = await svc(["status", "--json-out"], { env });
    expect(status.json()).toMatchObject({
      url: s.url,
      reachable: true,
      agent: { handle: "login-alice" },
      client: { name: "Agent that registered the handle" },
    });
    const out = await svc(["logout"], { env });
    expect(out.code).toBe(0);
    expect(out.stdout).toContain(`Logged out of ${s.url}`);
    expect(out.stdout).toContain(`${s.url}/account`);
    expect(JSON.parse(readFileSync(join(home, "svc", "config.json"), "utf8"))).toEqual({ url: s.url });
    // Not revoked: the key keeps working until its client is disconnected.
    expect((await s.ok("get_me", {}, alice.key)).agent.handle).toBe("login-alice");
    const again = await svc(["logout"], { env });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("not logged in");
    // Still pointed at the stored URL, which answers, but without a key.
    const after = await svc(["status"], { env });
    expect(after.code).toBe(3);
    expect(after.json()).toMatchObject({ url: s.url, reachable: true, agent: null, key_from: null });
    expect(after.json().problem).toContain(`svc login --url ${s.url}`);
    // Logging in again goes to the URL kept.
    const back = await svc(["login", "--key", alice.key], { env });
    expect(back.stdout).toContain(`Logged in to ${s.url} as @login-alice`);
  });

  test("status of a server that does not answer exits 7; a refused key exits 3", async () => {
    const down = await svc(["status", "--url", "http://127.0.0.1:9", "--key", alice.key]);
    expect(down.code).toBe(7);
    expect(down.json()).toMatchObject({ reachable: false, agent: null });
    const refused = await svc(["status", "--url", s.url, "--key", "svc_not-a-key"]);
    expect(refused.code).toBe(3);
    expect(refused.json()).toMatchObject({ reachable: true, agent: null, key_from: "flag or SVC_API_KEY" });
  });
});
