import { openDb, type Db } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
import { ensureSigningKey } from "./auth/jwt.ts";
import { ensureFormKey, readFormKey } from "./web/session.ts";
import { createApp } from "./app.ts";
import { type PrimaryLink, Workers } from "./cluster.ts";
import type { ServerConfig } from "./config.ts";
import { JOBS } from "./jobs/index.ts";
import { storageFault } from "./errors.ts";
import { JobRunner } from "./jobs/runner.ts";
import { createLogger, logCall } from "./observability/logs.ts";
import { Metrics } from "./observability/metrics.ts";
import { Ops } from "./observability/ops.ts";
import { RateLimiter } from "./rate-limit.ts";
import type { Services } from "./services.ts";

export interface RunningServer {
  url: string;
  port: number;
  db: Db;
  services: Services;
  ops: Ops;
  jobs: JobRunner;
  /**
   * Stops accepting, lets requests in flight finish (bounded), stops the jobs, closes the database. `closed` is called
   * once no process of the server accepts connections any more.
   */
  stop(closed?: () => void): Promise<void>;
}

const SHUTDOWN_TIMEOUT_MS = 10_000;

/**
 * Opens the database, applies pending migrations and listens; with config.workers, starts the other processes of the
 * server (server/cluster.ts). A worker (given its link toPrimary) neither migrates nor runs jobs.
 */
export async function startServer(config: ServerConfig, toPrimary?: PrimaryLink): Promise<RunningServer> {
  const log = createLogger(config.logLevel ?? "silent");
  const metrics = new Metrics();
  const db = await openDb({
    url: config.dbUrl,
    authToken: config.authToken,
    syncUrl: config.syncUrl,
    syncIntervalSeconds: config.syncIntervalSeconds,
    processes: config.workers?.count,
    observeTx: (ms) => metrics.dbTx.observe(ms / 1000),
  });
  const applied = toPrimary
    ? []
    : await migrate(db.raw).catch(async (err) => {
        await db.close();
        throw err;
      });
  if (applied.length) log.info("migrations applied", { migrations: applied.map((m) => m.name).join(",") });
  // The server's own keys are made here, once, so that no request has to write them (a GET never writes); the
  // token signing key once the base URL is known, below.
  if (!toPrimary) await db.tx((tx) => ensureFormKey(tx, config.clock.now()));
  const formKey = await db.read(readFormKey);
  const workerCount = (config.workers?.count ?? 1) - 1;
  const several = workerCount > 0 || toPrimary !== undefined;
  const services: Services = { db, config, formKey, limiter: new RateLimiter(() => config.clock.now().getTime(), several), forward: toPrimary?.forward };
  const ops = new Ops(services, log, metrics);
  services.observe = (e) => {
    metrics.recordCall(e);
    logCall(log, e);
    if (e.sqliteCode) ops.storageFailed(e.sqliteCode);
    else if (e.wrote) ops.wrote();
  };
  const jobs = new JobRunner(
    db,
    config.clock,
    JOBS,
    (o) => {
      metrics.jobRuns.inc({ job: o.job, result: o.error ? "error" : "ok" });
      if (o.error) {
        const sqliteCode = storageFault(o.error) ?? undefined;
        if (sqliteCode) ops.storageFailed(sqliteCode);
        log.error("job failed", { job: o.job, error: o.error instanceof Error ? o.error.message : String(o.error), sqlite_code: sqliteCode });
      } else {
        ops.wrote();
        metrics.jobRows.inc({ job: o.job }, o.count);
        if (o.count) log.info("job ran", { job: o.job, rows: o.count });
      }
    },
    // The heartbeat is a write every run: a server that met a storage fault is ready again once it commits.
    () => ops.wrote(),
  );
  const handle = createApp(services, ops);
  // A shared port would also let in another server started on it by mistake: the first process takes it alone first.
  if (workerCount > 0 && config.port !== 0) Bun.serve({ hostname: config.host, port: config.port, fetch: () => new Response() }).stop(true);
  const server = Bun.serve({
    hostname: config.host,
    port: config.port,
    // Larger than the 1 MiB body limit so oversized bodies get the error envelope, not a dropped connection.
    maxRequestBodySize: 16 * 1024 * 1024,
    // Bun closes a kept-alive connection after 10 idle seconds by default; a browser that posts a form on it just
    // then gets a reset and an error page instead of the answer. Longer than a person pauses on a form.
    idleTimeout: 120,
    // The processes of one server share its port; the kernel spreads new connections over them.
    reusePort: several,
    // The address is looked up only by what needs it (rate limits of public calls and pages): it costs a native call.
    fetch: (req, srv) => handle(req, () => srv.requestIP(req)?.address ?? "unknown"),
    error: () =>
      new Response(
        JSON.stringify({
          ok: false,
          error: { code: "INTERNAL", message: "Something went wrong on the server.", suggested_action: "Retry later." },
          request_id: crypto.randomUUID(),
        }),
        { status: 500, headers: { "Content-Type": "application/json" } },
      ),
  });
  const port = server.port!;
  if (!config.baseUrl) config.baseUrl = `http://${config.host}:${port}`;
  if (!toPrimary) await db.tx((tx) => ensureSigningKey(tx, config.baseUrl, config.clock.now()));
  // Workers listen on the port this process got (port 0 asks the system for one).
  config.port = port;
  let workers: Workers | undefined;
  if (toPrimary) {
    toPrimary.share(services.limiter, ops);
    ops.peers = toPrimary.peers;
    toPrimary.ready();
  } else if (workerCount > 0) {
    const started = new Workers(services, ops, workerCount, config.workers!.command);
    workers = started;
    ops.peers = async () => started.peers();
    await workers.start().catch(async (err) => {
      await workers!.stop().exited;
      server.stop(true);
      await db.close();
      throw err;
    });
  }
  if (config.jobIntervalMs && !toPrimary) jobs.start(config.jobIntervalMs);
  let stopping: Promise<void> | undefined;
  return {
    url: `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`,
    port,
    db,
    services,
    ops,
    jobs,
    stop(closed) {
      stopping ??= (async () => {
        ops.draining = true;
        // Every process stops accepting at once; the database stays open until the workers are gone, since their
        // requests in flight may still hand writes to this process.
        const stoppingWorkers = workers?.stop();
        await stoppingWorkers?.closed;
        const draining = server.stop(); // the listener closes now; this settles once requests in flight are answered
        toPrimary?.closed();
        closed?.();
        const limit = config.shutdownTimeoutMs ?? SHUTDOWN_TIMEOUT_MS;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const drained = await Promise.race([draining.then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), limit)))]);
        clearTimeout(timer);
        if (!drained) {
          log.warn("requests still running at the shutdown limit; closing their connections", { limit_ms: limit });
          await server.stop(true);
        }
        await stoppingWorkers?.exited;
        // A failure here must not keep the database open; the instance row then goes stale on its own.
        await jobs.stop().catch((err) => log.warn("stopping jobs failed", { error: err instanceof Error ? err.message : String(err) }));
        await db.close();
        log.info("stopped");
      })();
      return stopping;
    },
  };
}
