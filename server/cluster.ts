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
import { sql } from "drizzle-orm";
import { z } from "zod";
import { timingSafeEqual } from "node:crypto";
import { type Db, NeedsWrite, type Tx } from "../db/client.ts";
import { systemClock } from "./clock.ts";
import type { ServerConfig } from "./config.ts";
import { AppError, describeCause } from "./errors.ts";
import { appendLines, Lines } from "./observability/logs.ts";
import { Metrics, type MetricsState } from "./observability/metrics.ts";
import type { Ops, Peers } from "./observability/ops.ts";
import type { RateLimiter, Taken } from "./rate-limit.ts";
import type { Call, CallMeta, CallResult, Cluster, Services } from "./services.ts";
import { findTool } from "./tools/catalogue.ts";
import { failure } from "./adapters/rest.ts";
import { addSummary, run } from "./tools/invoke.ts";
import { namedKey } from "./tools/idempotency.ts";

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
    const answer = await transport.send({ ...call, meta: { ...call.meta, summaryBySender: true } });
    if (!answer) return run(svc, call, tool, "write");
    // The caller's inbox summary is read here, not by the process every write waits for.
    if (answer.ok && answer.summaryFor) {
      await addSummary(svc, answer.data, answer.summaryFor, svc.config.clock.now());
      delete answer.summaryFor;
    }
    return answer;
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

// ---------------------------------------------------------------------------------------------------------------
// One writer among instances on one shared database (remote or replica mode, svc serve --peer-secret). Each instance
// answers reads itself (on an embedded replica, from its own file); the instance holding the writer lease (a row of
// the database, writer_lease) runs every write tool call, and the others send theirs to it over HTTP, authenticated by
// the secret they share. Writes from several instances would each hold the primary's write lock across their round
// trips (and sqld's lock queue can stall for good with three or more writing clients); one writer holds it alone.
// The lease is held for LEASE_MS and renewed every RENEW_MS: when its holder goes away, another instance takes it once
// it has run out. A call in flight to a writer that went away is sent again to the next one when it carries an
// idempotency key (it replays if it had committed); any other is answered 503 STORAGE_UNAVAILABLE, safe to retry.

/** svc serve --peer-secret: what one instance needs to take part (config.peer). */
export interface PeerSettings {
  /** The secret every instance on the database shares; a sent call without it is refused. */
  secret: string;
  /** Where the other instances reach this one (its own address, not the load balancer's); default http://HOST:PORT. */
  url?: string;
}

/** Where a writer takes what the other instances send it: their write calls, and their clients' last use. */
export const PEER_PATHS = "/internal/peer/";
export const PEER_CALL_PATH = `${PEER_PATHS}call`;
const PEER_LAST_USE_PATH = `${PEER_PATHS}last-use`;
// A request handed over whole carries the shared secret and the address of the client who made it.
const PEER_SECRET_HEADER = "svc-peer-secret";
const PEER_CLIENT_HEADER = "svc-peer-client";
// A batch of last uses as sent: [client id, ISO time] pairs (one process's clients used within a flush).
const LastUses = z.array(z.tuple([z.string().max(200), z.iso.datetime()])).max(1_000_000);
const LEASE_MS = 3_000;
const RENEW_MS = 1_000;
// A sender waits this long at most for a writer (the lease of one gone runs out in LEASE_MS, then one takes it).
const WRITER_WAIT_MS = LEASE_MS + 3 * RENEW_MS;
const SEND_TIMEOUT_MS = 30_000;

interface Lease {
  holder: string;
  url: string;
  until: number;
}

const noWriter = () =>
  new AppError(
    "STORAGE_UNAVAILABLE",
    "No instance could take this write now (the instance that writes went away, or the database server cannot be reached). Retrying with the same idempotency key is safe.",
    undefined,
    1,
  );

