import { createClient, type Client } from "@libsql/client";
import { drizzle, type LibSQLDatabase } from "drizzle-orm/libsql";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import * as schema from "./schema/index.ts";

export type Orm = LibSQLDatabase<typeof schema>;
/** The handle a transaction gives to domain code; the only way domain code reaches the database. */
export type Tx = Parameters<Parameters<Orm["transaction"]>[0]>[0];

export interface DbOptions {
  url: string;
  authToken?: string;
}

export interface Db {
  readonly url: string;
  readonly client: Client;
  readonly orm: Orm;
  /** Runs fn in one write transaction; callers in this process are queued so SQLite never waits on itself. */
  tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  close(): void;
}

/** Opens (creating if needed) the database at a libSQL URL; no connection exists until this is called. */
export async function openDb(opts: DbOptions): Promise<Db> {
  const isFile = opts.url.startsWith("file:");
  if (isFile) {
    const path = opts.url.slice("file:".length).split("?")[0]!;
    if (path && path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  }
  const client = createClient({ url: opts.url, authToken: opts.authToken, timeout: 5000 });
  if (isFile) {
    // WAL lets readers run beside the writer; NORMAL is durable against a killed process (not power loss).
    await client.execute("PRAGMA journal_mode = WAL");
    await client.execute("PRAGMA synchronous = NORMAL");
  }
  const orm = drizzle(client, { schema });
  let queue: Promise<unknown> = Promise.resolve();
  return {
    url: opts.url,
    client,
    orm,
    tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      // A synchronous SQLite busy-wait would block the event loop that holds the lock, so writes take turns here.
      const run = queue.then(() => orm.transaction(fn));
      queue = run.catch(() => undefined);
      return run;
    },
    close: () => client.close(),
  };
}
