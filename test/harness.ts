// Test harness: a real server on a real temporary database file, called over HTTP as a client would.
import { createClient } from "@libsql/client";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../server/clock.ts";
import { DEFAULTS, type ServerConfig } from "../server/config.ts";
import { startServer, type RunningServer } from "../server/serve.ts";
import { findTool } from "../server/tools/catalogue.ts";

export interface CallResponse {
  status: number;
  headers: Headers;
  body: any;
}

export interface Agent {
  key: string;
  handle: string;
  agent_id: string;
}

export interface TestServer {
  url: string;
  clock: ManualClock;
  server: RunningServer;
  dir: string;
  /** The database it runs on: give it to startTestServer to start another instance on the same one. */
  database: TestDatabase;
  /** The command-line flags that open that database (--db, and --auth-token for a remote one). */
  dbFlags: string[];
  /** POST /v1/tools/{tool}; a success is checked against the tool's declared output schema, an error against the envelope. */
  call(tool: string, args?: unknown, key?: string | null, headers?: Record<string, string>): Promise<CallResponse>;
  /** Like call, but fails the test unless the answer is a success; returns `data`. */
  ok(tool: string, args?: unknown, key?: string | null): Promise<any>;
  raw(path: string, init?: RequestInit): Promise<Response>;
  register(handle: string, extra?: Record<string, unknown>): Promise<Agent>;
  /** Registers `a` and each of `others` as a's accepted contact; returns them in that order. */
  contacts<T extends string[]>(a: string, ...others: T): Promise<[Agent, ...{ [K in keyof T]: Agent }]>;
  stop(): Promise<void>;
}

/** Bytes in the write-ahead log beside a database file, 0 when there is none: after a clean close, svc.db alone is complete. */
export const walBytes = (dbPath: string) => (existsSync(`${dbPath}-wal`) ? statSync(`${dbPath}-wal`).size : 0);

let counter = 0;
export const key = () => `idem-${Date.now()}-${++counter}-${Math.random().toString(36).slice(2)}`;

export type TestDatabase = Pick<ServerConfig, "dbUrl" | "authToken" | "syncUrl">;

