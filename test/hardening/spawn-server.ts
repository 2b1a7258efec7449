// `svc serve` as a real child process on a database file: for kill -9 and for load measured from outside.
import { spawn, type Subprocess } from "bun";
import { readFileSync } from "node:fs";

export interface ServerProcess {
  url: string;
  pid: number;
  proc: Subprocess;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** The server's resident memory in KiB, from /proc/PID/status. */
  rssKiB(): number;
  /** SIGKILL: no shutdown of any kind. */
  kill9(): Promise<void>;
  /** SIGTERM and wait: a clean stop. */
  stop(): Promise<void>;
}

const ROOT = new URL("../..", import.meta.url).pathname;

/** Starts `bun run cli/main.ts serve` on `dbPath` with an ephemeral port and no effective rate limit. */
export async function spawnServer(dbPath: string, extra: string[] = []): Promise<ServerProcess> {
  const proc = spawn(
    ["bun", "run", "cli/main.ts", "serve", "--port", "0", "--db", `file:${dbPath}`, "--rate-limit", "100000000", "--public-rate-limit", "100000000", ...extra],
    { cwd: ROOT, stdout: "pipe", stderr: "pipe" },
  );
  const seen = { text: "" };
  void collect(proc.stderr as ReadableStream<Uint8Array>, seen);
  const url = await listeningUrl(proc, seen);
  return {
    url,
    pid: proc.pid,
    proc,
    output: () => seen.text,
    rssKiB: () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${proc.pid}/status`, "utf8"))?.[1] ?? NaN),
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

/** Appends a stream to `into` until it ends; draining also keeps the child from blocking on a full pipe. */
async function collect(stream: ReadableStream<Uint8Array>, into: { text: string }): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) into.text += decoder.decode(chunk, { stream: true });
}

/** Waits until the child prints where it listens (the port is chosen by the OS). */
async function listeningUrl(proc: Subprocess, seen: { text: string }): Promise<string> {
  void collect(proc.stdout as ReadableStream<Uint8Array>, seen);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && proc.exitCode === null) {
    const m = /listening on (http:\/\/[^\s"]+)/.exec(seen.text);
    if (m) return m[1]!;
    await Bun.sleep(20);
  }
  proc.kill("SIGKILL");
  throw new Error(`svc serve did not report listening; it printed: ${seen.text.slice(0, 500)}`);
}
