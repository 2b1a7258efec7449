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
