// What an operator's tooling reads: readiness for load balancers and Prometheus metrics.
import { timingSafeEqual } from "node:crypto";
import { sql } from "drizzle-orm";
import { migrationStatus, refusal } from "../../db/migrate.ts";
import { inboxItems } from "../../db/schema/index.ts";
import { json } from "../adapters/http.ts";
import { bearerToken } from "../auth/authenticate.ts";
import { AppError, describeCause, storageFault } from "../errors.ts";
import type { Services } from "../services.ts";
import type { Logger } from "./logs.ts";
import { Metrics, type MetricsState } from "./metrics.ts";

/** A readiness check that takes longer than this counts as a failure: the database is not answering. */
const READY_TIMEOUT_MS = 2_000;

/** The other processes of the server, as readiness and metrics need them (server/cluster.ts). */
export interface Peers {
  /** Their metrics. */
  metrics(): Promise<MetricsState[]>;
  /** Tells them this process met a storage fault, or saw it end. */
  faultChanged(sqliteCode: string | null): void;
}

export class Ops {
  /** Set when shutdown begins, so load balancers stop sending traffic before the listener closes. */
  draining = false;
  /** The SQLite code of the last storage fault (full, I/O error, read-only), until a write commits again. */
  storageFault: string | null = null;

  constructor(
    private readonly svc: Services,
    readonly log: Logger,
    readonly metrics: Metrics,
    /** In a server of several processes (svc serve --workers): the others, whose metrics and faults are the server's. */
    private readonly peers?: Peers,
  ) {}

  /** A write, a job or a request failed on a storage fault: counted, and /readyz is not ready until a write commits. */
  storageFailed(sqliteCode: string): void {
    this.metrics.storageFaults.inc({ code: sqliteCode });
    this.faultIs(sqliteCode, true);
  }

  /** A write committed (a write tool's call, a job run, the instance heartbeat): the storage takes writes again. */
  wrote(): void {
    if (this.storageFault !== null) this.faultIs(null, true);
  }

  /** The storage fault as this process met it (own) or another process of the server told. */
  faultIs(sqliteCode: string | null, own = false): void {
    if (this.storageFault === sqliteCode) return;
    this.storageFault = sqliteCode;
    if (own) this.peers?.faultChanged(sqliteCode);
  }

  /** An unexpected error outside a tool call (web pages, OAuth endpoints): logged, and a storage fault noted. */
  serverError(err: unknown, requestId: string): void {
    const sqliteCode = storageFault(err);
    if (sqliteCode) this.storageFailed(sqliteCode);
    this.log.error("request failed", { request_id: requestId, cause: describeCause(err), sqlite_code: sqliteCode ?? undefined });
  }

  /** GET /readyz: 200 when the database answers and its migrations are exactly this binary's, else 503. */
  async readyz(requestId: string): Promise<Response> {
    const notReady = (reason: string) => json({ ok: false, ready: false, reason }, 503, requestId);
    if (this.draining) return notReady("shutting down");
    if (this.storageFault) return notReady(`storage fault: the database refused a write (${this.storageFault}); not ready for writes until one succeeds`);
    try {
      const status = await withTimeout(
        this.svc.db.exclusive((client) => migrationStatus(client)),
        READY_TIMEOUT_MS,
      );
      const refused = refusal(status);
      if (refused) return notReady(refused);
      if (status.pending.length) return notReady(`migrations pending: ${status.pending.map((m) => m.name).join(", ")}`);
      return json({ ok: true, ready: true, migrations: status.applied.length }, 200, requestId);
    } catch (err) {
      this.log.warn("readyz failed", { request_id: requestId, error: err instanceof Error ? err.message : String(err) });
      // An embedded replica whose primary does not answer still serves reads from its own file: ready, degraded, so
      // a load balancer keeps sending it the reads (writes answer 503 STORAGE_UNAVAILABLE until the primary is back).
      if (this.svc.db.mode === "replica" && (await withTimeout(this.svc.db.ping(), READY_TIMEOUT_MS).catch(() => null)) !== null) {
        return json(
          { ok: true, ready: true, degraded: "the primary does not answer: reads come from this replica, writes fail until it is back" },
          200,
          requestId,
        );
      }
      return notReady("database not reachable");
    }
  }

  /** GET /metrics: off (404) unless a metrics token is configured, and then only with that bearer token. */
  async metricsEndpoint(req: Request, requestId: string): Promise<Response> {
    const expected = this.svc.config.metricsToken;
    if (!expected)
      throw new AppError("NOT_FOUND", "Metrics are off on this server.", undefined, undefined, "Start svc serve with --metrics-token to expose /metrics.");
    const given = bearerToken(req.headers.get("authorization")) ?? "";
    if (!sameSecret(given, expected)) {
      throw new AppError("UNAUTHENTICATED", "The metrics token is missing or wrong.", undefined, undefined, "Send 'Authorization: Bearer <metrics token>'.");
    }
    const started = performance.now();
    const counts = await this.svc.db.read((tx) =>
      tx
        .select({
          unread: sql<number>`coalesce(sum(${inboxItems.seen} = 0), 0)`,
          requiresAction: sql<number>`coalesce(sum(${inboxItems.requiresAction} = 1 and ${inboxItems.resolved} = 0), 0)`,
        })
        .from(inboxItems)
        .where(sql`${inboxItems.dismissed} = 0`)
        .get(),
    );
    const pingMs = await this.svc.db.ping();
    this.log.debug("metrics scraped", { request_id: requestId, duration_ms: Math.round(performance.now() - started) });
    const body = (await this.serverMetrics()).render({
      inboxUnread: Number(counts?.unread ?? 0),
      inboxRequiresAction: Number(counts?.requiresAction ?? 0),
      dbPingSeconds: pingMs / 1000,
    });
    return new Response(body, {
      headers: { "Content-Type": "text/plain; version=0.0.4; charset=utf-8", "X-Request-Id": requestId, "Cache-Control": "no-store" },
    });
  }

  private async serverMetrics(): Promise<Metrics> {
    const peers = (await this.peers?.metrics()) ?? [];
    if (!peers.length) return this.metrics;
    const total = new Metrics();
    for (const state of [this.metrics.state(), ...peers]) total.add(state);
    return total;
  }
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
