// Read tools run in read transactions (served by an embedded replica's local file), tools that write in write
// ones; a read transaction refuses writes in every mode, and authentication records a read caller's use after it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonList, openDb, scalar, type Db, type DbOptions, type Tx, type TxKind } from "../../db/client.ts";
import { TOOLS } from "../../server/tools/catalogue.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { startSqld } from "../sqld.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-tx-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** fn on a new database file in dir holding an empty table t (n INTEGER); the database is closed after. */
async function withTable(name: string, fn: (db: Db, path: string) => Promise<void>, opts: Omit<DbOptions, "url"> = {}): Promise<void> {
  const path = join(dir, name);
  const db = await openDb({ url: `file:${path}`, ...opts });
  try {
    await db.exclusive((c) => c.execute("CREATE TABLE t (n INTEGER)"));
    await fn(db, path);
  } finally {
    await db.close();
  }
}

describe("Db.read on a local file", () => {
  test("reads, refuses a write (which stores nothing), and the queue goes on; observeTx names the kind", async () => {
    const kinds: [TxKind, boolean][] = [];
    await withTable(
      "read.db",
      async (db) => {
        await db.tx((tx) => tx.run(sql`INSERT INTO t VALUES (1)`));
        expect(await db.read((tx) => scalar(tx, sql`SELECT count(*) FROM t`))).toBe(1);
        for (const write of [sql`INSERT INTO t VALUES (2)`, sql`UPDATE t SET n = 3`]) {
          const err: unknown = await db.read((tx) => tx.run(write)).catch((e: unknown) => e);
          expect(((err as Error).cause as Error).message).toStartWith("READ_ONLY_TRANSACTION: Invalid write in a read transaction");
        }
        expect((await db.exclusive((c) => c.execute("SELECT group_concat(n) AS n FROM t"))).rows[0]!.n).toBe("1");
        expect(kinds).toEqual([
          ["write", true],
          ["read", true],
          ["read", false],
          ["read", false],
        ]);
      },
      { observeTx: (_ms, ok, kind) => kinds.push([kind, ok]) },
    );
  });
});

describe("connections of a local file: one writer, readers beside it", () => {
  const count = (db: Db) => db.read((tx) => scalar<number>(tx, sql`SELECT count(*) FROM t`));

  test("a read never waits behind a write, and reads what was committed before it began", async () => {
    await withTable("readers.db", async (db) => {
      const { promise: hold, resolve: release } = Promise.withResolvers<void>();
      const { promise: inserted, resolve: didInsert } = Promise.withResolvers<void>();
      // A write that has inserted and then waits, its transaction open, until the test lets it go.
      const writing = db.tx(async (tx) => {
        await tx.run(sql`INSERT INTO t VALUES (1)`);
        didInsert();
        await hold;
      });
      await inserted;
      expect(await count(db)).toBe(0); // answered while the write is open, without its uncommitted row
      release();
      await writing;
      expect(await count(db)).toBe(1);
    });
  });

  test("write calls read side by side, each on a connection of its own, and every batch commits; a read keeps its snapshot", async () => {
    await withTable("turns.db", async (db) => {
      const order: string[] = [];
      const write = (n: number) =>
        db.tx(async (tx) => {
          order.push(`begin ${n}`);
          await tx.run(sql`INSERT INTO t VALUES (${n})`);
          await Bun.sleep(5);
          order.push(`end ${n}`);
        });
      await Promise.all([write(1), write(2), write(3)]);
      // None waited for another's reads: three readers, three calls.
      expect(order.slice(0, 3)).toEqual(["begin 1", "begin 2", "begin 3"]);
      expect(await count(db)).toBe(3);
      // A read held open across awaits keeps its snapshot while writes commit beside it.
      const seen = await db.read(async (tx) => {
        const before = await scalar<number>(tx, sql`SELECT count(*) FROM t`);
        await write(4);
        return [before, await scalar<number>(tx, sql`SELECT count(*) FROM t`)];
      });
      expect(seen).toEqual([3, 3]);
      expect(await count(db)).toBe(4);
    });
  });
});

describe("lists bound as one JSON value (jsonEach)", () => {
  test("carry any text: a lone surrogate arrives as U+FFFD, and its row reads back", async () => {
    const db = await openDb({ url: `file:${join(dir, "json-each.db")}` });
    try {
      await db.exclusive((c) => c.execute("CREATE TABLE t (n INTEGER, s TEXT)"));
      const texts = ["plain", "é ✓ 🎉", "lone \ud800 high", "lone \udc00 low", "a backslash: \\ud800"];
      await db.raw.execute("INSERT INTO t SELECT key, value FROM json_each(?)", [jsonList(texts)]);
      const stored = await db.read((tx) => tx.values<[string]>(sql`SELECT s FROM t ORDER BY n`));
      expect(stored.map(([s]) => s)).toEqual(texts.map((t) => t.toWellFormed()));
    } finally {
      await db.close();
    }
  });
});

