// svc serve --workers N: N processes serve one port (SO_REUSEPORT: the kernel spreads connections over them) on one
// local database file. The first, the primary, applies migrations, runs the jobs and every write tool call; the
// others, the workers, answer reads themselves and hand each write tool call to the primary. Writes from several
// processes would fight over SQLite's write lock, whose busy wait sleeps (a p99 of seconds under load), and one
// writer keeps group commit whole. The processes also share their rate limiters' counts, so a limit holds for the
// server, not for each process, their metrics, so /metrics answers for the server whichever process answers it, and
// the storage faults they meet, so /readyz does too, and their log lines, which the primary writes.
//
// How a call crosses: a worker's run (workerRun) is the pipeline's one seam (Services.cluster); what carries the
// call to the process that writes is a Transport, IPC here (IpcTransport), so that another (HTTP between machines)
// is one piece more. The rest of this file is the process tree: starting, sharing, stopping.
import type { Subprocess } from "bun";
import { NeedsWrite } from "../db/client.ts";
import { systemClock } from "./clock.ts";
import type { ServerConfig } from "./config.ts";
import { AppError } from "./errors.ts";
import { appendLines, Lines } from "./observability/logs.ts";
import { Metrics, type MetricsState } from "./observability/metrics.ts";
import type { Ops, Peers } from "./observability/ops.ts";
import type { RateLimiter, Taken } from "./rate-limit.ts";
import type { Call, CallMeta, CallResult, Cluster, Services } from "./services.ts";
import { findTool } from "./tools/catalogue.ts";
import { run } from "./tools/invoke.ts";

/** What the primary sends a worker: the settings that are plain data (a worker keeps time by the system clock). */
export type WorkerConfig = Omit<ServerConfig, "clock" | "fetchClientMetadata" | "workers">;

// An error crosses as the envelope a client would get (AppError.envelope), and is made an AppError again from it.
type WireError = ReturnType<AppError["envelope"]>["error"];
type WireResult = Exclude<CallResult, { ok: false }> | { ok: false; error: WireError; headers: Record<string, string> };
/** A call as it crosses: the client's address looked up, no sandbox (a dry run runs where it arrives). */
type SentCall = Omit<Call, "meta"> & { meta: Omit<CallMeta, "clientAddress" | "sandbox"> & { address: string } };
type ToWorker =
  | { t: "config"; config: WorkerConfig }
  | { t: "result"; id: number; result: WireResult }
  | { t: "peers"; id: number; states: MetricsState[] }
  | { t: "limits"; taken: Taken }
  | { t: "fault"; code: string | null };
type ToPrimary =
  | { t: "ready" }
  | { t: "closed" }
  | { t: "call"; id: number; call: SentCall }
  | { t: "peers"; id: number }
  | { t: "limits"; taken: Taken }
  | { t: "metrics"; state: MetricsState }
  | { t: "fault"; code: string | null }
  | { t: "log"; text: string };

// How often each process sends the others what its rate limiter took: the most a limit can be overrun by is what
// the other processes let through in this long.
const SHARE_MS = 20;
// How often a worker sends the primary its metrics: a scrape may miss the calls of the last second.
const METRICS_MS = 1_000;
const READY_TIMEOUT_MS = 30_000;
const RESTART_DELAY_MS = 1_000;

const toWire = (r: CallResult): WireResult => (r.ok ? r : { ok: false, error: r.error.envelope("").error, headers: r.headers });
const fromWire = (r: WireResult): CallResult =>
  r.ok
    ? r
    : { ok: false, error: new AppError(r.error.code, r.error.message, r.error.details, r.error.retry_after, r.error.suggested_action), headers: r.headers };

// No tool's arguments nest more than a few levels; a call nested deeper is refused by its schema in any process. That
// holds while no input schema takes free JSON, which test/hardening/boundaries.test.ts checks of every tool. What is
// sent crosses as parsed: invoke refuses first what JSON would change on the way (server/tools/json-values.ts).
const MAX_SENT_DEPTH = 64;

/** Whether value nests arrays or objects more than limit levels deep, found without recursion. */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  const todo: [unknown, number][] = [[value, 0]];
  for (let next = todo.pop(); next; next = todo.pop()) {
    const [v, depth] = next;
    if (v === null || typeof v !== "object") continue;
    if (depth >= limit) return true;
    for (const child of Object.values(v)) todo.push([child, depth + 1]);
  }
  return false;
}

/**
 * How a call that must write reaches the process that writes, and its answer comes back as if run here; null when
 * it cannot be sent (then it runs here).
 */
export interface Transport {
  send(call: Call): Promise<CallResult | null>;
}

/**
 * A worker's run: a call whose tool writes runs on the primary; any other here, in a read transaction, and one that
 * finds it must write (an inbox poll with items) is sent once, and run there as a write at once.
 */
