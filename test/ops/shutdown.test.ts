// svc serve as a real process: JSON logs on stdout, SIGTERM finishing a request in flight before exiting 0, and
// a stop (SIGTERM or SIGINT) that leaves svc.db complete on its own.
import { afterAll, expect, test } from "bun:test";
import { createClient } from "@libsql/client";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnServer } from "../hardening/spawn-server.ts";
import { startTestServer, walBytes } from "../harness.ts";

const ROOT = join(import.meta.dir, "../..");
const dir = mkdtempSync(join(tmpdir(), "svc-shutdown-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Lines of a stream, with a way to wait for the first line that matches. */
function lineReader(stream: ReadableStream<Uint8Array>) {
  const lines: string[] = [];
  const waiters: { match: (l: string) => boolean; resolve: (l: string) => void }[] = [];
  const done = (async () => {
    let buf = "";
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      buf += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        lines.push(line);
        for (const w of waiters.filter((w) => w.match(line))) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  })();
  const waitFor = (match: (l: string) => boolean) =>
    new Promise<string>((resolve) => {
      const seen = lines.find(match);
      if (seen !== undefined) resolve(seen);
      else waiters.push({ match, resolve });
    });
  return { lines, waitFor, done };
}

/** A raw HTTP/1.1 request whose body is sent in two parts, so it is in flight for as long as the test wants. */
async function slowRequest(port: number, path: string, body: string) {
  const cut = Math.floor(body.length / 2);
  let received = "";
  const { promise: closed, resolve } = Promise.withResolvers<void>();
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: { data: (_s, d) => void (received += d.toString()), close: () => resolve(), error: () => resolve() },
  });
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, cut)}`,
  );
  return {
    /** Resolves when the server closes the connection, with what it sent (nothing, if it never answered). */
    closed: closed.then(() => received),
    async finish() {
      socket.write(body.slice(cut));
      await closed;
      const [head, payload] = received.split("\r\n\r\n");
      return { statusLine: head!.split("\r\n")[0]!, body: JSON.parse(payload!) };
    },
  };
}

test("SIGTERM: stops accepting, finishes the request in flight, stops jobs, closes the database, exits 0; logs are JSON without secrets", async () => {
  const dbPath = join(dir, "svc.db");
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SVC_"))) as Record<string, string>;
  const proc = Bun.spawn(["bun", "run", "cli/main.ts", "serve", "--port", "0", "--db", `file:${dbPath}`, "--log-level", "info"], {
    cwd: ROOT,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = lineReader(proc.stdout);
  try {
    const listening = JSON.parse(await out.waitFor((l) => l.includes('"svc listening on')));
    expect(listening).toMatchObject({ level: "info", mode: "local", database: `file:${dbPath}`, metrics: false });
    const url: string = listening.url;
    const port = Number(new URL(url).port);
    const call = async (tool: string, args: object, key?: string) => {
      const res = await fetch(`${url}/v1/tools/${tool}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify(args),
      });
      return res.json() as Promise<any>;
    };

    const a = (await call("register_agent", { handle: "shut-a", display_name: "A" })).data;
    const b = (await call("register_agent", { handle: "shut-b", display_name: "B" })).data;
    const { code } = (await call("get_contact_code", {}, a.api_key)).data;
    const note = "a private note body that must not be logged";
    expect((await call("add_contact", { code, note, idempotency_key: "shut-add-1" }, b.api_key)).ok).toBe(true);

    const inFlight = await slowRequest(port, "/v1/tools/register_agent", JSON.stringify({ handle: "shut-late", display_name: "Late" }));
    // Once a later request on another connection is answered, the server has taken the slow one in.
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    proc.kill("SIGTERM");
    await out.waitFor((l) => l.includes('"shutting down"'));
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();

    const answer = await inFlight.finish();
    expect(answer.statusLine).toBe("HTTP/1.1 200 OK");
    expect(answer.body.data.agent.handle).toBe("shut-late");

    expect(await proc.exited).toBe(0);
    await out.done;
    const logs = out.lines.map((l) => JSON.parse(l));
    expect(logs.at(-1)).toMatchObject({ level: "info", msg: "stopped" });
    const calls = logs.filter((l) => l.msg === "call");
    expect(calls.map((c) => c.tool)).toEqual(["register_agent", "register_agent", "get_contact_code", "add_contact", "register_agent"]);
    for (const c of calls) {
      expect(Object.keys(c).sort()).toEqual(["agent_id", "client_address", "code", "duration_ms", "level", "msg", "request_id", "status", "time", "tool"]);
    }
    expect(calls[2]).toMatchObject({ agent_id: a.agent.agent_id, code: "OK", status: 200 });
    const everything = out.lines.join("\n");
    for (const secret of [a.api_key, b.api_key, answer.body.data.api_key, code, note]) expect(everything).not.toContain(secret);

    // The request finished during shutdown was committed, and the runner removed this instance's mark.
    const db = createClient({ url: `file:${dbPath}` });
    try {
      expect((await db.execute("SELECT handle FROM agents WHERE handle = 'shut-late'")).rows).toHaveLength(1);
      expect((await db.execute("SELECT count(*) AS n FROM instances")).rows[0]!.n).toBe(0);
    } finally {
      db.close();
    }
  } finally {
    if (proc.exitCode === null) proc.kill("SIGKILL");
  }
});

