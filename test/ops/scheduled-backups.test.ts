// svc serve --backup-dir: checked copies on the server's own schedule (the injected clock moves time), the newest
// --backup-keep kept, none carrying the live server's heartbeat.
import { afterAll, expect, test } from "bun:test";
import { createClient } from "@libsql/client";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HOUR, ManualClock } from "../../server/clock.ts";
import { startTestServer } from "../harness.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-scheduled-backups-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function facts(path: string) {
  const c = createClient({ url: `file:${path}` });
  try {
    const one = async (q: string) => (await c.execute(q)).rows[0]![0];
    return {
      integrity: String(await one("PRAGMA integrity_check")),
      agents: Number(await one("SELECT count(*) FROM agents")),
      instances: Number(await one("SELECT count(*) FROM instances")),
    };
  } finally {
    c.close();
  }
}

test("backups are made when due, checked, the owner's alone, without the heartbeat, and only the newest are kept", async () => {
  const clock = new ManualClock(Date.parse("2026-11-28T03:00:00.000Z"));
  const backups = join(dir, "backups");
  // Always a local file, whatever database the rest of the suite runs on: backups are of files.
  const s = await startTestServer({
    dbUrl: `file:${join(dir, "live.db")}`,
    syncUrl: undefined,
    authToken: undefined,
    clock,
    backups: { dir: backups, everyMs: 6 * HOUR, keep: 2 },
  });
  try {
    // The backups themselves (opening one to read it leaves its -wal and -shm beside it).
    const made = () =>
      readdirSync(backups)
        .filter((f) => f.endsWith(".db"))
        .sort();
    await s.register("sb-first");
    await s.server.jobs.runDue();
    expect(made()).toEqual(["svc-20261128-030000.db"]);
    const first = await facts(join(backups, made()[0]!));
    expect(first).toEqual({ integrity: "ok", agents: 1, instances: 0 });
    expect(statSync(join(backups, made()[0]!)).mode & 0o777).toBe(0o600);

    // Not due again before six hours.
    clock.advance(5 * HOUR);
    await s.server.jobs.runDue();
    expect(made()).toEqual(["svc-20261128-030000.db"]);

    await s.register("sb-second");
    clock.advance(HOUR);
    await s.server.jobs.runDue();
    expect(made()).toEqual(["svc-20261128-030000.db", "svc-20261128-090000.db"]);
    expect((await facts(join(backups, "svc-20261128-090000.db"))).agents).toBe(2);

    clock.advance(6 * HOUR);
    await s.server.jobs.runDue();
    expect(made()).toEqual(["svc-20261128-090000.db", "svc-20261128-150000.db"]);
  } finally {
    await s.server.stop();
  }
});

test("--backup-dir on a remote database is refused at start, saying why", async () => {
  await expect(
    startTestServer({ dbUrl: "libsql://svc-me.turso.io", syncUrl: undefined, authToken: "x", backups: { dir: join(dir, "no"), everyMs: HOUR, keep: 1 } }),
  ).rejects.toThrow("--backup-dir backs up a local database file");
});