export function workerRun(transport: Transport): NonNullable<Cluster["run"]> {
  return async (svc, call) => {
    const tool = findTool(call.name)!;
    if (!tool.writes) {
      try {
        return await run(svc, call, tool, tool.writesWhenNeeded ? "read only" : "read");
      } catch (err) {
        if (!(err instanceof NeedsWrite)) throw err;
      }
    }
    return (await transport.send(call)) ?? run(svc, call, tool, "write");
  };
}

/** The primary's side of a sent call: it runs as a write (a read that found it must write is not read again). */
function runSent(svc: Services, sent: SentCall): Promise<CallResult> {
  const { address, ...meta } = sent.meta;
  return run(svc, { ...sent, meta: { ...meta, clientAddress: () => address } }, findTool(sent.name)!, "write");
}

/** IPC to the primary, with JSON on the way: errors cross as their envelope. */
class IpcTransport implements Transport {
  constructor(private readonly ask: (call: SentCall) => Promise<WireResult>) {}

  async send(call: Call): Promise<CallResult | null> {
    // Arguments nested deeper than any tool takes are not sent (JSON's recursion would run out of stack, slowly):
    // the call runs here, where they are refused as the primary would refuse them.
    if (nestedDeeperThan(call.raw, MAX_SENT_DEPTH)) return null;
    const { clientAddress, sandbox: _sandbox, ...meta } = call.meta;
    return fromWire(await this.ask({ ...call, meta: { ...meta, address: clientAddress() } }));
  }
}

/** One process of a server of several: what serve.ts starts once it listens, and what Ops reads. */
export interface Member extends Cluster, Peers {
  start(svc: Services, ops: Ops): Promise<void>;
}

/** Runs fn every ms (not keeping the process alive); returns how to stop. */
function every(ms: number, fn: () => void): () => void {
  const timer = setInterval(fn, ms);
  timer.unref();
  return () => clearInterval(timer);
}

/** Sends what the limiter took to `send`, every SHARE_MS; returns how to stop. */
function shareLimits(limiter: RateLimiter, send: (taken: Taken) => void): () => void {
  return every(SHARE_MS, () => {
    const taken = limiter.share();
    if (taken) send(taken);
  });
}

/** The primary's side: starts the workers, runs their calls, relays their limits, starts a worker again that dies. */
export class Workers implements Member {
  private svc!: Services;
  private ops!: Ops;
  private procs: (Subprocess | null)[] = [];
  // Called when the worker in a slot no longer accepts connections (it said so, or it is gone).
  private closedWaiters: (() => void)[] = [];
  // The metrics each worker last sent, and those of workers gone (counters only grow, for the server).
  private states: (MetricsState | undefined)[] = [];
  private readonly gone = new Metrics();
  private stopping = false;
  private stopSharing = () => {};

  constructor(
    private readonly count: number,
    /** The command that starts a worker (svc serve --worker). */
    private readonly command: string[],
  ) {}

  /** Starts count workers; resolves once each serves. */
  async start(svc: Services, ops: Ops): Promise<void> {
    this.svc = svc;
    this.ops = ops;
    this.stopSharing = shareLimits(svc.limiter, (taken) => this.sendAll({ t: "limits", taken }));
    await Promise.all(Array.from({ length: this.count }, (_, i) => this.spawn(i)));
  }

