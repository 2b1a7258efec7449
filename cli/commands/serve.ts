import { Command, Option } from "commander";
import { systemClock } from "../../server/clock.ts";
import { DEFAULTS, type ServerConfig } from "../../server/config.ts";
import { startServer } from "../../server/serve.ts";

export const dbOption = () =>
  new Option("--db <url>", "libSQL database URL, e.g. file:/var/lib/svc/svc.db").env("SVC_DB").default(DEFAULTS.dbUrl);

const int = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`not a whole number: ${v}`);
  return n;
};

export function serveCommand(): Command {
  return new Command("serve")
    .description("Run the svc server (REST, MCP and the web pages) on a database, applying pending migrations first")
    .addOption(new Option("--host <host>", "address to listen on").env("SVC_HOST").default(DEFAULTS.host))
    .addOption(new Option("--port <port>", "port to listen on").env("SVC_PORT").default(DEFAULTS.port).argParser(int))
    .addOption(dbOption())
    .addOption(new Option("--auth-token <token>", "auth token for a remote libSQL or Turso database").env("SVC_AUTH_TOKEN"))
    .addOption(new Option("--base-url <url>", "public URL used in every link the server writes (default: http://HOST:PORT)").env("SVC_BASE_URL"))
    .addOption(new Option("--invite-only", "require a platform invite code to register").env("SVC_INVITE_ONLY"))
    .addOption(new Option("--rate-limit <n>", "calls per minute per credential").env("SVC_RATE_LIMIT").default(DEFAULTS.rateLimit).argParser(int))
    .addOption(
      new Option("--public-rate-limit <n>", "calls per minute per client address for public tools").env("SVC_PUBLIC_RATE_LIMIT").default(DEFAULTS.publicRateLimit).argParser(int),
    )
    .addHelpText("after", "\nExample:\n  svc serve --port 8787 --db file:./data/svc.db --base-url https://svc.example.org\n")
    .action(async (o) => {
      const config: ServerConfig = {
        host: o.host,
        port: o.port,
        dbUrl: o.db,
        authToken: o.authToken,
        baseUrl: (o.baseUrl ?? "").replace(/\/+$/, ""),
        inviteOnly: Boolean(o.inviteOnly),
        rateLimit: o.rateLimit,
        publicRateLimit: o.publicRateLimit,
        clock: systemClock,
      };
      const server = await startServer(config);
      console.log(`svc listening on ${server.url} (database ${config.dbUrl}; public URL ${config.baseUrl})`);
      const stop = async () => {
        await server.stop();
        process.exit(0);
      };
      process.on("SIGTERM", stop);
      process.on("SIGINT", stop);
    });
}
