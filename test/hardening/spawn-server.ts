// `svc serve` as a real child process on a database file: for kill -9 and for load measured from outside.
import { spawn, type Subprocess } from "bun";
import { readFileSync } from "node:fs";

/**
 * svc serve flags that lift every rate limit and quota: load and fuzzing measure the server, not the budgets an agent
 * has (test/hardening/quotas.test.ts does).
 */
export const UNLIMITED = [
  ...["--rate-limit", "--public-rate-limit", "--agent-rate-limit"].flatMap((flag) => [flag, "100000000"]),
  ...["keys", "envelope_bytes_per_day", "expenses_per_group_per_day", "groups", "open_plans", "pending_hosts", "attachment_bytes"].flatMap((q) => [
    "--quota",
    `${q}=100000000000`,
  ]),
];

export interface ServerProcess {
  url: string;
  pid: number;
  proc: Subprocess;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** The server's resident memory in KiB, from /proc/PID/status: its own and its workers' (svc serve --workers). */
  rssKiB(): number;
  /** CPU time used so far in ms, user and system, its own and its workers' (/proc/PID/stat). */
  cpuMs(): number;
  /** SIGKILL: no shutdown of any kind. */
  kill9(): Promise<void>;
  /** SIGTERM and wait: a clean stop. */
  stop(): Promise<void>;
}

const ROOT = new URL("../..", import.meta.url).pathname;

/** A port the OS just handed out and released (the server needs it up front: at --log-level warn it prints none). */
export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

/**
 * Starts `bun run cli/main.ts serve` on `dbPath` (a file's path, or a database URL as --db takes it) with no effective
 * rate limit; resolves once /healthz answers.
 */
export async function spawnServer(dbPath: string, extra: string[] = [], port = freePort()): Promise<ServerProcess> {
  const db = /^[a-z]+:/.test(dbPath) ? dbPath : `file:${dbPath}`;
  const proc = spawn(["bun", "run", "cli/main.ts", "serve", "--port", String(port), "--db", db, ...UNLIMITED, ...extra], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  const seen = { text: "" };
  void collect(proc.stdout as ReadableStream<Uint8Array>, seen);
  void collect(proc.stderr as ReadableStream<Uint8Array>, seen);
  const url = `http://127.0.0.1:${port}`;
  await healthy(proc, url, seen);
  return {
    url,
    pid: proc.pid,
    proc,
    output: () => seen.text,
    rssKiB: () => [proc.pid, ...childrenOf(proc.pid)].reduce((sum, pid) => sum + rssOf(pid), 0),
    cpuMs: () => [proc.pid, ...childrenOf(proc.pid)].reduce((sum, pid) => sum + cpuMsOf(pid), 0),
    async kill9() {
      proc.kill("SIGKILL");
      await proc.exited;
    },
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN);
/** CPU time of a running process in ms, all its threads, from /proc/PID/stat (utime and stime, in ticks of 10 ms). */
export function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The fields after the command's name (which may hold spaces), from the third: utime and stime are the 14th and 15th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
const childrenOf = (pid: number): number[] => readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);

/** Appends a stream to `into` until it ends; draining also keeps the child from blocking on a full pipe. */
async function collect(stream: ReadableStream<Uint8Array>, into: { text: string }): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) into.text += decoder.decode(chunk, { stream: true });
}

async function healthy(proc: Subprocess, url: string, seen: { text: string }): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && proc.exitCode === null) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await Bun.sleep(25);
  }
  proc.kill("SIGKILL");
  throw new Error(
    `svc serve did not answer /healthz at ${url} (exit ${proc.exitCode} ${proc.signalCode}); it printed: ${seen.text.length > 1000 ? `${seen.text.slice(0, 300)} ... ${seen.text.slice(-700)}` : seen.text}`,
  );
}
