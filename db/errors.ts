// Driver errors met while opening a database, turned into one line an operator can act on. Errors of a running
// database (a full disk, a busy lock) are the server's to classify: storageFault in server/errors.ts.

/** A database that cannot be opened or reached; the message is meant for the operator and never holds the token. */
export class DbOpenError extends Error {
  override name = "DbOpenError";
}

/** Scheme, host and path only: query strings may carry credentials. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return u.protocol === "file:" ? url.split("?")[0]! : `${u.protocol}//${u.host}${u.pathname === "/" ? "" : u.pathname}`;
  } catch {
    return url.split("?")[0]!;
  }
}

/** open() with whatever the driver throws turned into a DbOpenError. */
export function guard<T>(url: string, token: string | undefined, open: () => T): T {
  try {
    return open();
  } catch (err) {
    throw openError(url, token, err);
  }
}

/** Turns a driver error into one line an operator can act on. */
export function openError(url: string, token: string | undefined, err: unknown): DbOpenError {
  if (err instanceof DbOpenError) return err;
  const where = describeUrl(url);
  const raw = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: string })?.code ?? "";
  if (/\b(401|403)\b/.test(raw) || /unauthori[sz]ed|forbidden/i.test(raw)) {
    return new DbOpenError(`The database at ${where} refused the auth token; check --auth-token (SVC_AUTH_TOKEN) and that it belongs to this database.`);
  }
  if (code === "ECONNREFUSED" || /connection refused|unable to connect/i.test(raw)) {
    return new DbOpenError(`Cannot reach the database at ${where}: connection refused; check the URL and that the server is up.`);
  }
  if (code === "ENOTFOUND" || /dns|failed to lookup|not known/i.test(raw)) {
    return new DbOpenError(`Cannot reach the database at ${where}: the host name does not resolve.`);
  }
  const message = token ? raw.replaceAll(token, "***") : raw;
  return new DbOpenError(`Cannot open the database at ${where}: ${message}`);
}

// Errors of a running database that pass: the lock held by another writer (SQLITE_BUSY, SQLITE_LOCKED, or a database
// server's message for them), an embedded replica's sync that met the primary compacting its log ("snapshot not
// found"), and a primary that cannot be reached for a moment. A transaction that failed so is rolled back and may
// run again; past a bound, the caller is told to come back (STORAGE_UNAVAILABLE with retry_after).
const BUSY_CODE = /^SQLITE_(BUSY|LOCKED)(_|$)/;
const BUSY_MESSAGE = /\bdatabase (table )?is locked\b|\bdatabase is busy\b/i;
const SYNC_MESSAGE = /snapshot not found|\bsync(ing)? (error|failed)|SyncError|Replication|replicator|frame .*not found/i;
const UNREACHABLE_MESSAGE =
  /status: Unavailable|HRANA_WEBSOCKET_ERROR|WebSocket connection .* failed|WebSocket was closed|Failed to connect|connection refused|ECONNREFUSED|ECONNRESET|connection reset|broken pipe|error trying to connect|stream (has )?expired|STREAM_EXPIRED|\b50[234]\b.*(Bad Gateway|Service Unavailable|Gateway Timeout)/i;

/** Each error in err's chain of causes (drizzle wraps the driver's as `cause`), at most 8 deep. */
export function* causes(err: unknown): Generator<{ code?: unknown; extendedCode?: unknown; message?: unknown; name?: unknown }> {
  for (let e = err, depth = 0; e !== null && typeof e === "object" && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    yield e as { code?: unknown; extendedCode?: unknown; message?: unknown };
  }
}

/** Whether err, or what it wraps, says another writer held the database (not a storage fault). */
export function databaseBusy(err: unknown): boolean {
  for (const { extendedCode, code, message } of causes(err)) {
    for (const c of [extendedCode, code]) if (typeof c === "string" && BUSY_CODE.test(c)) return true;
    if (typeof message === "string" && BUSY_MESSAGE.test(message)) return true;
  }
  return false;
}

const says = (err: unknown, re: RegExp) => [...causes(err)].some(({ message }) => typeof message === "string" && re.test(message));

/** Whether err is an embedded replica's failed sync with its primary (the statement itself was not refused). */
export const syncFailure = (err: unknown): boolean => says(err, SYNC_MESSAGE) && !says(err, /WriteDelegation/);

/** Whether err is one that passes (busy, a sync, the primary out of reach for a moment): see above. */
export const transient = (err: unknown): boolean => databaseBusy(err) || says(err, SYNC_MESSAGE) || says(err, UNREACHABLE_MESSAGE);

// A batch that met a write made since its reads: a guard found what it read changed (the CHECK of write_conflicts,
// db/query.ts guard), or a row it inserts is there already (a unique key). It was rolled back whole.
const CONFLICT_MESSAGE = /CHECK constraint failed: write_conflict|UNIQUE constraint failed|PRIMARY KEY constraint failed/;

/** Whether err says a batch met a concurrent write (it ran nothing, and runs again from its reads). */
export const writeConflict = (err: unknown): boolean => says(err, CONFLICT_MESSAGE);

/** A write call whose batch kept meeting concurrent writes: the caller is asked to come back. */
export class WriteConflict extends Error {
  override name = "WriteConflict";
  constructor(override readonly cause: unknown) {
    super("The write kept meeting concurrent changes to what it read; nothing of it was stored.");
  }
}

const AT_COMMIT = Symbol("at commit");

/** Marks err as thrown by COMMIT: whether the transaction was committed is unknown, so it is not run again here. */
export function atCommit(err: unknown): unknown {
  if (err !== null && typeof err === "object") (err as Record<symbol, boolean>)[AT_COMMIT] = true;
  return err;
}
export const failedAtCommit = (err: unknown): boolean => err !== null && typeof err === "object" && (err as Record<symbol, boolean>)[AT_COMMIT] === true;

/**
 * The driver's own error under err, on one line, for the log: drizzle's "Failed query" names the statement, the
 * driver's error says what the database answered (SQLITE_BUSY, a sync that failed). Never a query's parameters.
 */
export function driverCause(err: unknown): string | null {
  const chain = [...causes(err)];
  if (chain.length < 2) return null;
  const inner = chain[chain.length - 1]!;
  const code = typeof inner.code === "string" && inner.code ? `${inner.code} ` : "";
  const message =
    typeof inner.message === "string"
      ? inner.message
          .split(/\nparams:|\n\s*\n|Stack backtrace:/)[0]!
          .replace(/\s+/g, " ")
          .trim()
      : String(inner);
  return `${code}${message}`.slice(0, 300);
}
