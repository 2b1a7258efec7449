// svc backup while a server keeps writing, and svc restore with its checks (compiled binary).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createClient } from "@libsql/client";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "../../server/clock.ts";
import { ensureBuilt, svc } from "../cli/bin.ts";
import { startTestServer, walBytes, type Agent, type TestServer } from "../harness.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-backup-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
beforeAll(() => ensureBuilt());

const livePath = join(dir, "live.db");
const liveUrl = `file:${livePath}`;
/** Always a local file, whatever database the rest of the suite runs on: backups are of files. */
const onLiveFile = () => startTestServer({ dbUrl: liveUrl, syncUrl: undefined, authToken: undefined, clock: systemClock });

async function counts(path: string) {
  const c = createClient({ url: `file:${path}` });
  try {
    const row = async (q: string) => Number((await c.execute(q)).rows[0]![0]);
    return {
      integrity: String((await c.execute("PRAGMA integrity_check")).rows[0]![0]),
      agents: await row("SELECT count(*) FROM agents"),
      clients: await row("SELECT count(*) FROM clients"),
      keys: await row("SELECT count(*) FROM api_keys"),
    };
  } finally {
    c.close();
  }
}

let s: TestServer;
let early: Agent;
const backupPath = join(dir, "backup-1.db");

describe("svc backup", () => {
  test("takes a consistent copy while registrations keep committing", async () => {
    s = await onLiveFile();
    early = await s.register("bk-early");
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) {
        await s.register(`bk-w${written}`);
        written++;
      }
    })();
    // Wait for writes to be flowing before the backup starts.
    while (written < 5) await Bun.sleep(1);
    const before = written;
    const run = await svc(["backup", "--db", liveUrl, "--to", backupPath]);
    const after = written;
    writing = false;
    await writer;
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toStartWith(`Backed up ${livePath} to ${backupPath} (`);
    expect(run.stdout).toContain("integrity ok");
    expect(walBytes(backupPath)).toBe(0);
    expect(after).toBeGreaterThan(before);

    const copy = await counts(backupPath);
    expect(copy.integrity).toBe("ok");
    // One registration is one transaction: a snapshot has each agent with its client and key, or none of them.
    expect(copy.clients).toBe(copy.agents);
    expect(copy.keys).toBe(copy.agents);
    expect(copy.agents).toBeGreaterThanOrEqual(1 + before);
    expect(copy.agents).toBeLessThanOrEqual(1 + written);
    expect(readdirSync(dir).filter((f) => f.includes(".partial-"))).toEqual([]);
  });

  test("refuses an existing target, a missing database and a remote URL", async () => {
    const existing = await svc(["backup", "--db", liveUrl, "--to", backupPath]);
    expect(existing.code).toBe(5);
    expect(existing.stderr).toContain("already exists; choose a new file name");
    const missing = await svc(["backup", "--db", `file:${join(dir, "nope.db")}`, "--to", join(dir, "x.db")]);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain("There is no database at");
    expect(existsSync(join(dir, "nope.db"))).toBe(false);
    const remote = await svc(["backup", "--db", "libsql://svc-me.turso.io", "--to", join(dir, "y.db")]);
    expect(remote.code).toBe(2);
    expect(remote.stderr).toContain("works on a local database file, not libsql://svc-me.turso.io");
  });
});

describe("svc restore", () => {
  test("refuses while a server is running on the database; restores once it stopped, keeping the old file", async () => {
    const late = await s.register("bk-late");
    await s.server.jobs.runDue();
    const busy = await svc(["restore", "--db", liveUrl, "--from", backupPath]);
    expect(busy.code).toBe(5);
    expect(busy.stderr).toContain(`${livePath} looks in use: svc on`);
    expect(busy.stderr).toContain("Stop every svc serve on this database first");

    await s.server.stop();
    const run = await svc(["restore", "--db", liveUrl, "--from", backupPath]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toStartWith(`Restored ${backupPath} into ${livePath} (integrity ok;`);
    const kept = readdirSync(dir).filter((f) => f.startsWith("live.db.before-restore-") && !/-(wal|shm)$/.test(f));
    expect(kept.length).toBe(1);
    // Each file stands alone: restore closed what it opened, and nothing is left in a write-ahead log.
    expect(walBytes(join(dir, kept[0]!))).toBe(0);
    expect(walBytes(livePath)).toBe(0);
    expect((await counts(join(dir, kept[0]!))).agents).toBeGreaterThan((await counts(livePath)).agents);

    const t = await onLiveFile();
    try {
      expect((await t.call("get_me", {}, early.key)).status).toBe(200);
      expect((await t.call("get_me", {}, late.key)).status).toBe(401);
    } finally {
      await t.server.stop();
    }
  });

  test("a backup is no server's: restored twice in a row into the same path, it does not look in use; every file is the owner's alone", async () => {
    // The backup was taken while the server's heartbeat row was fresh; a restore leaves no server running.
    for (let i = 0; i < 2; i++) {
      const run = await svc(["restore", "--db", liveUrl, "--from", backupPath]);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
    }
    const other = join(dir, "backup-2.db");
    expect((await svc(["backup", "--db", liveUrl, "--to", other])).code).toBe(0);
    for (const path of [livePath, backupPath, other]) expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  test("refuses a file that is not a database, a backup from a newer svc, and a missing file, leaving the target alone", async () => {
    const junk = join(dir, "junk.db");
    writeFileSync(junk, "this is not a database at all, just text".repeat(200));
    const before = await counts(livePath);

    const notDb = await svc(["restore", "--db", liveUrl, "--from", junk]);
    expect(notDb.code).toBe(1);
    expect(notDb.stderr).toMatch(/is not a readable SQLite database|cannot be opened as a database/);

    const newer = join(dir, "newer.db");
    copyFileSync(backupPath, newer);
    const c = createClient({ url: `file:${newer}` });
    await c.execute("INSERT INTO _migrations (id, name, checksum, applied_at) VALUES (9999, '9999_future', 'x', '2030-01-01T00:00:00.000Z')");
    c.close();
    const future = await svc(["restore", "--db", liveUrl, "--from", newer]);
    expect(future.code).toBe(5);
    expect(future.stderr).toContain("upgrade svc before opening this database");

    const missing = await svc(["restore", "--db", liveUrl, "--from", join(dir, "absent.db")]);
    expect(missing.code).toBe(4);

    const remote = await svc(["restore", "--db", "libsql://svc-me.turso.io", "--from", backupPath]);
    expect(remote.code).toBe(2);

    expect(await counts(livePath)).toEqual(before);
    expect(readdirSync(dir).filter((f) => f.startsWith(".svc-restore-"))).toEqual([]);
  });
});
