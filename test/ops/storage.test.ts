// Storage faults met while running (a full disk, I/O errors, a read-only file) answered clearly: 503
// STORAGE_UNAVAILABLE, nothing half-written, reads kept, readiness and metrics telling the operator.
// A "full disk" without a special file system: SQLite's max_page_count caps the database at its current size.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { SqliteError } from "libsql";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { storageFault, toAppError } from "../../server/errors.ts";
import { key, startTestServer, type Agent, type TestServer } from "../harness.ts";
import { snapshot } from "../hardening/db-inspect.ts";
import { balancesOf, groupOf } from "../ledger/ledger-fixtures.ts";

const TOKEN = "metrics-token-storage";
const dir = mkdtempSync(join(tmpdir(), "svc-storage-"));
let s: TestServer;
let a: Agent;
let b: Agent;
let groupId: string;

beforeAll(async () => {
  // A local file in every test run: the fault is the file's, whatever database the suite otherwise uses.
  s = await startTestServer({ dbUrl: `file:${join(dir, "svc.db")}`, authToken: undefined, syncUrl: undefined, metricsToken: TOKEN, logLevel: "error" });
  a = await s.register("disk-a");
  b = await s.register("disk-b");
  groupId = (await groupOf(s, [a, b])).group_id;
});
afterAll(async () => {
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A pragma on the one connection that writes (max_page_count and query_only hold per connection). */
async function onWriter(pragma: string): Promise<void> {
  await s.server.db.raw.execute(`PRAGMA ${pragma}`);
}

/** Rows changed by statements that completed on the writer connection since it opened, rolled back or not. */

// Paid by a, split equally: each expense stored whole moves a's balance by +617 and b's by -617.
const expense = (description: string, idempotency_key: string) => ({ group_id: groupId, description, amount: "12.34", idempotency_key });

/** How many expenses the group holds, read from the balances; they must sum to zero. */
async function expensesInBalances(): Promise<number> {
  const by = await balancesOf(s, b.key, groupId);
  expect(by["disk-a"]! + by["disk-b"]!).toBe(0);
  expect(by["disk-a"]! % 617).toBe(0);
  return by["disk-a"]! / 617;
}

async function scrape(): Promise<string> {
  const res = await s.raw("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  return res.text();
}
const sample = (text: string, series: string) =>
  Number(
    text
      .split("\n")
      .find((l) => l.startsWith(`${series} `))
      ?.slice(series.length + 1) ?? NaN,
  );

/** The JSON log lines the server writes to stdout while fn runs. */
async function logsOf(fn: () => Promise<void>): Promise<any[]> {
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => (lines.push(String(chunk)), true)) as typeof process.stdout.write;
  try {
    await fn();
    // Log lines go out once per turn of the event loop (observability/logs.ts): the answer can arrive first.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.stdout.write = write;
  }
  return lines
    .flatMap((l) => l.split("\n"))
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l));
}

describe("a full disk", () => {
  test("a write answers 503 STORAGE_UNAVAILABLE and stores nothing; reads and balances stay; the same key succeeds once there is room", async () => {
    await s.ok("add_expense", expense("before the disk filled", key()), a.key);
    const before = await expensesInBalances();
    // Below the current size SQLite keeps the current size: the database may not grow by a single page.
    await onWriter("max_page_count = 1");

    // Writes that fit in the pages already there still succeed; the first one that needs a page is refused.
    let refused: { key: string; description: string; res: Awaited<ReturnType<TestServer["call"]>> } | undefined;
    let stored = 0;
    let logs: any[] = [];
    let untouched = "";
    for (let i = 0; i < 200 && !refused; i++) {
      const attempt = { key: key(), description: `dinner ${i} ${"x".repeat(120)}` };
      untouched = await snapshot(s.server.db.raw);
      logs = await logsOf(async () => {
        const res = await s.call("add_expense", expense(attempt.description, attempt.key), a.key);
        if (res.status === 200) stored++;
        else refused = { ...attempt, res };
      });
    }
    expect(refused).toBeDefined();
    const { res } = refused!;
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("30");
    expect(res.body.error).toMatchObject({ code: "STORAGE_UNAVAILABLE", retry_after: 30 });
    expect(res.body.error.message).toContain("cannot store writes right now");
    expect(res.body.error.suggested_action).toContain("same idempotency key");
    expect(JSON.stringify(res.body)).not.toContain("SQLITE");
    // The operator's log line names the SQLite code; the caller's answer does not.
    const line = logs.find((l) => l.msg === "call" && l.code === "STORAGE_UNAVAILABLE");
    expect(line).toMatchObject({ level: "error", tool: "add_expense", status: 503, sqlite_code: "SQLITE_FULL" });

    // Its batch failed (at the first statement that needed a page) and rolled back whole, so it left nothing in any
    // table. Reads keep working.
    expect(await snapshot(s.server.db.raw)).toBe(untouched);
    expect(await expensesInBalances()).toBe(before + stored);
    const newest = (await s.ok("list_expenses", { group_id: groupId, limit: 1 }, b.key)).expenses[0];
    expect(JSON.stringify(newest)).not.toContain(refused!.description);
    expect((await s.call("get_me", {}, b.key)).status).toBe(200);

    const notReady = await s.raw("/readyz");
    expect(notReady.status).toBe(503);
    expect(((await notReady.json()) as any).reason).toContain("SQLITE_FULL");
    const metrics = await scrape();
    expect(sample(metrics, 'svc_storage_faults_total{code="SQLITE_FULL"}')).toBe(1);
    expect(sample(metrics, 'svc_tool_calls_total{tool="add_expense",code="STORAGE_UNAVAILABLE"}')).toBe(1);
    // Reads do not make the server ready for writes again.
    expect((await s.raw("/readyz")).status).toBe(503);

    // Room again: the retry with the same key acts once, and a second retry is a replay of it.
    await onWriter("max_page_count = 1073741823");
    const retried = await s.call("add_expense", expense(refused!.description, refused!.key), a.key);
    expect(retried.status).toBe(200);
    expect(retried.headers.get("idempotent-replayed")).toBeNull();
    const again = await s.call("add_expense", expense(refused!.description, refused!.key), a.key);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.data.expense.expense_id).toBe(retried.body.data.expense.expense_id);
    expect(await expensesInBalances()).toBe(before + stored + 1);

    const ready = await s.raw("/readyz");
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as any).ready).toBe(true);
    expect(sample(await scrape(), 'svc_storage_faults_total{code="SQLITE_FULL"}')).toBe(1);
  });
});

