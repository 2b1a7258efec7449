// Runs background jobs in-process. Several instances may share one database: a job runs only in the
// instance that moved its lease row forward, and its effects and the lease release commit together.
import { and, eq, sql } from "drizzle-orm";
import { hostname } from "node:os";
import type { Db } from "../../db/client.ts";
import { takeLease } from "./leases.ts";
import { instances, jobLeases } from "../../db/schema/index.ts";
import { MINUTE, iso, later, type Clock } from "../clock.ts";
import type { Job } from "./index.ts";

/** A run that crashed holds its job this long before another instance may retry it. */
export const LEASE_MS = 5 * MINUTE;
/** An instance not seen for this long is taken to be gone (restore refuses to replace a database in use). */
export const INSTANCE_STALE_MS = 5 * MINUTE;

export interface JobOutcome {
  job: string;
  /** Rows the job changed, or the error that stopped it. */
  count?: number;
  error?: unknown;
}

export class JobRunner {
  readonly instanceId = crypto.randomUUID();
  private timer: ReturnType<typeof setInterval> | undefined;
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly jobs: readonly Job<any>[],
    private readonly onOutcome: (o: JobOutcome) => void = () => {},
    /** Called each time this instance's row was refreshed: a write committed. */
    private readonly onHeartbeat: () => void = () => {},
  ) {}

  // Whether this instance has a row to remove when it stops.
  private beat = false;

  /** Runs every job that is due and whose lease this instance obtains; returns what ran. */
  async runDue(): Promise<JobOutcome[]> {
    const outcomes: JobOutcome[] = [];
    await this.heartbeat();
    this.beat = true;
    this.onHeartbeat();
    for (const job of this.jobs) {
      if (!(await this.takeLease(job))) continue;
      const outcome = await this.runHeld(job);
      this.onOutcome(outcome);
      outcomes.push(outcome);
    }
    return outcomes;
  }

  /**
   * Runs one job soon, whether or not it is due (an e-mail with a sign-in link was just written): after the run in
   * progress, if this instance obtains its lease. Its next run is then counted from this one.
   */
  runSoon(name: string): void {
    const job = this.jobs.find((j) => j.name === name);
    if (!job) return;
    this.running = this.running
      .then(async () => {
        if (await this.takeLease(job, true)) this.onOutcome(await this.runHeld(job));
      })
      .catch((error) => this.onOutcome({ job: job.name, error }));
  }

  /** Settles once no run this instance started (a tick, runSoon) is in progress. */
  async idle(): Promise<void> {
    let seen: Promise<unknown>;
    do {
      seen = this.running;
      await seen;
    } while (seen !== this.running);
  }

  /** Ticks every intervalMs of real time; ticks never overlap. */
  start(intervalMs: number): void {
    const tick = () => {
      this.running = this.running.then(() => this.runDue()).catch((error) => this.onOutcome({ job: "(runner)", error }));
    };
    tick();
    this.timer = setInterval(tick, intervalMs);
  }

  /** Stops ticking, waits for a run in progress, and removes this instance's row. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    if (this.beat) await this.db.tx((tx) => tx.delete(instances).where(eq(instances.instanceId, this.instanceId)));
  }

  private heartbeat() {
    const now = iso(this.clock.now());
    return this.db.tx((tx) =>
      tx
        .insert(instances)
        .values({ instanceId: this.instanceId, host: hostname(), startedAt: now, seenAt: now })
        .onConflictDoUpdate({ target: instances.instanceId, set: { seenAt: now } }),
    );
  }

  private takeLease(job: Job<any>, early = false): Promise<boolean> {
    const now = this.clock.now();
    return this.db.tx((tx) => takeLease(tx, job.name, this.instanceId, now, LEASE_MS, !early));
  }

  private async runHeld(job: Job<any>): Promise<JobOutcome> {
    const now = this.clock.now();
    try {
      // Never inside the transaction: a slow fetch would hold the database's writer.
      const prepared = job.prepare ? await job.prepare(now) : undefined;
      const count = await this.db.tx(async (tx) => {
        const n = await job.run(tx, now, prepared);
        await tx
          .update(jobLeases)
          .set({ leaseUntil: iso(now), nextRunAt: later(now, job.everyMs), lastRunAt: iso(now), lastCount: n, holder: null })
          .where(and(eq(jobLeases.name, job.name), eq(jobLeases.holder, this.instanceId)));
        return n;
      });
      return { job: job.name, count };
    } catch (error) {
      // The lease stays until it expires, which spaces out retries of a failing job.
      return { job: job.name, error };
    }
  }
}

/** Instances that refreshed their row within INSTANCE_STALE_MS of now. */
export async function liveInstances(db: Db, now: Date) {
  const since = iso(new Date(now.getTime() - INSTANCE_STALE_MS));
  return db.tx((tx) => tx.select().from(instances).where(sql`${instances.seenAt} > ${since}`));
}
