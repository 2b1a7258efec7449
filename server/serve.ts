import { describeUrl, localFilePath, openDb, type Db } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
import { recordSettings } from "./recorded-settings.ts";
import { ensureSigningKey } from "./auth/jwt.ts";
import { ensureFormKey, readFormKey } from "./web/session.ts";
import { createApp } from "./app.ts";
import { limitAddress, TrustedProxies } from "./client-address.ts";
import { type Member, type PrimaryLink, Workers } from "./cluster.ts";
import { ConfigError, DEFAULTS, type ServerConfig } from "./config.ts";
import { type Admission, ConnectionCap, closing, tooManyConnections } from "./connections.ts";
import { JOBS } from "./jobs/index.ts";
import { scheduledBackups } from "./jobs/backups.ts";
import { fetchExchangeRates } from "./jobs/exchange-rates.ts";
import { sendEmail, smtpSender } from "./jobs/email.ts";
import { describeCause, storageFault } from "./errors.ts";
import { LastUse } from "./auth/last-use.ts";
import { JobRunner } from "./jobs/runner.ts";
import { ensureFederationKey } from "./federation/keys.ts";
import { startSender } from "./federation/outbox.ts";
import { addressProblem } from "./auth/safe-fetch.ts";
import { writeAudit } from "./observability/audit.ts";
import { createLogger, logCall } from "./observability/logs.ts";
import { Metrics } from "./observability/metrics.ts";
import { Ops } from "./observability/ops.ts";
import { raiseOpenFileLimit } from "./open-files.ts";
import { RateLimiter } from "./rate-limit.ts";
import type { Services } from "./services.ts";
import { noticeClientConnected } from "./domain/clients.ts";