test("a request that never finishes does not hold shutdown past --shutdown-timeout: its connection is closed", async () => {
  const s = await startTestServer({ shutdownTimeoutMs: 200 });
  const stuck = await slowRequest(s.server.port, "/v1/tools/register_agent", JSON.stringify({ handle: "never-done", display_name: "N" }));
  expect((await s.raw("/healthz")).status).toBe(200);
  await s.stop();
  expect(await stuck.closed).toBe("");
});

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  test(`${signal}: the WAL is checkpointed into svc.db, so a copy of svc.db alone holds the last write`, async () => {
    const home = join(dir, `stop-${signal}`);
    mkdirSync(home);
    const dbPath = join(home, "svc.db");
    const p = await spawnServer(dbPath);
    const call = async (url: string, tool: string, args: object, key?: string) => {
      const res = await fetch(`${url}/v1/tools/${tool}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify(args),
      });
      const body = (await res.json()) as any;
      if (!body.ok) throw new Error(`${tool}: ${JSON.stringify(body.error)}`);
      return body.data;
    };
    let copy: Awaited<ReturnType<typeof spawnServer>> | undefined;
    try {
      const a = await call(p.url, "register_agent", { handle: `stop-${signal.toLowerCase()}`, display_name: "A" });
      const { group } = await call(p.url, "create_group", { name: "Stops", currency: "EUR", idempotency_key: `stop-${signal}-group` }, a.api_key);
      for (let i = 0; i < 60; i++) {
        await call(
          p.url,
          "add_expense",
          { group_id: group.group_id, description: `expense ${i}`, amount: "1.00", idempotency_key: `stop-${signal}-${i}` },
          a.api_key,
        );
      }
      const last = (
        await call(
          p.url,
          "add_expense",
          { group_id: group.group_id, description: "the last write", amount: "9.99", idempotency_key: `stop-${signal}-last` },
          a.api_key,
        )
      ).expense;
      // The writes sit in the WAL while the server runs: what the stop has to fold into svc.db.
      expect(walBytes(dbPath)).toBeGreaterThan(0);

      p.proc.kill(signal);
      expect(await p.proc.exited).toBe(0);
      expect(p.output()).toContain(`"signal":"${signal}"`);
      expect(p.output()).toContain('"msg":"stopped"');
      expect(walBytes(dbPath)).toBe(0);

      // An operator's habit: stop the service, copy svc.db (nothing else) elsewhere, start there.
      const elsewhere = join(dir, `copy-${signal}`);
      mkdirSync(elsewhere);
      copyFileSync(dbPath, join(elsewhere, "svc.db"));
      copy = await spawnServer(join(elsewhere, "svc.db"));
      const [newest] = (await call(copy.url, "list_expenses", { group_id: group.group_id, limit: 1 }, a.api_key)).expenses;
      expect(newest).toMatchObject({ expense_id: last.expense_id, amount_minor: 999 });
      expect(JSON.stringify(newest)).toContain("the last write");
      expect((await call(copy.url, "get_balances", { group_id: group.group_id }, a.api_key)).members).toHaveLength(1);
    } finally {
      if (p.proc.exitCode === null) await p.kill9();
      if (copy) await copy.stop();
    }
  });
}
