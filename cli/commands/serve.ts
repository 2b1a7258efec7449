// svc serve's flags are read at every start of svc (for --help and the settings file's keys); the server itself is
// loaded only when it runs (the action's imports).
import { Command, InvalidArgumentError, Option } from "commander";
import { availableParallelism } from "node:os";
import { describeUrl } from "../../db/errors.ts";
import { systemClock } from "../../server/clock.ts";
import {
  ConfigError,
  DEFAULTS,
  FEDERATION_MODES,
  parseFederationLimits,
  LOG_LEVELS,
  parseCount,
  parseDuration,
  parsePeriod,
  parseIdleTimeout,
  parseTrustedProxies,
  serveConfig,
  parseQuota,
  parseWebhookUrl,
  parseMailFrom,
  QUOTA_NAMES,
  type Quotas,
  type ServerConfig,
} from "../../server/config.ts";
import { describeCause } from "../../server/errors.ts";
import type { RunningServer } from "../../server/serve.ts";
import { VERSION } from "../../server/version.ts";
import { parseRatesUrl } from "../../server/jobs/rates-url.ts";

export const dbOption = () => new Option("--db <url>", "libSQL database URL, e.g. file:/var/lib/svc/svc.db").env("SVC_DB").default(DEFAULTS.dbUrl);
export const authTokenOption = () => new Option("--auth-token <token>", "auth token for a remote libSQL or Turso database").env("SVC_AUTH_TOKEN");

/** A parser of server/config.ts as commander's: a bad value is a usage error. */
const flag =
  <T>(parse: (v: string) => T) =>
  (v: string): T => {
    try {
      return parse(v);
    } catch (err) {
      throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
    }
  };
const seconds = flag(parseDuration);
const int = flag(parseCount);
const positive = (v: string) => {
  const n = parseCount(v);
  if (n < 1) throw new InvalidArgumentError(`expected a whole number of at least 1, got "${v}"`);
  return n;
};
const quota = (v: string, before?: Partial<Quotas>) => flag((x) => parseQuota(x, before))(v);
const QUOTA_DEFAULTS = Object.entries(QUOTA_NAMES)
  .map(([name, field]) => `${name}=${DEFAULTS.quotas[field]}`)
  .join(", ");

