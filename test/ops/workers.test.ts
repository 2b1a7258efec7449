// svc serve --workers 2 as a real process tree: every call answered by whichever process the kernel hands the
// connection to, writes run by the first process and seen at once by the others, one rate limit for the server,
// a worker that dies started again, and no worker left serving once the first process is gone (even by kill -9).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnServer, type ServerProcess } from "../hardening/spawn-server.ts";
import { connectMcp, ERAS, handleFor } from "../mcp/clients.ts";
import { key, startTestServer } from "../harness.ts";
import { groupOf } from "../ledger/ledger-fixtures.ts";

const ROOT = join(import.meta.dir, "../..");
const dir = mkdtempSync(join(tmpdir(), "svc-workers-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A tool call on a connection of its own, so that calls land on every process of the server. */
async function call(url: string, tool: string, args: unknown, key?: string): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(`${url}/v1/tools/${tool}`, {
    method: "POST",
    keepalive: false,
    headers: { "content-type": "application/json", connection: "close", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(args),
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

/** What an answer's RateLimit field says (draft-ietf-httpapi-ratelimit-headers): calls left, and seconds to the window's end. */
function rateOf(headers: Headers): { r: number; t: number } {
  const m = /;r=(\d+);t=(\d+)$/.exec(headers.get("ratelimit") ?? "");
  if (!m) throw new Error(`no RateLimit field: ${headers.get("ratelimit")}`);
  return { r: Number(m[1]), t: Number(m[2]) };
}

async function ok(url: string, tool: string, args: unknown, key?: string): Promise<any> {
  const r = await call(url, tool, args, key);
  if (r.status !== 200) throw new Error(`${tool}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data;
}

/** The processes the server started, by pid. */
function workersOf(pid: number): number[] {
  const out = Bun.spawnSync(["pgrep", "-P", String(pid)])
    .stdout.toString()
    .trim();
  return out ? out.split("\n").map(Number) : [];
}

/** Polls probe until it answers (not undefined); `what` may say what was seen last, for the error. */
async function until<T>(what: string | (() => string), probe: () => T | undefined | Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const v = await probe();
    if (v !== undefined) return v;
    await Bun.sleep(50);
  }
  throw new Error(`timed out waiting for ${typeof what === "string" ? what : what()}`);
}

const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/State:\s+Z/.test(Bun.spawnSync(["cat", `/proc/${pid}/status`]).stdout.toString());

describe("svc serve --workers 2", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await spawnServer(join(dir, "svc.db"), ["--workers", "2", "--rate-limit", "30", "--metrics-token", "scrape-token"]);
    // The first process answers before its worker is up; it says it listens once both are.
    await until("the listening line", () => (server.output().includes("svc listening") ? true : undefined));
  });
  afterAll(() => server.stop().catch(() => undefined));

  test("writes through any process are seen at once through any other; an inbox poll with items moves the cursor once", async () => {
    expect(workersOf(server.pid)).toHaveLength(1);
    const agents = [];
    for (let i = 0; i < 8; i++)
      agents.push({ handle: `worker-agent-${i}`, ...(await ok(server.url, "register_agent", { handle: `worker-agent-${i}`, display_name: `W${i}` })) });
    // Every key works on every connection, right after the write that made it.
    for (const a of agents) expect((await ok(server.url, "get_me", {}, a.api_key)).agent.handle).toBe(a.handle);
    const [reader, ...senders] = agents;
    for (const [i, s] of senders.entries()) {
      await ok(server.url, "add_contact", { handle: reader!.handle, note: `hi ${i}`, idempotency_key: `worker-key-${i}` }, s.api_key);
      // A retry on another connection is the same call, answered again, not made twice.
      await ok(server.url, "add_contact", { handle: reader!.handle, note: `hi ${i}`, idempotency_key: `worker-key-${i}` }, s.api_key);
    }
    const first = await ok(server.url, "get_inbox", {}, reader!.api_key);
    expect(first.items.filter((it: any) => it.type === "contact.request")).toHaveLength(senders.length);
    for (let i = 0; i < 4; i++) expect((await ok(server.url, "get_inbox", {}, reader!.api_key)).items).toEqual([]);
  });

  test.each(ERAS)("MCP (%s): every request on a connection of its own, writes and reads through any process", async (era) => {
    const me = await ok(server.url, "register_agent", { handle: handleFor(era, "worker-mcp"), display_name: "Before" });
    const mcp = await connectMcp(era, `${server.url}/mcp`, { authorization: `Bearer ${me.api_key}`, connection: "close" });
    try {
      for (let i = 0; i < 6; i++) {
        const wrote = await mcp.callTool({ name: "update_me", arguments: { display_name: `Name ${i}`, idempotency_key: crypto.randomUUID() } });
        expect(wrote.isError ? JSON.stringify(wrote.content) : "ok").toBe("ok");
        const read = await mcp.callTool({ name: "get_me", arguments: {} });
        expect(read.structuredContent.agent.display_name).toBe(`Name ${i}`);
      }
    } finally {
      await mcp.close();
    }
  });

  test("bad arguments get the error envelope from every process, even nested too deeply to hand over", async () => {
    const me = await ok(server.url, "register_agent", { handle: "worker-fuzzed", display_name: "F" });
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const codes = new Set<string>();
    // Within the 30 calls a minute this server allows a key.
    for (let i = 0; i < 9; i++) {
      for (const body of [deep, `{"display_name": ${deep}}`, '{"display_name": 42}']) {
        const res = await fetch(`${server.url}/v1/tools/update_me`, {
          method: "POST",
          keepalive: false,
          headers: { "content-type": "application/json", connection: "close", authorization: `Bearer ${me.api_key}` },
          body,
        });
        codes.add(`${res.status} ${((await res.json()) as any).error?.code}`);
      }
    }
    expect([...codes]).toEqual(["400 VALIDATION_ERROR"]);
  });

  test("arguments cross to the first process as parsed: a non-finite number is refused by every process, and changes nothing", async () => {
    const me = await ok(server.url, "register_agent", { handle: "worker-finite", display_name: "F", description: "kept" });
    const answers = new Set<string>();
    // On connections of their own: the kernel spreads them over both processes (all 12 on one: 1 in 4096).
    for (let i = 0; i < 12; i++) {
      const res = await fetch(`${server.url}/v1/tools/update_me`, {
        method: "POST",
        keepalive: false,
        headers: { "content-type": "application/json", connection: "close", authorization: `Bearer ${me.api_key}` },
        // JSON over IPC would turn Infinity into null, which clears a description.
        body: `{"description": 1e999, "idempotency_key": "worker-finite-${i}"}`,
      });
      const body: any = await res.json();
      answers.add(`${res.status} ${body.error?.code} ${body.error?.details?.issues?.[0]?.path}`);
    }
    expect([...answers]).toEqual(["400 VALIDATION_ERROR description"]);
    expect((await ok(server.url, "get_me", {}, me.api_key)).agent.description).toBe("kept");
  });

  test("one rate limit for the whole server, not one per process", async () => {
    // Fixed one-minute windows, of which the server says the seconds left (RateLimit t=; a refused call says it too,
    // and counts for nothing). With less than the run needs (it takes a few seconds), it waits for the next window.
    const clock = await ok(server.url, "register_agent", { handle: "worker-clock", display_name: "C" });
    const left = async () => rateOf((await call(server.url, "get_me", {}, clock.api_key)).headers).t;
    const first = await left();
    if (first < 15) await until("the next rate-limit window", async () => ((await left()) > first ? true : undefined), 45_000);
    const me = await ok(server.url, "register_agent", { handle: "worker-limited", display_name: "L" });
    const answers: { status: number; r: number; t: number }[] = [];
    const take = async () => {
      const res = await call(server.url, "get_me", {}, me.api_key);
      answers.push({ status: res.status, ...rateOf(res.headers) });
      return res.status;
    };
    // Below the limit every process admits, whatever it has heard of the others' calls yet.
    for (let i = 0; i < 30; i++) expect(await take()).toBe(200);
    // The processes tell each other what they counted (every 20 ms); once they have, every one refuses: ten refusals
    // in a row, each on a connection of its own (all ten on one process: 1 in 512).
    let inARow = 0;
    await until(
      () => `every process to refuse (answers: ${JSON.stringify(answers.map((a) => a.status))})`,
      async () => {
        inARow = (await take()) === 429 ? inARow + 1 : 0;
        return inARow === 10 ? true : undefined;
      },
    );
    // A process may let a call through in the moment before it hears of the others' (the most a limit is overrun by,
    // server/cluster.ts); a limit per process would have let each process admit 30 of its own before refusing.
    expect(answers.filter((a) => a.status === 200).length).toBeLessThan(60);
    // All in one window: the seconds left never go up.
    expect(answers.every((a, i) => i === 0 || a.t <= answers[i - 1]!.t)).toBe(true);
  }, 60_000);

  test("/metrics counts the calls of every process, whichever process answers the scrape", async () => {
    const me = await ok(server.url, "register_agent", { handle: "worker-metered", display_name: "M" });
    for (let i = 0; i < 12; i++) await ok(server.url, "list_contacts", {}, me.api_key);
    // Workers send their counts once a second: until then a scrape may miss some, never count one twice.
    let counts: string[] = [];
    await until(
      () => `every scrape to count 12 (last: ${counts})`,
      async () => {
        counts = [];
        for (let i = 0; i < 8; i++) {
          const res = await fetch(`${server.url}/metrics`, { keepalive: false, headers: { authorization: "Bearer scrape-token", connection: "close" } });
          counts.push(/svc_tool_calls_total\{tool="list_contacts",code="OK"\} (\d+)/.exec(await res.text())?.[1] ?? "none");
        }
        expect(counts.filter((c) => Number(c) > 12)).toEqual([]);
        return counts.every((c) => c === "12") ? true : undefined;
      },
    );
  });

  test("a worker that dies is started again, and the server answers throughout", async () => {
    const [worker] = workersOf(server.pid);
    process.kill(worker!, "SIGKILL");
    const again = await until("a new worker", () => workersOf(server.pid).find((p) => p !== worker));
    expect(again).not.toBe(worker);
    for (let i = 0; i < 10; i++) expect((await call(server.url, "get_me", {})).status).toBe(401);
    // The log line is read from the server's output as it comes.
    await until("the log line", () => (server.output().includes("worker exited; starting it again") ? true : undefined));
  });
});

test("a storage fault met by the first process is the server's: /readyz is 503 whichever process answers, until a write commits", async () => {
  // The first process here, in this test, so that its writer can be given a full disk (max_page_count, as in storage.test.ts).
  const s = await startTestServer({
    dbUrl: `file:${join(dir, "fault.db")}`,
    authToken: undefined,
    syncUrl: undefined,
    workers: { count: 2, command: [process.execPath, join(ROOT, "cli/main.ts"), "serve", "--worker"] },
  });
  try {
    const [a, b] = [await s.register("fault-a"), await s.register("fault-b")];
    const { group_id } = await groupOf(s, [a!, b!]);
    const expense = (i: number) => ({ group_id, description: `dinner ${i} ${"x".repeat(120)}`, amount: "12.34", idempotency_key: key() });
    const readiness = async () => {
      const codes = new Set<number>();
      for (let i = 0; i < 20; i++) codes.add((await fetch(`${s.url}/readyz`, { keepalive: false, headers: { connection: "close" } })).status);
      return [...codes].sort().join(",");
    };
    expect(await readiness()).toBe("200");

    await s.server.db.raw.execute("PRAGMA max_page_count = 1");
    let refused = 0;
    for (let i = 0; i < 200 && !refused; i++) if ((await call(s.url, "add_expense", expense(i), a!.key)).status === 503) refused++;
    expect(refused).toBe(1);
    // The others hear of it at once (a message between the processes): then no process says ready.
    let seen = "";
    await until(
      () => `every process to say 503 (last: ${seen})`,
      async () => ((seen = await readiness()) === "503" ? true : undefined),
    );

    await s.server.db.raw.execute("PRAGMA max_page_count = 1073741823");
    await ok(s.url, "add_expense", expense(-1), a!.key);
    await until(
      () => `every process to say 200 (last: ${seen})`,
      async () => ((seen = await readiness()) === "200" ? true : undefined),
    );
  } finally {
    await s.stop();
  }
});

test("kill -9 of the first process: its workers end too, and nothing serves the port", async () => {
  const server = await spawnServer(join(dir, "kill.db"), ["--workers", "3"]);
  // The first process answers /healthz before it has started its workers.
  const workers = await until("two workers", () => (workersOf(server.pid).length === 2 ? workersOf(server.pid) : undefined));
  await server.kill9();
  await until("the workers to end", () => (workers.some(alive) ? undefined : true));
  expect(
    await fetch(`${server.url}/healthz`).then(
      () => "answered",
      () => "refused",
    ),
  ).toBe("refused");
});

test("SIGTERM stops every process and exits 0, even while the workers start", async () => {
  const server = await spawnServer(join(dir, "term.db"), ["--workers", "2"]);
  // The first process answers before its workers are up: a signal now stops the server once they are.
  const workers = await until("the worker", () => (workersOf(server.pid).length === 1 ? workersOf(server.pid) : undefined));
  await server.stop();
  expect(server.proc.exitCode).toBe(0);
  expect(workers.some(alive)).toBe(false);
});

test("--workers takes auto or a whole number of at least 1, from the flag or SVC_WORKERS", () => {
  for (const [args, env] of [
    [["--workers", "0"], {}],
    [[], { SVC_WORKERS: "many" }],
  ] as const) {
    const r = Bun.spawnSync(["bun", "run", "cli/main.ts", "serve", ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr.toString()).toContain("expected auto or a whole number of at least 1");
  }
});

test("--workers above 1 on a remote database or an embedded replica is refused with one clear line", () => {
  for (const db of [
    ["--db", "libsql://db.example.org"],
    ["--db", `file:${join(dir, "r.db")}`, "--sync-url", "libsql://db.example.org"],
  ]) {
    const r = Bun.spawnSync(["bun", "run", "cli/main.ts", "serve", "--workers", "2", ...db], { cwd: ROOT });
    expect(r.exitCode).toBe(1);
    expect(r.stderr.toString().trim()).toBe(
      "svc: --workers above 1 needs a local database file (--db file:PATH): a remote database, an embedded replica or :memory: is served by one process.",
    );
  }
});
