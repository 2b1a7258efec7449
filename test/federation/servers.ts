// Several svc servers on loopback ports, federating with each other (allowlist mode), as child processes.
import { Database } from "bun:sqlite";
import { afterAll, beforeAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, spawnServer, type ServerProcess } from "../hardening/spawn-server.ts";

export interface FedServer {
  host: string;
  url: string;
  db: string;
  proc: ServerProcess;
  /** A tool call as an agent (its API key); throws on anything but 200. */
  ok(tool: string, args: Record<string, unknown>, key?: string): Promise<any>;
  call(tool: string, args: Record<string, unknown>, key?: string): Promise<{ status: number; body: any }>;
  register(handle: string): Promise<{ handle: string; key: string; agent_id: string }>;
  /** Starts the server again on its port and database (after stop or kill9). */
  restart(): Promise<void>;
}

/** Flags of every federating test server; `timing` shortens the retry wait and the sender's lease. */
export const fedFlags = (host: string, peers: string[], mode = "allowlist") => [
  "--workers",
  "1",
  "--base-url",
  `http://${host}`,
  "--federation",
  mode,
  "--federation-peers",
  peers.join(","),
  "--federation-allow-loopback",
  "--federation-test-timing",
  "300",
  "--log-level",
  "warn",
];

/** n servers for a test file: started before its tests (handed to `take`), stopped after them. */
export function serversForFile(n: number, take: (servers: FedServer[]) => void): void {
  let close: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const started = await startServers(n);
    take(started.servers);
    close = started.close;
  }, 60_000);
  afterAll(() => close?.());
}

export async function startServers(
  n: number,
  extraPeers: string[] = [],
  opts: { mode?: string; flags?: string[] /** Flags of one server each, after `flags`. */; perServer?: string[][] } = {},
): Promise<{ servers: FedServer[]; dir: string; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "svc-fed-"));
  const ports = Array.from({ length: n }, () => freePort());
  const hosts = ports.map((p) => `127.0.0.1:${p}`);
  const servers = await Promise.all(
    ports.map(async (port, i) => {
      const db = join(dir, `s${i}.db`);
      const flags = [
        ...fedFlags(hosts[i]!, [...hosts.filter((_, j) => j !== i), ...extraPeers], opts.mode),
        ...(opts.flags ?? []),
        ...(opts.perServer?.[i] ?? []),
      ];
      const s: FedServer = {
        host: hosts[i]!,
        url: `http://${hosts[i]}`,
        db,
        proc: await spawnServer(db, flags, port),
        async call(tool, args, key) {
          const res = await fetch(`${s.url}/v1/tools/${tool}`, {
            method: "POST",
            headers: { "content-type": "application/json", "idempotency-key": crypto.randomUUID(), ...(key ? { authorization: `Bearer ${key}` } : {}) },
            body: JSON.stringify(args),
          });
          return { status: res.status, body: await res.json() };
        },
        async ok(tool, args, key) {
          const r = await s.call(tool, args, key);
          if (r.status !== 200) throw new Error(`${tool} on ${s.host} failed with ${r.status}: ${JSON.stringify(r.body)}`);
          return r.body.data;
        },
        async register(handle) {
          const d = await s.ok("register_agent", { handle, display_name: handle.toUpperCase() });
          return { handle, key: d.api_key, agent_id: d.agent.agent_id };
        },
        async restart() {
          s.proc = await spawnServer(db, flags, port);
        },
      };
      return s;
    }),
  );
  return {
    servers,
    dir,
    async close() {
      await Promise.all(servers.map((s) => s.proc.stop().catch(() => undefined)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `read` until `done` holds of its value (or fails after `ms`). */
export async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms; last value: ${JSON.stringify(v)?.slice(0, 500)}`);
    await Bun.sleep(50);
  }
}

/** Makes x (on X) and y (on Y) contacts by y's code; returns the alias each has of the other. */
export async function connect(X: FedServer, x: { key: string }, Y: FedServer, y: { key: string }, note?: string): Promise<{ yOnX: string; xOnY: string }> {
  const { code } = await Y.ok("get_contact_code", {}, y.key);
  await X.ok("add_contact", { code: `${code}@${Y.host}`, ...(note ? { note } : {}) }, x.key);
  const incoming = await until(
    () => Y.ok("list_contacts", { state: "incoming" }, y.key),
    (d) => d.contacts.length > 0,
  );
  const xOnY = incoming.contacts[0].agent.handle;
  await Y.ok("respond_contact_request", { handle: xOnY, action: "accept" }, y.key);
  const accepted = await until(
    () => X.ok("list_contacts", { state: "accepted" }, x.key),
    (d) => d.contacts.some((c: any) => c.agent.display_name.endsWith(`@${Y.host})`)),
  );
  return { yOnX: accepted.contacts.find((c: any) => c.agent.display_name.endsWith(`@${Y.host})`)).agent.handle, xOnY };
}

/**
 * Waits, if need be, until the current one-minute window of the servers' rate limits (fixed windows of real time)
 * has at least `ms` left, so a test that counts up to a limit never sees the window turn over halfway.
 */
export async function awayFromMinuteEdge(ms = 5_000): Promise<void> {
  while (60_000 - (Date.now() % 60_000) < ms) await Bun.sleep(60_000 - (Date.now() % 60_000) + 10);
}

/** A server's database file, read (or written, as a forger or an earlier release would) beside the running server. */
export function onFile<T>(S: FedServer, f: (db: Database) => T): T {
  const db = new Database(S.db);
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    return f(db);
  } finally {
    db.close();
  }
}