  private spawn(slot: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${slot + 1} did not start within ${READY_TIMEOUT_MS / 1000}s`)), READY_TIMEOUT_MS);
      const proc = Bun.spawn(this.command, {
        stdout: "inherit",
        stderr: "inherit",
        serialization: "json",
        ipc: (msg: ToPrimary) => {
          if (msg.t === "ready") {
            clearTimeout(timer);
            resolve();
          } else if (msg.t === "closed") {
            this.closedWaiters[slot]?.();
          } else if (msg.t === "call") {
            void runSent(this.svc, msg.call).then((result) => this.send(proc, { t: "result", id: msg.id, result: toWire(result) }));
          } else if (msg.t === "log") {
            appendLines(msg.text);
          } else if (msg.t === "metrics") {
            this.states[slot] = msg.state;
          } else if (msg.t === "peers") {
            this.send(proc, { t: "peers", id: msg.id, states: [this.ops.metrics.state(), ...this.workerMetrics(slot)] });
          } else if (msg.t === "fault") {
            this.ops.faultIs(msg.code);
            this.sendOthers(proc, msg);
          } else {
            this.svc.limiter.absorb(msg.taken);
            this.sendOthers(proc, msg);
          }
        },
        onExit: (_p, code, signal) => {
          clearTimeout(timer);
          this.procs[slot] = null;
          this.closedWaiters[slot]?.();
          const last = this.states[slot];
          if (last) this.gone.add(last);
          this.states[slot] = undefined;
          if (this.stopping) return;
          reject(new Error(`worker ${slot + 1} exited at start (${signal ?? code})`));
          // A worker that dies is started again: the port keeps its share of connections.
          this.ops.log.error("worker exited; starting it again", { worker: slot + 1, code, signal });
          setTimeout(() => {
            if (!this.stopping) this.spawn(slot).catch((err) => this.ops.log.error("worker did not start", { worker: slot + 1, error: String(err) }));
          }, RESTART_DELAY_MS);
        },
      });
      this.procs[slot] = proc;
      this.send(proc, { t: "config", config: workerConfig(this.svc.config) });
    });
  }

  async metrics(): Promise<MetricsState[]> {
    return this.workerMetrics();
  }

  faultChanged(code: string | null): void {
    this.sendAll({ t: "fault", code });
  }

  /** The metrics of the workers (but the one in slot `except`), and of those gone. */
  private workerMetrics(except = -1): MetricsState[] {
    return [...this.states.filter((s, i): s is MetricsState => s !== undefined && i !== except), this.gone.state()];
  }

  private send(proc: Subprocess, msg: ToWorker): void {
    // A worker that is gone misses it; it is started again with fresh counts.
    if (proc.exitCode === null && proc.signalCode === null) proc.send(msg);
  }

  private sendAll(msg: ToWorker): void {
    for (const proc of this.procs) if (proc) this.send(proc, msg);
  }

  private sendOthers(from: Subprocess, msg: ToWorker): void {
    for (const proc of this.procs) if (proc && proc !== from) this.send(proc, msg);
  }

  /**
   * Stops the workers: `closed` once none accepts connections, `exited` once each has answered its requests in
   * flight (whose writes this process still runs) and ended.
   */
  stop(): { closed: Promise<unknown>; exited: Promise<unknown> } {
    this.stopping = true;
    this.stopSharing();
    const live = this.procs.flatMap((proc, slot) => (proc ? [{ proc, slot }] : []));
    const closed = live.map(({ slot }) => new Promise<void>((r) => (this.closedWaiters[slot] = r)));
    for (const { proc } of live) proc.kill("SIGTERM");
    return { closed: Promise.all(closed), exited: Promise.all(live.map(({ proc }) => proc.exited)) };
  }
}

function workerConfig(config: ServerConfig): WorkerConfig {
  const { clock: _clock, fetchClientMetadata: _fetch, workers: _workers, ...plain } = config;
  return plain;
}

/** The worker's side of the link to the primary. */
export interface PrimaryLink extends Member {
  config: ServerConfig;
  /** Where this worker's log lines go: the primary writes them with its own. */
  writeLine(line: string): void;
  /** Tells the primary this worker no longer accepts connections (it is stopping). */
  closed(): void;
}

/** In a worker: waits for the primary's settings. The worker ends as soon as the primary is gone (even by kill -9). */
export function connectToPrimary(): Promise<PrimaryLink> {
  const send = (msg: ToPrimary) => process.send!(msg);
  if (!process.send) throw new Error("svc serve --worker is started by svc serve --workers, not by hand");
  const pending = new Map<number, (answer: never) => void>();
  let nextId = 0;
  const ask = <T>(msg: (id: number) => ToPrimary): Promise<T> =>
    new Promise((done) => {
      const id = nextId++;
      pending.set(id, done as (answer: never) => void);
      send(msg(id));
    });
  const answer = (id: number, value: unknown) => {
    pending.get(id)?.(value as never);
    pending.delete(id);
  };
  let limiter: RateLimiter | undefined;
  let ops: Ops | undefined;
  // What the other processes took while this one was starting: the primary serves from the start.
  const early: Taken[] = [];
  // Writes of several processes to one pipe may tear lines apart (past PIPE_BUF, or once the pipe is full).
  const lines = new Lines((text) => send({ t: "log", text }));
  // Without its primary a worker could not write: its connections go with it.
  process.on("disconnect", () => process.exit(1));
  return new Promise((resolve) => {
    process.on("message", (msg: ToWorker) => {
      if (msg.t === "result") answer(msg.id, msg.result);
      else if (msg.t === "peers") answer(msg.id, msg.states);
      else if (msg.t === "fault") ops?.faultIs(msg.code);
      else if (msg.t === "limits") {
        if (limiter) limiter.absorb(msg.taken);
        else early.push(msg.taken);
      } else {
        resolve({
          config: { ...msg.config, clock: systemClock },
          run: workerRun(new IpcTransport((call) => ask<WireResult>((id) => ({ t: "call", id, call })))),
          async start(svc, o) {
            limiter = svc.limiter;
            ops = o;
            for (const taken of early.splice(0)) limiter.absorb(taken);
            shareLimits(limiter, (taken) => send({ t: "limits", taken }));
            every(METRICS_MS, () => send({ t: "metrics", state: o.metrics.state() }));
            send({ t: "ready" });
          },
          metrics: () => ask<MetricsState[]>((id) => ({ t: "peers", id })),
          faultChanged: (code) => send({ t: "fault", code }),
          writeLine: (line) => lines.append(`${line}\n`),
          closed: () => send({ t: "closed" }),
        });
      }
    });
  });
}
