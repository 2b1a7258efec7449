import { openDb, type Db } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
import { createApp } from "./app.ts";
import type { ServerConfig } from "./config.ts";
import { RateLimiter } from "./rate-limit.ts";
import type { Services } from "./tools/invoke.ts";

export interface RunningServer {
  url: string;
  port: number;
  db: Db;
  services: Services;
  stop(): Promise<void>;
}

/** Opens the database, applies pending migrations and listens. */
export async function startServer(config: ServerConfig): Promise<RunningServer> {
  const db = await openDb({ url: config.dbUrl, authToken: config.authToken });
  await migrate(db.client);
  const services: Services = { db, config, limiter: new RateLimiter(() => config.clock.now().getTime()) };
  const handle = createApp(services);
  const server = Bun.serve({
    hostname: config.host,
    port: config.port,
    // Larger than the 1 MiB body limit so oversized bodies get the error envelope, not a dropped connection.
    maxRequestBodySize: 16 * 1024 * 1024,
    fetch: (req, srv) => handle(req, srv.requestIP(req)?.address ?? "unknown"),
    error: () => new Response(JSON.stringify({ ok: false, error: { code: "INTERNAL", message: "Something went wrong on the server.", suggested_action: "Retry later." }, request_id: crypto.randomUUID() }), { status: 500, headers: { "Content-Type": "application/json" } }),
  });
  const port = server.port!;
  if (!config.baseUrl) config.baseUrl = `http://${config.host}:${port}`;
  return {
    url: `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`,
    port,
    db,
    services,
    async stop() {
      await server.stop();
      db.close();
    },
  };
}