describe("a remote primary's rows (Hrana streams)", () => {
  // Hrana's rows are array-like objects, not arrays: through a primary (sqld) they reach drizzle as a file's do.
  test("reach drizzle as a local file's do: values() destructures, get() and all() map each column", async () => {
    const sqld = await startSqld();
    const remoteDb = await openDb({ url: sqld.url });
    try {
      await remoteDb.exclusive((c) => c.execute("CREATE TABLE t (n INTEGER)"));
      await remoteDb.raw.execute("INSERT INTO t VALUES (1), (2)");
      await withTable("remote-rows.db", async (db) => {
        await db.raw.execute("INSERT INTO t VALUES (1), (2)");
        const read = <T>(fn: (tx: Tx) => Promise<T>) => Promise.all([db.read(fn), remoteDb.read(fn)]);
        const [local, remote] = await read(async (tx) => ({
          values: (await tx.values<[number, string]>(sql`SELECT n, 'x' || n FROM t ORDER BY n`)).map(([n, s]) => `${n}:${s}`),
          get: await tx.get<[number]>(sql`SELECT n FROM t ORDER BY n DESC`),
          all: await tx.all<[number]>(sql`SELECT n FROM t ORDER BY n`),
        }));
        expect(local).toEqual({ values: ["1:x1", "2:x2"], get: [2], all: [[1], [2]] });
        expect(remote).toEqual(local);
      });
    } finally {
      await remoteDb.close();
      await sqld.stop();
    }
  });
});

describe("the pipeline", () => {
  let s: TestServer;
  const seen: TxKind[] = [];
  beforeAll(async () => {
    s = await startTestServer();
    const db = s.server.db as Db;
    const [read, tx] = [db.read, db.tx];
    db.read = (fn) => (seen.push("read"), read(fn));
    db.tx = (fn) => (seen.push("write"), tx(fn));
  });
  afterAll(() => s.stop());

  test("two read tools declare writes, get_inbox writes when it marks; every other read tool runs in a read transaction", () => {
    const reading = TOOLS.filter((t) => !t.isWrite);
    expect(
      reading
        .filter((t) => t.writes)
        .map((t) => t.name)
        .sort(),
    ).toEqual(["get_contact_code", "get_settings_link"]);
    expect(TOOLS.filter((t) => t.writesWhenNeeded).map((t) => t.name)).toEqual(["get_inbox"]);
    expect(TOOLS.filter((t) => t.isWrite).every((t) => t.writes)).toBe(true);
  });

  test("a read tool runs in a read transaction, a write tool and a read tool that writes in a write one", async () => {
    const a = await s.register("txkind-a");
    const b = await s.register("txkind-b");
    // A write's inbox summary is read in its batch's own request, in every mode: no read call follows a write.
    const summary: TxKind[] = [];
    const calls: [string, Record<string, unknown>, TxKind[], string?][] = [
      ["get_me", {}, ["read"]], // the first use of the key: last_used_at is noted, and written later in a batch
      ["get_me", {}, ["read"]],
      ["list_groups", {}, ["read"]],
      ["get_inbox", {}, ["read"]], // nothing new: a read
      ["add_contact", { handle: a.handle }, ["write", ...summary], b.key], // b leaves a request in a's inbox ...
      ["get_inbox", {}, ["read", "write"]], // ... which the next poll marks seen, in a write after the read
      ["get_contact_code", {}, ["write", ...summary]],
      // It answers with a view of what it wrote: its batch goes when it reads that, and its answer is kept for its
      // idempotency key by a second, small write.
      ["create_group", { name: "Trip", currency: "EUR" }, ["write", "write"]],
    ];
    for (const [tool, args, kinds, key] of calls) {
      seen.length = 0;
      await s.ok(tool, args, key ?? a.key);
      expect([tool, ...seen]).toEqual([tool, ...kinds]);
    }
  });

  test("last_used_at still advances for a caller that only reads, at most once a minute, written in batches", async () => {
    const a = await s.register("txkind-reader");
    await s.server.lastUse.flush();
    // As stored: list_clients shows the calling client in use now.
    const lastUsed = async () => (await s.server.db.raw.execute("SELECT last_used_at FROM clients WHERE agent_id = ?", [a.agent_id])).rows[0]!.last_used_at;
    const t1 = s.clock.now().toISOString();
    seen.length = 0;
    await s.ok("get_me", {}, a.key);
    // Noted only: no call writes for it, until the batch is written.
    expect(seen).toEqual(["read"]);
    expect(await lastUsed()).toBeNull();
    expect((await s.ok("list_clients", {}, a.key)).clients[0].last_used_at).toBe(t1);
    await s.server.lastUse.flush();
    expect(await lastUsed()).toBe(t1);
    s.clock.advance(30_000);
    await s.ok("list_contacts", {}, a.key);
    expect(await lastUsed()).toBe(t1);
    s.clock.advance(31_000);
    const t2 = s.clock.now().toISOString();
    await s.ok("list_contacts", {}, a.key);
    await s.server.lastUse.flush();
    expect(await lastUsed()).toBe(t2);
  });
});