/** Constant-time comparison of a presented secret with the shared one. */
function sameSecret(given: string, secret: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** This instance's part among several on one database: the writer lease, and the HTTP transport of writes. */
export class OneWriter implements Member, Transport {
  readonly id = crypto.randomUUID();
  private svc!: Services;
  // The database itself: the lease is this instance's own write, made whether or not it writes for the others.
  private db!: Db;
  private ops: Ops | undefined;
  private lease: Lease | null = null;
  private url = "";
  private timer: ReturnType<typeof setInterval> | undefined;
  private ticking: Promise<void> | undefined;
  // Stopping: this instance no longer takes the lease.
  private leaving = false;
  private readonly runHere: NonNullable<Cluster["run"]> = workerRun(this);

  /**
   * A call: reads here, writes on the writer. An embedded replica lags its primary by up to RENEW_MS (each renewal
   * syncs it): a read that finds no such credential or object is run once more after a sync, so that a key or a group
   * just made through another instance is found.
   */
  readonly run: NonNullable<Cluster["run"]> = async (svc, call) => {
    const answer = await this.runHere(svc, call);
    if (svc.db.mode !== "replica" || answer.ok || (answer.error.code !== "UNAUTHENTICATED" && answer.error.code !== "NOT_FOUND")) return answer;
    await svc.db.sync();
    return this.runHere(svc, call);
  };

  constructor(private readonly settings: PeerSettings) {}

  /**
   * Takes part once this instance listens at url (the default peer URL): takes or learns the lease. db: the database
   * itself, where svc.db refuses writes while another instance writes (hand-over.ts).
   */
  async start(svc: Services, ops: Ops, url = "", db: Db = svc.db): Promise<void> {
    this.svc = svc;
    this.db = db;
    this.ops = ops;
    this.url = (this.settings.url ?? url).replace(/\/+$/, "");
    await this.tick();
    this.timer = setInterval(() => void this.tick(), RENEW_MS);
    this.timer.unref();
  }

  /** Whether this instance holds the lease now, by its own clock. */
  get writes(): boolean {
    return !this.leaving && this.lease !== null && this.lease.holder === this.id && this.lease.until > Date.now();
  }

  /** Renews the lease if this instance holds it, takes it if it has run out, and learns who holds it. */
  tick(): Promise<void> {
    this.ticking ??= this.renew()
      .catch((err) => this.ops?.log.warn("the writer lease could not be read or renewed", { error: describeCause(err) }))
      .finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  private async renew(): Promise<void> {
    const now = Date.now();
    const db = this.db;
    const free = !this.lease || this.lease.holder === this.id || this.lease.until <= now;
    if (this.leaving || !free) {
      // Someone else holds it: read who, without writing (a replica first syncs, to see the holder's renewals).
      await db.sync();
      this.lease = await db.read(readLease);
      if (this.leaving || (this.lease && this.lease.until > now)) return;
    }
    const held = this.lease?.holder === this.id;
    this.lease = await db.tx(async (tx) => {
      await tx.run(sql`INSERT INTO writer_lease (id, holder, url, lease_until) VALUES (1, ${this.id}, ${this.url}, ${new Date(now + LEASE_MS).toISOString()})
        ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, url = excluded.url, lease_until = excluded.lease_until
        WHERE writer_lease.holder = excluded.holder OR writer_lease.lease_until <= ${new Date(now).toISOString()}`);
      return readLease(tx);
    });
    if (!held && this.writes) this.ops?.log.info("this instance took the writer lease", { instance: this.id, url: this.url });
  }

  /** Transport: null when this instance writes (the call runs here), else the writer's answer. */
  async send(call: Call): Promise<CallResult | null> {
    if (nestedDeeperThan(call.raw, MAX_SENT_DEPTH)) return null;
    const { clientAddress, sandbox: _sandbox, ...meta } = call.meta;
    const sent: SentCall = { ...call, meta: { ...meta, address: clientAddress() } };
    const tool = findTool(call.name);
    // Sent again only where a second run replays the first: a call with an idempotency key.
    const resendable = Boolean(tool?.idempotent && namedKey(call));
    const deadline = Date.now() + WRITER_WAIT_MS;
    for (;;) {
      if (this.writes) return null;
      const lease = this.lease;
      if (lease && lease.until > Date.now()) {
        const outcome = await this.post(lease.url, sent);
        // Read-your-writes: a replica syncs before its next read once the writer has committed, so the caller's next
        // read here sees it.
        if (outcome.answer?.ok) this.svc.db.syncBeforeNextRead();
        if (outcome.answer) return outcome.answer;
        if (outcome.reached && !resendable) return { ok: false, error: noWriter(), headers: call.headers };
      }
      if (Date.now() >= deadline) return { ok: false, error: noWriter(), headers: call.headers };
      await Bun.sleep(RENEW_MS / 4);
      await this.tick();
    }
  }

  /** What this instance sends the writer at url: JSON to one of PEER_PATHS, with the shared secret. */
  private toWriter(url: string, path: string, body: unknown): Promise<Response> {
    return fetch(`${url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${this.settings.secret}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
  }

  // reached: the writer may have begun the call (the connection failed after the request went out).
  private async post(url: string, sent: SentCall): Promise<{ answer?: CallResult; reached: boolean }> {
    let res: Response;
    try {
      res = await this.toWriter(url, PEER_CALL_PATH, sent);
    } catch (err) {
      const code = (err as { code?: string }).code ?? "";
      return { reached: !/ConnectionRefused|ECONNREFUSED/i.test(code) };
    }
    // 409: the instance there no longer writes (its lease ran out); nothing of the call ran.
    if (res.status === 409) return { reached: false };
    if (!res.ok) return { reached: true };
    return { answer: fromWire((await res.json()) as WireResult), reached: true };
  }

  /**
   * LastUse's forward: false when this instance writes (it writes them itself); else the writer has taken them. Thrown
   * when no writer takes them now: they are kept for the next flush, never written here.
   */
  readonly forwardLastUses = async (uses: [string, string][]): Promise<boolean> => {
    if (this.writes) return false;
    const lease = this.lease;
    if (!lease || lease.until <= Date.now()) throw new Error("no instance holds the writer lease now; the last uses are kept for the next flush");
    const res = await this.toWriter(lease.url, PEER_LAST_USE_PATH, uses);
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`the writer at ${lease.url} did not take the last uses (HTTP ${res.status}); kept for the next flush`);
    return true;
  };

  /**
   * A request this instance cannot answer without writing (hand-over.ts), answered by the writer: sent as it came,
   * with the client's address and the shared secret, its answer passed back as it is (redirects and cookies too).
   */
  async handOver(req: Request, clientAddress: string, requestId: string): Promise<Response> {
    const lease = this.lease;
    if (this.writes || !lease || lease.until <= Date.now()) return failure(this.svc, noWriter(), requestId);
    const url = new URL(req.url);
    const headers = new Headers(req.headers);
    headers.delete("host");
    headers.set(PEER_SECRET_HEADER, this.settings.secret);
    headers.set(PEER_CLIENT_HEADER, clientAddress);
    let res: Response;
    try {
      res = await fetch(`${lease.url}${url.pathname}${url.search}`, {
        method: req.method,
        headers,
        body: req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer(),
        redirect: "manual",
        signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      });
    } catch {
      return failure(this.svc, noWriter(), requestId);
    }
    // The body arrives decoded: its encoding and length no longer describe it.
    const out = new Headers(res.headers);
    out.delete("content-encoding");
    out.delete("content-length");
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out });
  }

  /** The client's address of a request another instance handed over (null for any other request). */
  handedOverFrom(req: Request): string | null {
    const given = req.headers.get(PEER_SECRET_HEADER);
    const client = req.headers.get(PEER_CLIENT_HEADER);
    return given !== null && client !== null && sameSecret(given, this.settings.secret) ? client : null;
  }

  /** The writer's side: what another instance sent (PEER_PATHS), taken if this instance holds the lease. */
  async receive(req: Request): Promise<Response> {
    const given = req.headers.get("authorization")?.replace(/^Bearer\s+/i, "") ?? "";
    if (req.method !== "POST" || !sameSecret(given, this.settings.secret)) return new Response("forbidden", { status: 403 });
    if (!this.writes) return new Response("not the writer", { status: 409 });
    const path = new URL(req.url).pathname;
    if (path === PEER_LAST_USE_PATH) {
      const uses = LastUses.safeParse(await req.json().catch(() => null));
      if (!uses.success) return new Response("a list of [client id, time] pairs", { status: 400 });
      for (const [clientId, at] of uses.data) this.svc.lastUse.note(clientId, new Date(at));
      return new Response(null, { status: 204 });
    }
    if (path !== PEER_CALL_PATH) return new Response("not found", { status: 404 });
    const sent = (await req.json()) as SentCall;
    if (!findTool(sent.name)) return new Response("no such tool", { status: 400 });
    return Response.json(toWire(await runSent(this.svc, sent)));
  }

  async metrics(): Promise<MetricsState[]> {
    return [];
  }

  faultChanged(): void {}

  /**
   * Stops writing for the others (a call sent now is answered 409, and its sender finds the next writer) and hands
   * the lease back, so that another instance takes it at its next renewal rather than once it runs out.
   */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.ticking;
    const held = this.writes;
    this.leaving = true;
    this.lease = null;
    if (!held) return;
    await this.db
      .tx((tx) => tx.run(sql`UPDATE writer_lease SET lease_until = ${new Date().toISOString()} WHERE id = 1 AND holder = ${this.id}`))
      .catch((err) => this.ops?.log.warn("the writer lease could not be handed back; it runs out on its own", { error: describeCause(err) }));
  }
}

async function readLease(tx: Tx): Promise<Lease | null> {
  const row = await tx.get<[string, string, string] | undefined>(sql`SELECT holder, url, lease_until FROM writer_lease WHERE id = 1`);
  return row ? { holder: row[0], url: row[1], until: Date.parse(row[2]) } : null;
}
