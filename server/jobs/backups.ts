// Scheduled backups (svc serve --backup-dir): the same checked copy as `svc backup`, every --backup-every, keeping the
// newest --backup-keep. The copy is made in prepare, outside any transaction: VACUUM INTO reads one snapshot on a
// connection of its own and blocks no writer; the job's lease keeps two instances from copying at once.
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { backupFile } from "../../db/backup.ts";
import type { BackupSchedule } from "../config.ts";
import type { Job } from "./index.ts";

const NAME = /^svc-\d{8}-\d{6}\.db$/;
/** svc-20261128-030000.db: sorted by name is sorted by time. */
const fileName = (now: Date) => `svc-${now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15)}.db`;

export function scheduledBackups(source: string, schedule: BackupSchedule): Job<number> {
  return {
    name: "backup",
    everyMs: schedule.everyMs,
    async prepare(now) {
      mkdirSync(schedule.dir, { recursive: true, mode: 0o700 });
      const name = fileName(now);
      // A run retried within the same second (after a crash) finds its file made already: nothing to do again.
      if (!readdirSync(schedule.dir).includes(name)) await backupFile(source, join(schedule.dir, name));
      const older = readdirSync(schedule.dir)
        .filter((f) => NAME.test(f))
        .sort()
        .slice(0, -schedule.keep);
      for (const f of older) for (const side of ["", "-wal", "-shm"]) rmSync(join(schedule.dir, f + side), { force: true });
      return 1 + older.length;
    },
    // Nothing to write: the backup is a file, and the runner records the run with the lease.
    run: async (_tx, _now, files) => files,
  };
}
