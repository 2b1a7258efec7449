// Database modes: which one the options select, the errors an operator sees at start, and the local-file settings.
import { afterAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DbOpenError, openDb, selectMode, type DbMode, type DbOptions } from "../../db/client.ts";
import { startTestServer } from "../harness.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-modes-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string) => `file:${join(dir, name)}`;

/** A loopback port that nothing listens on. */
function closedPort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

async function openError(opts: DbOptions): Promise<string> {
  try {
    const db = await openDb(opts);
    await db.close();
  } catch (err) {
    expect(err).toBeInstanceOf(DbOpenError);
    return (err as Error).message;
  }
  throw new Error("openDb succeeded where it should have failed");
}

describe("mode selection", () => {
  test.each([
    [{ url: "file:./data/svc.db" }, "local"],
    [{ url: "file::memory:" }, "local"],
    [{ url: "libsql://svc-me.turso.io", authToken: "t" }, "remote"],
    [{ url: "https://svc-me.turso.io" }, "remote"],
    [{ url: "wss://db.example.org" }, "remote"],
    [{ url: "file:/var/lib/svc/replica.db", syncUrl: "libsql://svc-me.turso.io", authToken: "t" }, "replica"],
    [{ url: "file:/var/lib/svc/replica.db", syncUrl: "libsql://svc-me.turso.io", authToken: "t", syncIntervalSeconds: 5 }, "replica"],
  ] as [DbOptions, DbMode][])("%j is %s", (opts: DbOptions, mode: DbMode) => {
    expect(selectMode(opts)).toBe(mode);
  });

  test.each([
    [{ url: "postgres://db/svc" }, "Unsupported database URL postgres://db/svc"],
    [{ url: "./svc.db" }, "use file:PATH"],
    [{ url: "libsql://a.turso.io", syncUrl: "libsql://b.turso.io" }, "--sync-url makes an embedded replica, whose --db must be a local file"],
    [{ url: "file:x.db", syncIntervalSeconds: 5 }, "--sync-interval applies only to an embedded replica"],
    [{ url: "file:x.db", syncUrl: "file:y.db" }, "--sync-url must be the primary's libsql://"],
    [{ url: "file::memory:", syncUrl: "libsql://a.turso.io" }, "needs a file for --db, not :memory:"],
    [{ url: "file:x.db", syncUrl: "libsql://a.turso.io", syncIntervalSeconds: 0 }, "--sync-interval must be a positive duration"],
    [{ url: "file:x.db", authToken: "secret-token" }, "--auth-token applies only to a remote database"],
  ] as [DbOptions, string][])("%j is refused", (opts: DbOptions, message: string) => {
    expect(() => selectMode(opts)).toThrow(message);
  });

  test("a refused URL is described without its query string, which may carry credentials", () => {
    expect(() => selectMode({ url: "mysql://db/svc?authToken=secret-token" })).toThrow(/^(?!.*secret-token).*mysql:\/\/db\/svc/);
  });
});