export interface RunningServer {
  url: string;
  port: number;
  db: Db;
  services: Services;
  /** The clients' last use, written in batches. */
  lastUse: LastUse;
  ops: Ops;
  jobs: JobRunner;
  connections: ConnectionCap;
  /** The limits on open files after start (null where unknown). */
  openFiles: { soft: number; hard: number } | null;
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
  let trusted: TrustedProxies;
  try {
    trusted = new TrustedProxies(config.trustedProxies);
  } catch (err) {
    throw new ConfigError(`trusted proxies: ${(err as Error).message}`);
  }
  if (config.federation?.allowLoopback && !(config.host === "localhost" || addressProblem(config.host) === "loopback")) {
    throw new ConfigError("--federation-allow-loopback is for tests: the server must listen on a loopback address (--host 127.0.0.1)");
  }
  const backupFrom = config.backups && backupSource(config);
  const idleTimeout = config.idleTimeoutSeconds ?? DEFAULTS.idleTimeoutSeconds;
  const connections = new ConnectionCap(config.maxConnectionsPerAddress ?? DEFAULTS.maxConnectionsPerAddress, idleTimeout * 1000);
  const openFiles = raiseOpenFileLimit();
  const workerCount = (config.workers?.count ?? 1) - 1;
  // This process's part in a server of several: the primary starts the workers, a worker links to the primary.
  const cluster: Member | undefined = toPrimary ?? (workerCount > 0 ? new Workers(workerCount, config.workers!.command) : undefined);
  const log = createLogger(config.logLevel ?? "silent", toPrimary?.writeLine, config.logFormat);
  const metrics = new Metrics();
  const db = await openDb({
    url: config.dbUrl,
    authToken: config.authToken,
    syncUrl: config.syncUrl,
    syncIntervalSeconds: config.syncIntervalSeconds,
    processes: config.workers?.count,
    observeTx: (ms, _ok, kind) => metrics.dbTx.observe(ms / 1000, { kind }),
    observeCatchUp: (result) => metrics.replicaCatchUps.inc({ result }),
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
  if (!toPrimary && config.federation && config.federation.mode !== "off") await db.tx((tx) => ensureFederationKey(tx, config.clock.now()));
  const formKey = await db.read(readFormKey);
  // Processes of one server on one machine share its port and their rate limiters' counts.
  const several = cluster !== undefined;
  const lastUse = new LastUse(db);
  const services: Services = {
    db,
    config,
    formKey,
    limiter: new RateLimiter(() => config.clock.now().getTime(), several),
    lastUse,
    clientConnected: noticeClientConnected,
  };
  const ops = new Ops(services, log, metrics, cluster);
  services.audit = (entry, address) => writeAudit(log, entry, address);
  services.observe = (e) => {
    metrics.recordCall(e);
    logCall(log, e);
    if (e.audit) services.audit?.({ agent_id: e.agentId ?? undefined, ...e.audit }, e.clientAddress?.() ?? "");
    if (e.sqliteCode) ops.storageFailed(e.sqliteCode);
    else if (e.wrote) ops.wrote();
  };
  const jobs = new JobRunner(
    db,
    config.clock,
    [
      ...JOBS,
      ...(config.ratesUrl ? [fetchExchangeRates(config.ratesUrl, config.fetchRates)] : []),
      ...(config.backups && backupFrom ? [scheduledBackups(backupFrom, config.backups)] : []),
      ...(config.smtpUrl && config.mailFrom
        ? [
            sendEmail(
              db,
              () => ({ baseUrl: config.baseUrl, perHour: config.mailPerHour ?? DEFAULTS.mailPerHour, key: formKey }),
              smtpSender(config.smtpUrl, config.mailFrom),
              (f) => log.warn("e-mail not sent", f),
            ),
          ]
        : []),
    ],
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
  // A sign-in link is waited for: the process that runs the jobs sends it at once (a worker's waits for the next run).
  if (config.smtpUrl && !toPrimary) services.wakeEmail = () => jobs.runSoon("email");
  const handle = createApp(services, ops);
  // A shared port would also let in another server started on it by mistake: the first process takes it alone first.
  if (workerCount > 0 && config.port !== 0) Bun.serve({ hostname: config.host, port: config.port, fetch: () => new Response() }).stop(true);
  const server = Bun.serve({
    hostname: config.host,
    port: config.port,
    // Larger than the 1 MiB body limit so oversized bodies get the error envelope, not a dropped connection.
    maxRequestBodySize: 16 * 1024 * 1024,
    // Bun's default of 10 s would reset a browser posting a form on a connection just then; 120 s held each idle
    // socket so long that one address could take every file descriptor. Proxies should idle out first (docs).
    idleTimeout,
    // The processes of one server share its port; the kernel spreads new connections over them.
    reusePort: several,
    fetch: async (req, srv) => {
      const peer = srv.requestIP(req);
      const address = peer?.address ?? "unknown";
      const port = peer?.port ?? 0;
      // The proxies' own connections carry everyone's requests: the cap is for the clients behind them.
      const exempt = trusted.any && trusted.trusts(address);
      const admission: Admission = exempt ? "keep" : connections.admit(address, port);
      if (admission === "refuse") return tooManyConnections(connections.cap);
      try {
        // Looked up only by what needs it (the limits of public calls and pages): the forwarding headers are parsed,
        // and an IPv6 client counts as its /64.
        const res = await handle(req, () => limitAddress(trusted.clientAddress(address, req.headers)));
        return admission === "close" ? closing(res) : res;
      } finally {
        if (!exempt) connections.done(address, port, admission);
      }
    },
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
  if (!toPrimary) {
    await db.tx(async (tx) => {
      await ensureSigningKey(tx, config.baseUrl, config.clock.now());
      await recordSettings(tx, { base_url: config.baseUrl }, config.clock.now());
    });
  }
  const federating = config.federation && config.federation.mode !== "off" && !toPrimary;
  const sender = federating
    ? startSender(
        db,
        config,
        (err) => log.error("federation send failed", { error: err instanceof Error ? err.message : String(err) }),
        // A peer that refuses, throttles, fails or never answers shows per peer, not only as mail that is late.
        (f) => {
          metrics.federationSendFailures.inc({ peer: f.peer, outcome: f.outcome });
          log.warn("federation transaction not taken", { peer: f.peer, outcome: f.outcome, status: f.status, attempts: f.attempts, next_try_at: f.nextTryAt });
        },
      )
    : undefined;
  // Workers listen on the port this process got (port 0 asks the system for one).
  config.port = port;
  const workers = cluster instanceof Workers ? cluster : undefined;
  await cluster?.start(services, ops).catch(async (err) => {
    await workers?.stop().exited;
    server.stop(true);
    await db.close();
    throw err;
  });
  if (config.jobIntervalMs && !toPrimary) jobs.start(config.jobIntervalMs);
  lastUse.start((err) => log.warn("writing clients' last use failed; kept for the next try", { error: describeCause(err) }));
  let stopping: Promise<void> | undefined;
  return {
    url: `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`,
    port,
    db,
    services,
    lastUse,
    ops,
    jobs,
    connections,
    openFiles,
    stop(closed) {
      stopping ??= (async () => {
        ops.draining = true;
        // Every process stops accepting at once.
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
        await sender?.stop();
        await lastUse.stop().catch((err) => log.warn("writing clients' last use failed", { error: describeCause(err) }));
        await db.close();
        log.info("stopped");
      })();
      return stopping;
    },
  };
}

/** The file --backup-dir copies: a local database's, or an embedded replica's own file. */
function backupSource(config: ServerConfig): string {
  const path = localFilePath(config.dbUrl);
  if (!path) throw new ConfigError(`--backup-dir backs up a local database file; ${describeUrl(config.dbUrl)} is not one (back up the primary where it runs).`);
  return path;
}