// One process per core up to this many: every write runs in the first process, which past ~16 others spends its core
// relaying their writes, log lines and rate-limit counts; each one more also costs ~70 MB. A larger --workers is taken.
const AUTO_WORKERS_MAX = 16;
// Only Linux spreads the connections of one port over the processes listening on it (SO_REUSEPORT); on the BSDs
// and macOS the last process to listen would get them all.
const SHARES_PORTS = process.platform === "linux";
const workerCount = (v: string): number | "auto" => {
  if (v === "auto") return v;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected auto or a whole number of at least 1, got "${v}"`);
  return n;
};

export function serveCommand(): Command {
  return new Command("serve")
    .description("Run the svc server (REST, MCP and the web pages) on a database, applying pending migrations first")
    .addOption(new Option("--host <host>", "address to listen on").env("SVC_HOST").default(DEFAULTS.host))
    .addOption(new Option("--port <port>", "port to listen on").env("SVC_PORT").default(DEFAULTS.port).argParser(int))
    .addOption(dbOption())
    .addOption(authTokenOption())
    .addOption(new Option("--base-url <url>", "public URL used in every link the server writes (default: http://HOST:PORT)").env("SVC_BASE_URL"))
    .addOption(new Option("--invite-only", "require a platform invite code to register (env: SVC_INVITE_ONLY=1)"))
    .addOption(new Option("--rate-limit <n>", "calls per minute per credential").env("SVC_RATE_LIMIT").default(DEFAULTS.rateLimit).argParser(int))
    .addOption(
      new Option("--public-rate-limit <n>", "calls per minute per client address for public tools")
        .env("SVC_PUBLIC_RATE_LIMIT")
        .default(DEFAULTS.publicRateLimit)
        .argParser(int),
    )
    .addOption(new Option("--sync-url <url>", "embedded replica: the primary's libsql:// URL; --db is then the replica's local file").env("SVC_SYNC_URL"))
    .addOption(
      new Option("--sync-interval <duration>", "embedded replica: also sync in the background this often, e.g. 5s").env("SVC_SYNC_INTERVAL").argParser(seconds),
    )
    .addOption(
      new Option("--peer-secret <secret>", "not needed: every instance on one database writes its own batches; taken and ignored")
        .env("SVC_PEER_SECRET")
        .hideHelp(),
    )
    .addOption(new Option("--peer-url <url>", "not needed, as --peer-secret; taken and ignored").env("SVC_PEER_URL").hideHelp())
    .addOption(
      new Option(
        "--workers <n>",
        `processes serving the port (the first runs every write and the jobs): a number, or auto: one per core, at most ${AUTO_WORKERS_MAX}, on a local database file on Linux, else 1`,
      )
        .env("SVC_WORKERS")
        .default("auto")
        .argParser(workerCount),
    )
    .addOption(new Option("--worker", "how svc serve --workers starts each other process; its settings come from the first").hideHelp())
    .addOption(new Option("--metrics-token <token>", "serve Prometheus metrics at /metrics to this bearer token (off without it)").env("SVC_METRICS_TOKEN"))
    .addOption(
      new Option(
        "--log-level <level>",
        "JSON log lines on stdout from this level up (without it, on a terminal: one line saying where svc runs, then warnings and errors as text)",
      )
        .env("SVC_LOG_LEVEL")
        .choices(LOG_LEVELS)
        .default(DEFAULTS.logLevel),
    )
    .addOption(
      new Option("--shutdown-timeout <duration>", "on SIGTERM or SIGINT, wait this long for requests in flight")
        .env("SVC_SHUTDOWN_TIMEOUT")
        .default(DEFAULTS.shutdownTimeoutSeconds, `${DEFAULTS.shutdownTimeoutSeconds}s`)
        .argParser(seconds),
    )
    .addOption(new Option("--oidc-issuer <url>", "OpenID Connect provider humans may sign in with on the web pages (issuer URL)").env("SVC_OIDC_ISSUER"))
    .addOption(new Option("--oidc-client-id <id>", "this server's client id at the OpenID Connect provider").env("SVC_OIDC_CLIENT_ID"))
    .addOption(new Option("--oidc-client-secret <secret>", "this server's client secret at the OpenID Connect provider").env("SVC_OIDC_CLIENT_SECRET"))
    .addOption(
      new Option(
        "--reserved-handles <list>",
        "handles no one may register, besides admin, administrator, root, security, support, svc and system (comma-separated)",
      ).env("SVC_RESERVED_HANDLES"),
    )
    .addOption(
      new Option(
        "--trusted-proxy <cidrs>",
        "reverse proxies (addresses or CIDR ranges, comma-separated) whose X-Forwarded-For or Forwarded header names the client",
      )
        .env("SVC_TRUSTED_PROXIES")
        .argParser(flag(parseTrustedProxies)),
    )
    .addOption(
      new Option("--idle-timeout <duration>", "close a kept-alive connection idle this long (1s to 255s)")
        .env("SVC_IDLE_TIMEOUT")
        .default(DEFAULTS.idleTimeoutSeconds, `${DEFAULTS.idleTimeoutSeconds}s`)
        .argParser(flag(parseIdleTimeout)),
    )
    .addOption(
      new Option("--max-connections-per-address <n>", "connections, and requests in flight, per client address, trusted proxies exempt (0: no cap)")
        .env("SVC_MAX_CONNECTIONS_PER_ADDRESS")
        .default(DEFAULTS.maxConnectionsPerAddress)
        .argParser(int),
    )
    .addOption(
      new Option("--agent-rate-limit <n>", "calls per minute per agent, all its clients together")
        .env("SVC_AGENT_RATE_LIMIT")
        .default(DEFAULTS.agentRateLimit)
        .argParser(int),
    )
    .addOption(
      new Option("--quota <name=value>", `a per-agent quota, repeatable (env SVC_QUOTAS: name=value,name=value); defaults: ${QUOTA_DEFAULTS}`).argParser(quota),
    )
    .addOption(
      new Option("--sms-webhook <url>", "send SMS through this URL (svc POSTs {to, text} JSON): humans may then verify a phone and sign in by it")
        .env("SVC_SMS_WEBHOOK")
        .argParser(flag(parseWebhookUrl)),
    )
    .addOption(
      new Option("--sms-per-hour <n>", "text messages the whole server may send in any hour (besides the limits per handle, number and address)")
        .env("SVC_SMS_PER_HOUR")
        .default(DEFAULTS.smsPerHour)
        .argParser(int),
    )
    .addOption(
      new Option(
        "--smtp-url <url>",
        "send e-mail to people through this SMTP server: smtp:// or smtps://, with user:password@ where it asks (off without it; needs --mail-from)",
      )
        // Checked by serveConfig, whose refusal does not repeat the URL (it holds a password); an argParser's would.
        .env("SVC_SMTP_URL"),
    )
    .addOption(
      new Option("--mail-from <address>", 'with --smtp-url: the From of every e-mail, e.g. "svc <svc@example.org>"')
        .env("SVC_MAIL_FROM")
        .argParser(flag(parseMailFrom)),
    )
    .addOption(
      new Option("--mail-per-hour <n>", "e-mails the whole server may send in any hour (besides the limits per address)")
        .env("SVC_MAIL_PER_HOUR")
        .default(DEFAULTS.mailPerHour)
        .argParser(int),
    )
    .addOption(
      new Option(
        "--rates-url <url>",
        "fetch reference exchange rates from this eurofxref XML file (e.g. https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml); exchange_rate is then optional when a rate for the date is known",
      )
        .env("SVC_RATES_URL")
        .argParser(flag(parseRatesUrl)),
    )
    .addOption(
      new Option("--attachment-max-bytes <n>", "bytes of one file (receipt) kept with an expense")
        .env("SVC_ATTACHMENT_MAX_BYTES")
        .default(DEFAULTS.attachmentMaxBytes)
        .argParser(int),
    )
    .addOption(
      new Option("--group-attachment-bytes <n>", "bytes of all the files kept in one group")
        .env("SVC_GROUP_ATTACHMENT_BYTES")
        .default(DEFAULTS.groupAttachmentBytes)
        .argParser(int),
    )
    .addOption(
      new Option("--federation <mode>", "exchange with other svc servers: off, allowlist (only --federation-peers) or open (docs/federation.md)")
        .env("SVC_FEDERATION")
        .choices(FEDERATION_MODES)
        .default("off"),
    )
    .addOption(
      new Option("--federation-peers <hosts>", "servers allowed in allowlist mode, comma-separated (b.example,127.0.0.1:8702)").env("SVC_FEDERATION_PEERS"),
    )
    .addOption(new Option("--federation-block <hosts>", "servers refused in every mode, comma-separated").env("SVC_FEDERATION_BLOCK"))
    .addOption(
      new Option("--federation-allow-loopback", "tests only: plain HTTP to loopback peers; refuses to start unless listening on loopback").env(
        "SVC_FEDERATION_ALLOW_LOOPBACK",
      ),
    )
    .addOption(
      new Option(
        "--federation-limits <name=value,...>",
        "per other server once its signature verifies: txns and events a minute, contact_requests and code_guesses an hour; per client address: txns_per_address and key_fetches_per_address a minute (docs/federation.md)",
      )
        .env("SVC_FEDERATION_LIMITS")
        .argParser(flag(parseFederationLimits)),
    )
    .addOption(
      new Option("--backup-dir <path>", "also back up a local database file into this directory on a schedule (checked like svc backup)").env("SVC_BACKUP_DIR"),
    )
    .addOption(
      new Option("--backup-every <period>", "with --backup-dir: how often, e.g. 6h or 1d")
        .env("SVC_BACKUP_EVERY")
        .default(DEFAULTS.backupEveryMs, "1d")
        .argParser(flag(parsePeriod)),
    )
    .addOption(
      new Option("--backup-keep <n>", "with --backup-dir: how many of the newest backups to keep")
        .env("SVC_BACKUP_KEEP")
        .default(DEFAULTS.backupKeep)
        .argParser(flag(positive)),
    )
    .addOption(new Option("--federation-test-timing <ms>", "tests only: first retry wait in ms, short lease and pass interval").argParser(int).hideHelp())
    .addHelpText(
      "after",
      "\nExamples:\n  svc serve --port 8787 --db file:./data/svc.db --base-url https://svc.example.org\n" +
        "  svc serve --db libsql://svc-you.turso.io --auth-token $TOKEN\n" +
        "  svc serve --db file:/var/lib/svc/replica.db --sync-url libsql://svc-you.turso.io --auth-token $TOKEN --sync-interval 5s\n",
    )
    .action(async (o, cmd: Command) => {
      const [{ startServer }, { localFilePath }] = await Promise.all([import("../../server/serve.ts"), import("../../db/client.ts")]);
      if (o.worker) {
        const { connectToPrimary } = await import("../../server/cluster.ts");
        const toPrimary = await connectToPrimary();
        // Ctrl-C reaches every process of the terminal's group: the first one stops the others in order.
        process.on("SIGINT", () => {});
        await stopOnSignals(startServer(toPrimary.config, toPrimary), ["SIGTERM"]);
        return;
      }
      let config: ServerConfig;
      try {
        config = serveConfig(o, systemClock);
      } catch (err) {
        if (err instanceof ConfigError) throw new InvalidArgumentError(err.message);
        throw err;
      }
      // A person at a terminal gets one line saying where the server is, and only warnings and errors after it, as
      // text; asking for a log level (flag or SVC_LOG_LEVEL), or output to a file or a collector, keeps JSON lines.
      const forPerson = Boolean(process.stdout.isTTY) && cmd.getOptionValueSource("logLevel") === "default";
      if (forPerson) Object.assign(config, { logLevel: "warn", logFormat: "text" });
      const workers = o.workers === "auto" ? autoWorkers(config, localFilePath) : (o.workers as number);
      if (workers > 1 && !SHARES_PORTS)
        throw new InvalidArgumentError(`--workers above 1 needs Linux, where processes can share a port; here (${process.platform}) svc serve runs one`);
      if (workers > 1) config.workers = { count: workers, command: [...selfCommand(), "serve", "--worker"] };
      const server = await stopOnSignals(startServer(config), ["SIGTERM", "SIGINT"]);
      if (o.peerSecret || o.peerUrl) {
        server.ops.log.warn("--peer-secret and --peer-url are not needed any more and are ignored: every instance on one database writes its own batches");
      }
      server.ops.log.info(`svc listening on ${server.url}`, {
        version: VERSION,
        url: server.url,
        database: describeUrl(config.dbUrl),
        mode: server.db.mode,
        base_url: config.baseUrl,
        metrics: Boolean(config.metricsToken),
        trusted_proxies: config.trustedProxies?.join(","),
        idle_timeout_s: config.idleTimeoutSeconds,
        max_connections_per_address: config.maxConnectionsPerAddress,
        // What bounds the connections of the process as a whole.
        open_files: server.openFiles?.soft,
      });
      if (forPerson) {
        // The second line alone, so it can be copied (test/cli/quickstart.test.ts reads it).
        process.stdout.write(
          `svc ${VERSION} is running at ${config.baseUrl} (database ${localFilePath(config.dbUrl) ?? describeUrl(config.dbUrl)}). Open it in a browser, or point the client commands at it (Ctrl-C stops it):\n` +
            `  export SVC_URL=${config.baseUrl}\n`,
        );
        return;
      }
      // A person who started the server with JSON logs (./serve.sh --log-level info) learns how the client commands reach it.
      if (process.stderr.isTTY) {
        process.stderr.write(
          `\nsvc is serving ${config.baseUrl} (database ${describeUrl(config.dbUrl)}).\n` +
            `In another terminal, point the svc client commands at it, then follow the README:\n  export SVC_URL=${config.baseUrl}\n\n`,
        );
      }
    });
}

/**
 * A second signal (Ctrl-C pressed twice) must not end the process while it checkpoints and closes the database;
 * the wait for requests in flight is bounded by --shutdown-timeout. A signal during the start (the first process of
 * --workers answers while its workers start) stops the server once it has started; a second one ends it at once.
 */
async function stopOnSignals(starting: Promise<RunningServer>, signals: NodeJS.Signals[]): Promise<RunningServer> {
  let server: RunningServer | undefined;
  let early: string | undefined;
  let stopping = false;
  const stop = (signal: string) => {
    if (!server) {
      if (early) process.exit(1);
      early = signal;
      return;
    }
    const log = server.ops.log;
    if (stopping) return log.warn("already shutting down", { signal });
    stopping = true;
    server
      .stop(() => log.info("shutting down", { signal }))
      .then(
        () => process.exit(0),
        (err) => {
          log.error("shutdown failed", { error: describeCause(err) });
          process.exit(1);
        },
      );
  };
  for (const signal of signals) process.on(signal, () => stop(signal));
  server = await starting;
  if (early) stop(early);
  return server;
}

/** One process per core on a local file on Linux; one on a remote database, an embedded replica or a database in memory. */
function autoWorkers(config: ServerConfig, localFilePath: (url: string) => string | null): number {
  const localFile = localFilePath(config.dbUrl) !== null && !config.syncUrl;
  return SHARES_PORTS && localFile ? Math.min(availableParallelism(), AUTO_WORKERS_MAX) : 1;
}

/** How to run this program again: the compiled executable alone, or bun with the script it runs. */
function selfCommand(): string[] {
  return Bun.main.startsWith("/$bunfs/") ? [process.execPath] : [process.execPath, Bun.main];
}