describe("opening a remote primary fails at start with a clear message, never a hang", () => {
  test("libsql:// to a closed loopback port: connection refused", async () => {
    const port = closedPort();
    // A generous bound: the failure must come from the refused connection, not from the timeout.
    const message = await openError({ url: `libsql://127.0.0.1:${port}?tls=0`, connectTimeoutMs: 60_000 });
    expect(message).toBe(`Cannot reach the database at libsql://127.0.0.1:${port}: connection refused; check the URL and that the server is up.`);
  });

  test("a primary that refuses the token: bad token, and the token is not in the message", async () => {
    const primary = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("Unauthorized", { status: 401 }) });
    try {
      const message = await openError({ url: `http://127.0.0.1:${primary.port}`, authToken: "tok-very-secret", connectTimeoutMs: 60_000 });
      expect(message).toContain("refused the auth token; check --auth-token (SVC_AUTH_TOKEN)");
      expect(message).not.toContain("tok-very-secret");
    } finally {
      primary.stop(true);
    }
  });

  test("a primary that accepts the connection and never answers: bounded by the connect timeout", async () => {
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const message = await openError({ url: `http://127.0.0.1:${silent.port}`, connectTimeoutMs: 200 });
      expect(message).toBe(`The database at http://127.0.0.1:${silent.port} did not answer within 0.2s; check the URL, the network and that the server is up.`);
    } finally {
      silent.stop(true);
    }
  });

  test("embedded replica whose primary is down: refused before the (blocking) replica open", async () => {
    const port = closedPort();
    const message = await openError({ url: file("replica.db"), syncUrl: `http://127.0.0.1:${port}`, authToken: "t", connectTimeoutMs: 60_000 });
    expect(message).toContain(`Cannot reach the database at http://127.0.0.1:${port}: connection refused`);
  });

  test("embedded replica whose primary refuses the token", async () => {
    const primary = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("Forbidden", { status: 403 }) });
    try {
      const message = await openError({ url: file("replica2.db"), syncUrl: `http://127.0.0.1:${primary.port}`, authToken: "bad", connectTimeoutMs: 60_000 });
      expect(message).toContain("refused the auth token");
    } finally {
      primary.stop(true);
    }
  });

  test("a local path that cannot be a database: a clear message", async () => {
    const message = await openError({ url: `file:${dir}` });
    expect(message).toStartWith(`Cannot open the database at file:${dir}:`);
  });
});

describe("local file settings", () => {
  test("WAL, synchronous NORMAL on every pooled connection, a busy timeout", async () => {
    const db = await openDb({ url: file("local.db") });
    try {
      expect(db.mode).toBe("local");
      expect((await db.raw.execute("PRAGMA journal_mode")).rows[0]![0]).toBe("wal");
      // Started together, these borrow different connections of the pool.
      const sync = await Promise.all(Array.from({ length: 6 }, () => db.raw.execute("PRAGMA synchronous")));
      expect(sync.map((r) => r.rows[0]![0])).toEqual([1, 1, 1, 1, 1, 1]);
      // The writer waits a second for the file's lock (a batch holds it for its own statements only).
      expect((await db.raw.execute("PRAGMA busy_timeout")).rows[0]![0]).toBe(1000);
      expect(await db.ping()).toBeGreaterThanOrEqual(0);
    } finally {
      await db.close();
    }
  });

  test("tx() and exclusive() take turns: a failed transaction rolls back and the queue goes on", async () => {
    const db = await openDb({ url: file("queue.db") });
    try {
      await db.exclusive((c) => c.execute("CREATE TABLE t (n INTEGER)"));
      const failing = db.tx(async (tx) => {
        await tx.run(sql`INSERT INTO t VALUES (1)`);
        throw new Error("boom");
      });
      const next = db.exclusive((c) => c.execute("SELECT count(*) AS n FROM t"));
      await expect(failing).rejects.toThrow("boom");
      expect((await next).rows[0]!.n).toBe(0);
    } finally {
      await db.close();
    }
  });
});

describe("the suite's own database", () => {
  const env = process.env;
  const expected = env.SVC_TEST_SYNC_URL ? "replica" : env.SVC_TEST_DB_URL ? "remote" : "local";

  test(`test servers run on the ${expected} mode the environment names`, async () => {
    if (expected === "local") {
      console.log(
        "svc db modes: this run used local files only; the remote and replica runs were NOT done (set SVC_TEST_DB_URL, or SVC_TEST_SYNC_URL, with SVC_TEST_AUTH_TOKEN: see docs/operations.md).",
      );
    }
    const s = await startTestServer();
    try {
      expect(s.server.db.mode).toBe(expected);
      const a = await s.register("modes-a");
      expect((await s.ok("get_me", {}, a.key)).agent.handle).toBe("modes-a");
    } finally {
      await s.stop();
    }
  });
});