/** A test server on a fresh database, or on the one named by overrides.dbUrl as it is (a restart, a second instance). */
export async function startTestServer(overrides: Partial<ServerConfig> = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "svc-test-"));
  const clock = new ManualClock(Date.parse("2026-11-22T12:00:00.000Z"));
  const localUrl = `file:${join(dir, "svc.db")}`;
  const fresh = overrides.dbUrl === undefined;
  const database: TestDatabase =
    overrides.dbUrl === undefined
      ? await testDatabase(localUrl)
      : // A replica's file is one server's own: another on the same primary keeps a replica of its own.
        { dbUrl: overrides.syncUrl ? localUrl : overrides.dbUrl, authToken: overrides.authToken, syncUrl: overrides.syncUrl };
  const server = await startServer({
    host: "127.0.0.1",
    port: 0,
    baseUrl: "",
    inviteOnly: false,
    rateLimit: 100_000,
    publicRateLimit: 100_000,
    clock,
    agentRateLimit: 100_000,
    quotas: DEFAULTS.quotas,
    // SVC_TEST_LOG_LEVEL=error shows what a failing test's server logged (causes of INTERNAL, failed pages).
    ...(process.env.SVC_TEST_LOG_LEVEL ? { logLevel: process.env.SVC_TEST_LOG_LEVEL as ServerConfig["logLevel"] } : {}),
    ...overrides,
    ...database,
  });
  // Counted once started: a start that was refused emptied nothing (testDatabase leaves a primary in use alone).
  const onPrimary = fresh && (database.syncUrl !== undefined || database.dbUrl !== localUrl);
  if (onPrimary) serversOnPrimary++;
  const url = server.url;

  async function call(tool: string, args: unknown = {}, apiKey?: string | null, headers: Record<string, string> = {}): Promise<CallResponse> {
    const res = await fetch(`${url}/v1/tools/${tool}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}), ...headers },
      body: JSON.stringify(args),
    });
    const body: any = await res.json();
    checkEnvelope(tool, res, body);
    return { status: res.status, headers: res.headers, body };
  }

  async function ok(tool: string, args: unknown = {}, apiKey?: string | null) {
    const withKey =
      findTool(tool)?.idempotent && args && typeof args === "object" && !("idempotency_key" in args) ? { ...(args as object), idempotency_key: key() } : args;
    const r = await call(tool, withKey, apiKey);
    if (r.status !== 200) throw new Error(`${tool} failed with ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body.data;
  }

  async function register(handle: string, extra: Record<string, unknown> = {}): Promise<Agent> {
    const d = await ok("register_agent", { handle, display_name: handle.toUpperCase(), ...extra });
    return { key: d.api_key, handle, agent_id: d.agent.agent_id };
  }

  async function contacts<T extends string[]>(a: string, ...others: T): Promise<[Agent, ...{ [K in keyof T]: Agent }]> {
    const A = await register(a);
    const rest: Agent[] = [];
    for (const h of others) {
      const X = await register(h);
      await ok("add_contact", { handle: h }, A.key);
      await ok("respond_contact_request", { handle: a, action: "accept" }, X.key);
      rest.push(X);
    }
    return [A, ...rest] as [Agent, ...{ [K in keyof T]: Agent }];
  }

  return {
    url,
    clock,
    server,
    dir,
    database,
    // A replica's file belongs to the server; a command reaches the same data through the primary.
    dbFlags: ["--db", database.syncUrl ?? database.dbUrl!, ...(database.authToken ? ["--auth-token", database.authToken] : [])],
    call,
    ok,
    register,
    contacts,
    raw: (path, init) => fetch(`${url}${path}`, init),
    async stop() {
      await server.stop();
      if (onPrimary) serversOnPrimary--;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// Test servers running now on the environment's primary (SVC_TEST_DB_URL, SVC_TEST_SYNC_URL), each started fresh.
let serversOnPrimary = 0;

/**
 * The database a test server runs on: a fresh local file, unless the environment names a remote primary
 * (SVC_TEST_DB_URL) or a replica's primary (SVC_TEST_SYNC_URL, with a fresh local replica file), with
 * SVC_TEST_AUTH_TOKEN. A remote database is emptied first, so each server starts as on a new file: a server meant to
 * run beside another on the same database is started with that one's `database`. While a fresh server runs on the
 * primary, another fresh one gets a local file instead.
 */
export async function testDatabase(localUrl: string): Promise<TestDatabase> {
  const authToken = process.env.SVC_TEST_AUTH_TOKEN || undefined;
  const primary = process.env.SVC_TEST_SYNC_URL || process.env.SVC_TEST_DB_URL;
  // Emptying the primary under a server still running on it would fail that server's calls (no such table): a second
  // fresh server at once (a test's server beside its file's, or one whose start is meant to be refused) gets a file.
  if (!primary || serversOnPrimary > 0) return { dbUrl: localUrl };
  const client = createClient({ url: primary, authToken });
  try {
    const tables = await client.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
    await client.migrate(tables.rows.map((r) => `DROP TABLE "${String(r.name)}"`));
  } finally {
    client.close();
  }
  return process.env.SVC_TEST_SYNC_URL ? { dbUrl: localUrl, syncUrl: primary, authToken } : { dbUrl: primary, authToken };
}

/** Every answer is either the success envelope valid against the tool's output schema, or the error envelope. */
export function checkEnvelope(tool: string, res: Response, body: any): void {
  const requestId = res.headers.get("x-request-id");
  if (!requestId) throw new Error(`${tool}: no X-Request-Id header`);
  if (body.request_id !== requestId) throw new Error(`${tool}: request_id ${body.request_id} differs from header ${requestId}`);
  if (res.status === 200) {
    if (body.ok !== true) throw new Error(`${tool}: 200 without ok: true`);
    const t = findTool(tool);
    if (t) {
      const parsed = t.output.safeParse(body.data);
      if (!parsed.success) throw new Error(`${tool}: data outside the output schema: ${parsed.error.message}`);
    }
    return;
  }
  const e = body.error;
  if (body.ok !== false || !e || typeof e.code !== "string" || typeof e.message !== "string" || typeof e.suggested_action !== "string") {
    throw new Error(`${tool}: malformed error envelope ${JSON.stringify(body)}`);
  }
  if (/at .*\.(ts|js):\d+/.test(JSON.stringify(body))) throw new Error(`${tool}: stack trace leaked`);
}