describe("a read-only database", () => {
  test("a write answers 503 STORAGE_UNAVAILABLE, reads keep working; ready again once the heartbeat commits, and the write resumes", async () => {
    const before = await expensesInBalances();
    await onWriter("query_only = 1");
    const k = key();
    try {
      let res: Awaited<ReturnType<TestServer["call"]>> | undefined;
      const logs = await logsOf(async () => void (res = await s.call("add_expense", expense("while read-only", k), a.key)));
      expect(res!.status).toBe(503);
      expect(res!.body.error.code).toBe("STORAGE_UNAVAILABLE");
      expect(logs.find((l) => l.code === "STORAGE_UNAVAILABLE")).toMatchObject({ level: "error", sqlite_code: "SQLITE_READONLY" });
      expect(await expensesInBalances()).toBe(before);
      expect(((await (await s.raw("/readyz")).json()) as any).reason).toContain("SQLITE_READONLY");
      expect(sample(await scrape(), 'svc_storage_faults_total{code="SQLITE_READONLY"}')).toBe(1);
    } finally {
      await onWriter("query_only = 0");
    }
    // Nothing wrote since: still not ready. The instance's heartbeat (every 30 s in svc serve) is a write, so a
    // server that a load balancer stopped sending writes to becomes ready again by itself.
    expect((await s.raw("/readyz")).status).toBe(503);
    await s.server.jobs.runDue();
    expect((await s.raw("/readyz")).status).toBe(200);
    expect((await s.call("add_expense", expense("while read-only", k), a.key)).status).toBe(200);
    expect(await expensesInBalances()).toBe(before + 1);
    expect((await s.raw("/readyz")).status).toBe(200);
  });
});

test("any storage fault a driver reports is mapped, through drizzle's wrapping: full, every I/O error, read-only", () => {
  const wrapped = (code: string, raw: number) => new DrizzleQueryError("insert into expenses ...", [], new SqliteError("storage", code, raw));
  for (const [code, raw] of [
    ["SQLITE_FULL", 13],
    ["SQLITE_IOERR", 10],
    ["SQLITE_IOERR_WRITE", 778],
    ["SQLITE_IOERR_FSYNC", 1034],
    ["SQLITE_READONLY", 8],
    ["SQLITE_READONLY_DBMOVED", 1032],
  ] as const) {
    expect(storageFault(wrapped(code, raw))).toBe(code);
    expect(toAppError(wrapped(code, raw))).toMatchObject({ code: "STORAGE_UNAVAILABLE", status: 503, retryAfter: 30 });
  }
  // @libsql/client names the primary code and the extended one; the extended one is the more precise.
  expect(storageFault(Object.assign(new Error("SQLITE_IOERR: disk I/O error"), { code: "SQLITE_IOERR", extendedCode: "SQLITE_IOERR_SHORT_READ" }))).toBe(
    "SQLITE_IOERR_SHORT_READ",
  );
  // A busy database is STORAGE_UNAVAILABLE too, but not a storage fault (test/hardening/boundaries.test.ts).
  expect(storageFault(new SqliteError("busy", "SQLITE_BUSY", 5))).toBeNull();
  for (const other of [new SqliteError("constraint", "SQLITE_CONSTRAINT_UNIQUE", 2067), new Error("boom"), "text"]) {
    expect(toAppError(other).code).toBe("INTERNAL");
  }
});
