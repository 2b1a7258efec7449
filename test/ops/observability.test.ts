// Health, readiness, metrics and the structured log format.
import { VERSION } from "../../server/version.ts";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger, logCall } from "../../server/observability/logs.ts";
import { startTestServer, type TestServer } from "../harness.ts";

const TOKEN = "metrics-token-obs";
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ metricsToken: TOKEN, rateLimit: 3 });
});
afterAll(() => s.stop());

const scrape = async () => {
  const res = await s.raw("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  return res.text();
};
const json = (res: Response): Promise<any> => res.json();
const sample = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe("health and readiness", () => {
  test("/healthz answers while the process is up", async () => {
    const res = await s.raw("/healthz");
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ ok: true });
  });

  test("/readyz is ready when the database answers and every migration of this binary is applied", async () => {
    const res = await s.raw("/readyz");
    expect(res.status).toBe(200);
    expect((await json(res)).ready).toBe(true);
  });

  test("/readyz is 503 while a migration is pending, and ready again once it is applied", async () => {
    const c = s.server.db.raw;
    const last = (await c.execute("SELECT * FROM _migrations ORDER BY id DESC LIMIT 1")).rows[0]!;
    await c.execute({ sql: "DELETE FROM _migrations WHERE id = ?", args: [Number(last.id)] });
    try {
      const res = await s.raw("/readyz");
      expect(res.status).toBe(503);
      expect(await json(res)).toEqual({ ok: false, ready: false, reason: `migrations pending: ${last.name}` });
    } finally {
      await c.execute({
        sql: "INSERT INTO _migrations (id, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
        args: [Number(last.id), String(last.name), String(last.checksum), String(last.applied_at)],
      });
    }
    expect((await s.raw("/readyz")).status).toBe(200);
  });

  test("/readyz is 503 when the database holds a migration this binary does not know", async () => {
    const c = s.server.db.raw;
    await c.execute("INSERT INTO _migrations (id, name, checksum, applied_at) VALUES (9999, '9999_future', 'x', 'now')");
    try {
      const res = await s.raw("/readyz");
      expect(res.status).toBe(503);
      expect((await json(res)).reason).toContain("upgrade svc before opening this database");
    } finally {
      await c.execute("DELETE FROM _migrations WHERE id = 9999");
    }
  });

  test("/readyz is 503 when the database is gone, and while shutting down", async () => {
    const t = await startTestServer();
    try {
      t.server.ops.draining = true;
      expect(await json(await t.raw("/readyz"))).toEqual({ ok: false, ready: false, reason: "shutting down" });
      t.server.ops.draining = false;
      await t.server.db.close();
      const res = await t.raw("/readyz");
      expect(res.status).toBe(503);
      expect((await json(res)).reason).toBe("database not reachable");
    } finally {
      await t.stop();
    }
  });
});

describe("/metrics", () => {
  test("is off without a metrics token", async () => {
    const t = await startTestServer();
    try {
      const res = await t.raw("/metrics");
      expect(res.status).toBe(404);
      expect((await json(res)).error.code).toBe("NOT_FOUND");
    } finally {
      await t.stop();
    }
  });

  test("needs the token", async () => {
    for (const auth of [undefined, "Bearer wrong", `Bearer ${TOKEN}x`]) {
      const res = await s.raw("/metrics", { headers: auth ? { authorization: auth } : {} });
      expect(res.status).toBe(401);
      expect((await json(res)).error.code).toBe("UNAUTHENTICATED");
    }
  });

  test("counts calls by tool and code, latency, rate-limit rejections, inbox depth and database latency", async () => {
    const [a, b] = await s.contacts("obs-a", "obs-b");
    await s.ok("get_me", {}, a.key);
    await s.call("get_me", {}, "not-a-key");
    // rateLimit is 3 per minute per credential: b's fourth call in this minute is refused.
    for (let i = 0; i < 4; i++) await s.call("list_contacts", {}, b.key);
    const res = await s.raw("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text = await res.text();
    expect(sample(text, 'svc_tool_calls_total{tool="get_me",code="OK"}')).toBe(1);
    expect(sample(text, 'svc_tool_calls_total{tool="get_me",code="UNAUTHENTICATED"}')).toBe(1);
    expect(sample(text, 'svc_tool_calls_total{tool="register_agent",code="OK"}')).toBe(2);
    expect(sample(text, 'svc_rate_limited_total{tool="list_contacts"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'svc_tool_call_duration_seconds_count{tool="get_me"}')).toBe(2);
    expect(sample(text, 'svc_tool_call_duration_seconds_bucket{tool="get_me",le="+Inf"}')).toBe(2);
    // get_me reads; register_agent writes
    expect(sample(text, 'svc_db_transaction_seconds_count{kind="read"}')).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'svc_db_transaction_seconds_count{kind="write"}')).toBeGreaterThanOrEqual(2);
    expect(sample(text, "svc_db_ping_seconds")).toBeGreaterThanOrEqual(0);
    // Which release answers, and the answering process's own figures under Prometheus' usual names.
    expect(sample(text, `svc_build_info{version="${VERSION}"}`)).toBe(1);
    expect(sample(text, "process_resident_memory_bytes")).toBeGreaterThan(1_000_000);
    expect(sample(text, "process_cpu_seconds_total")).toBeGreaterThan(0);
    expect(sample(text, "process_start_time_seconds")).toBeLessThanOrEqual(Date.now() / 1000);
    expect(text).toContain("# TYPE svc_tool_call_duration_seconds histogram");
    // The contact request and its acceptance sit unread in the two inboxes.
    expect(sample(text, 'svc_inbox_items{state="unread"}')).toBeGreaterThanOrEqual(2);
    const before = sample(text, 'svc_inbox_items{state="unread"}')!;
    await s.ok("get_inbox", {}, a.key);
    expect(sample(await scrape(), 'svc_inbox_items{state="unread"}')).toBeLessThan(before);
  });
});

describe("structured logs", () => {
  test("one JSON object per line, filtered by level; silent logs nothing", () => {
    const lines: string[] = [];
    const log = createLogger("warn", (l) => lines.push(l));
    log.debug("d");
    log.info("i");
    log.warn("w", { job: "x" });
    log.error("e");
    expect(lines.map((l) => JSON.parse(l)).map((o) => [o.level, o.msg])).toEqual([
      ["warn", "w"],
      ["error", "e"],
    ]);
    expect(JSON.parse(lines[0]!)).toMatchObject({ job: "x", time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    const none: string[] = [];
    createLogger("silent", (l) => none.push(l)).error("e");
    expect(none).toEqual([]);
  });

  test("a call line has exactly request_id, tool, agent id, code, status and duration", () => {
    const lines: string[] = [];
    const log = createLogger("info", (l) => lines.push(l));
    logCall(log, { tool: "get_me", requestId: "r-1", agentId: "a-1", code: "OK", ms: 1.234 });
    logCall(log, { tool: "get_me", requestId: "r-2", agentId: null, code: "INTERNAL", ms: 2 });
    const [ok, failed] = lines.map((l) => JSON.parse(l));
    expect(Object.keys(ok).sort()).toEqual(["agent_id", "code", "duration_ms", "level", "msg", "request_id", "status", "time", "tool"]);
    expect(ok).toMatchObject({ level: "info", msg: "call", request_id: "r-1", tool: "get_me", agent_id: "a-1", code: "OK", status: 200, duration_ms: 1.2 });
    expect(failed).toMatchObject({ level: "error", status: 500, agent_id: null });
  });
});
