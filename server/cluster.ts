// svc serve --workers N: N processes serve one port (SO_REUSEPORT: the kernel spreads connections over them) on one
// local database file, each writing its own batches (SQLite's lock for the file is held only while one commits). The
// first, the primary, applies migrations and runs the jobs. The processes share their rate limiters' counts, so a
// limit holds for the server, not for each process; their metrics, so /metrics answers for the server whichever
// process answers it; the storage faults they meet, so /readyz does too; and their log lines, which the primary writes.
import type { Subprocess } from "bun";
import { systemClock } from "./clock.ts";
import type { ServerConfig } from "./config.ts";
import { appendLines, Lines } from "./observability/logs.ts";
import { Metrics, type MetricsState } from "./observability/metrics.ts";
import type { Ops, Peers } from "./observability/ops.ts";
import type { RateLimiter, Taken } from "./rate-limit.ts";
import type { Services } from "./services.ts";

/** What the primary sends a worker: the settings that are plain data (a worker keeps time by the system clock). */
export type WorkerConfig = Omit<ServerConfig, "clock" | "fetchClientMetadata" | "workers">;

type ToWorker = { t: "config"; config: WorkerConfig } | { t: "peers"; states: MetricsState[] } | { t: "limits"; taken: Taken } | Fault;
type ToPrimary = { t: "ready" } | { t: "closed" } | { t: "limits"; taken: Taken } | { t: "metrics"; state: MetricsState } | Fault | { t: "log"; text: string };
type Fault = { t: "fault"; code: string | null };

// How often each process sends the others what its rate limiter took: the most a limit can be overrun by is what
// the other processes let through in this long.
const SHARE_MS = 20;
// How often a worker sends the primary its metrics, and the primary each worker the others': a scrape may miss the
// calls of the last two seconds.
const METRICS_MS = 1_000;
const READY_TIMEOUT_MS = 30_000;
const RESTART_DELAY_MS = 1_000;

/** One process of a server of several: what serve.ts starts once it listens, and what Ops reads. */
export interface Member extends Peers {
  start(svc: Services, ops: Ops): Promise<void>;
}

/** Runs fn every ms (not keeping the process alive); returns how to stop. */
function every(ms: number, fn: () => void): () => void {
  const timer = setInterval(fn, ms).unref();
  return () => clearInterval(timer);
}

/** Sends what the limiter took to `send`, every SHARE_MS; returns how to stop. */
function shareLimits(limiter: RateLimiter, send: (taken: Taken) => void): () => void {
  return every(SHARE_MS, () => {
    const taken = limiter.share();
    if (taken) send(taken);
  });
}

/** The primary's side: starts the workers, relays their limits, starts a worker again that dies. */
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
  private stopMetrics = () => {};

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
    this.stopMetrics = every(METRICS_MS, () => this.sendAll((slot) => ({ t: "peers", states: [ops.metrics.state(), ...this.workerMetrics(slot)] })));
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
          } else if (msg.t === "closed") this.closedWaiters[slot]?.();
          else if (msg.t === "log") appendLines(msg.text);
          else if (msg.t === "metrics") this.states[slot] = msg.state;
          else if (msg.t === "fault") {
            this.ops.faultIs(msg.code);
            this.sendAll(msg, proc);
          } else {
            this.svc.limiter.absorb(msg.taken);
            this.sendAll(msg, proc);
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
      const { clock: _clock, fetchClientMetadata: _fetch, workers: _workers, ...config } = this.svc.config;
      proc.send({ t: "config", config } satisfies ToWorker);
    });
  }

  metrics = async (): Promise<MetricsState[]> => this.workerMetrics();
  faultChanged = (code: string | null): void => this.sendAll({ t: "fault", code });

  /** The metrics of the workers (but the one in slot `except`), and of those gone. */
  private workerMetrics(except = -1): MetricsState[] {
    return [...this.states.filter((s, i): s is MetricsState => s !== undefined && i !== except), this.gone.state()];
  }

  /** msg to every live worker but `except`; a worker that is gone misses it (it starts again with fresh counts). */
  private sendAll(msg: ToWorker | ((slot: number) => ToWorker), except?: Subprocess): void {
    this.procs.forEach((proc, slot) => {
      if (proc && proc !== except && proc.exitCode === null && proc.signalCode === null) proc.send(typeof msg === "function" ? msg(slot) : msg);
    });
  }

  /** Stops the workers: `closed` once none accepts connections, `exited` once each has answered its requests and ended. */
  stop(): { closed: Promise<unknown>; exited: Promise<unknown> } {
    this.stopping = true;
    this.stopSharing();
    this.stopMetrics();
    const live = this.procs.flatMap((proc, slot) => (proc ? [{ proc, slot }] : []));
    const closed = live.map(({ slot }) => new Promise<void>((r) => (this.closedWaiters[slot] = r)));
    for (const { proc } of live) proc.kill("SIGTERM");
    return { closed: Promise.all(closed), exited: Promise.all(live.map(({ proc }) => proc.exited)) };
  }
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
  // The other processes' metrics, as the primary last sent them.
  let peers: MetricsState[] = [];
  let limiter: RateLimiter | undefined;
  let ops: Ops | undefined;
  // What the other processes took while this one was starting: the primary serves from the start.
  const early: Taken[] = [];
  // Writes of several processes to one pipe may tear lines apart (past PIPE_BUF, or once the pipe is full).
  const lines = new Lines((text) => send({ t: "log", text }));
  // A worker lives no longer than its server's primary.
  process.on("disconnect", () => process.exit(1));
  return new Promise((resolve) => {
    process.on("message", (msg: ToWorker) => {
      if (msg.t === "peers") peers = msg.states;
      else if (msg.t === "fault") ops?.faultIs(msg.code);
      else if (msg.t === "limits") {
        if (limiter) limiter.absorb(msg.taken);
        else early.push(msg.taken);
      } else {
        resolve({
          config: { ...msg.config, clock: systemClock },
          async start(svc, o) {
            limiter = svc.limiter;
            ops = o;
            for (const taken of early.splice(0)) limiter.absorb(taken);
            shareLimits(limiter, (taken) => send({ t: "limits", taken }));
            every(METRICS_MS, () => send({ t: "metrics", state: o.metrics.state() }));
            send({ t: "ready" });
          },
          metrics: async () => peers,
          faultChanged: (code) => send({ t: "fault", code }),
          writeLine: (line) => lines.append(`${line}\n`),
          closed: () => send({ t: "closed" }),
        });
      }
    });
  });
}
