// Shared benchmark plumbing: wrk as the load generator, servers started as child processes.
import { spawn, spawnSync, type Subprocess } from "bun";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UNLIMITED } from "../test/hardening/spawn-server.ts";
import { ensureBuilt, SVC } from "../test/cli/bin.ts";

export interface LoadResult {
  rps: number;
  p50ms: number;
  p99ms: number;
  errors: number;
}

/** wrk from Debian's packages; installed on first use so the benchmark runs on a fresh machine. */
export function ensureWrk(): void {
  if (spawnSync(["sh", "-c", "command -v wrk"]).exitCode === 0) return;
  console.log("bench: installing wrk (apt-get install -y wrk) ...");
  const r = spawnSync(["sh", "-c", "apt-get install -y wrk >/dev/null 2>&1 || (apt-get update >/dev/null && apt-get install -y wrk >/dev/null)"]);
  if (r.exitCode !== 0) throw new Error("wrk is needed for the benchmark: install it with 'apt-get install wrk'");
}

const toMs = (v: string, unit: string) => Number(v) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[unit]!;

export interface WrkOptions {
  seconds: number;
  body?: string;
  headers?: Record<string, string>;
  connections?: number;
  /** wrk's threads (2 by default) */
  threads?: number;
  /** a whole wrk Lua script instead */
  lua?: string;
}

function wrkCommand(url: string, opts: WrkOptions): string[] {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-"));
  const script = join(dir, "req.lua");
  const headerLines = Object.entries(opts.headers ?? {})
    .map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`)
    .join("\n");
  writeFileSync(script, opts.lua ?? (opts.body === undefined ? headerLines : `wrk.method = "POST"\nwrk.body = ${JSON.stringify(opts.body)}\n${headerLines}\n`));
  return ["wrk", `-t${opts.threads ?? 2}`, `-c${opts.connections ?? 64}`, `-d${opts.seconds}s`, "--latency", "-s", script, url];
}

function wrkResult(out: string): LoadResult {
  const rps = Number(out.match(/Requests\/sec:\s+([\d.]+)/)?.[1] ?? 0);
  const lat = (pct: string) => {
    const m = out.match(new RegExp(`${pct}%\\s+([\\d.]+)(us|ms|s)`));
    return m ? toMs(m[1]!, m[2]!) : NaN;
  };
  const errs = out.match(/Non-2xx or 3xx responses:\s+(\d+)/);
  const sock = out.match(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/);
  const errors = Number(errs?.[1] ?? 0) + (sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  return { rps, p50ms: lat("50"), p99ms: lat("99"), errors };
}

/** Loads `url` with wrk: 64 connections over loopback, optionally a POST body and headers. */
export function wrk(url: string, opts: WrkOptions): LoadResult {
  return wrkResult(spawnSync(wrkCommand(url, opts), { stderr: "inherit" }).stdout.toString());
}

/** Several wrk runs at once (one per server of a cluster, say), each answered as wrk() does. */
export async function wrkTogether(runs: { url: string; opts: WrkOptions }[]): Promise<LoadResult[]> {
  return Promise.all(
    runs.map(async ({ url, opts }) => {
      const proc = spawn(wrkCommand(url, opts), { stdout: "pipe", stderr: "inherit" });
      const out = await new Response(proc.stdout).text();
      await proc.exited;
      return wrkResult(out);
    }),
  );
}

/** Starts `svc serve`, compiled from the tree as it is, on a fresh database. */
export async function startSvc(port: number, extra: string[] = []): Promise<{ url: string; proc: Subprocess; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-db-"));
  // Built again when a source is newer: a binary left from an earlier build would measure older code.
  await ensureBuilt();
  const exe = [SVC];
  const proc = spawn([...exe, "serve", "--port", String(port), "--db", `file:${join(dir, "svc.db")}`, ...UNLIMITED, ...extra], {
    stdout: "ignore",
    stderr: "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/healthz`);
  return { url, proc, dir };
}

/** Waits until `url` answers 2xx (to `init`, a GET by default). */
export async function waitFor(url: string, ms = 15_000, init?: RequestInit): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    try {
      if ((await fetch(url, init)).ok) return;
    } catch {
      // not listening yet
    }
    await Bun.sleep(50);
  }
  throw new Error(`${url} did not answer within ${ms} ms`);
}

export async function tool(url: string, name: string, args: unknown, key?: string): Promise<any> {
  const res = await fetch(`${url}/v1/tools/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(args),
  });
  const body: any = await res.json();
  if (!body.ok) throw new Error(`${name}: ${JSON.stringify(body.error)}`);
  return body.data;
}

export const fmt = (r: LoadResult) =>
  `${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50ms.toFixed(2).padStart(6)} ms   p99 ${r.p99ms.toFixed(2).padStart(6)} ms   errors ${r.errors}`;
