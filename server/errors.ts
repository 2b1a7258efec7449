// The errors svc answers with, and where they become answers: AppError for every tool and page (the envelope;
// domain code throws codes, the HTTP status is derived here only), and OAuthError for the OAuth endpoints, whose
// wire format is RFC 6749's own ({error, error_description}).
// db/errors.ts, not db/client.ts: the classification is pure, and the client commands that read AppError must not load
// the database driver (svc starts in milliseconds when it does not serve).
import { databaseBusy, driverCause, transient, WriteConflict } from "../db/errors.ts";

export { databaseBusy };

export const ERROR_CODES = {
  VALIDATION_ERROR: { status: 400, action: "Fix the fields named in details.issues and call again." },
  UNAUTHENTICATED: {
    status: 401,
    action:
      "Send a valid credential as 'Authorization: Bearer <key>', or sign in again. No key for this app yet: if your human already has a handle (from another app or the web), join_network connects this app to it; register_agent makes a new identity, only for a human new to svc.",
  },
  FORBIDDEN: { status: 403, action: "This credential cannot do this; use a credential with the scope named in details.required_scope." },
  NOT_FOUND: { status: 404, action: "Check the identifier; list the objects you can see to find the right one." },
  CONFLICT: { status: 409, action: "The current state does not allow this; read the object again and act on its current state." },
  IDEMPOTENCY_KEY_REUSED: { status: 409, action: "Use a new idempotency_key for a different call; reuse a key only to retry the exact same call." },
  RATE_LIMITED: { status: 429, action: "Wait retry_after seconds, then retry with the same idempotency key." },
  INTERNAL: { status: 500, action: "Retry later with the same idempotency key; report the request_id if it persists." },
  STORAGE_UNAVAILABLE: {
    status: 503,
    action:
      "Wait retry_after seconds, then retry with the same idempotency key: nothing of this call was stored, so the retry is safe and acts once. Reads keep working meanwhile.",
  },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface Issue {
  path: string;
  message: string;
}

/** A path as every error names one, the domain's own included: split.among[1].handle, not split.among.1.handle. */
export const issuePath = (path: readonly PropertyKey[]) => path.map((p, i) => (typeof p === "number" ? `[${p}]` : `${i ? "." : ""}${String(p)}`)).join("");

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly retryAfter?: number,
    readonly suggestedAction?: string,
  ) {
    super(message);
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }

  envelope(requestId: string) {
    return {
      ok: false as const,
      error: {
        code: this.code,
        message: this.message,
        suggested_action: this.suggestedAction ?? ERROR_CODES[this.code].action,
        ...(this.details ? { details: this.details } : {}),
        ...(this.retryAfter !== undefined ? { retry_after: this.retryAfter } : {}),
      },
      request_id: requestId,
    };
  }
}

export const notFound = (what: string) => new AppError("NOT_FOUND", `${what} not found.`);
export const conflict = (message: string, details?: Record<string, unknown>) => new AppError("CONFLICT", message, details);
export const invalid = (path: string, message: string) =>
  new AppError("VALIDATION_ERROR", `Invalid arguments: ${path}: ${message}`, { issues: [{ path, message }] });

/** What an operator may read of an unexpected error: its kind and message, never a query's parameters. */
export function describeCause(err: unknown): string {
  const text = (err instanceof Error ? `${err.name}: ${err.message}` : String(err)).split(/\nparams:/)[0]!.slice(0, 500);
  // drizzle's "Failed query" says which statement; the driver's error under it says what the database answered.
  const driver = driverCause(err);
  return driver ? `${text} (database: ${driver})` : text;
}

/** Seconds a caller is asked to wait after a storage fault: an operator has to free space or fix the disk. */
export const STORAGE_RETRY_AFTER_S = 30;

// SQLite's result codes for storage that cannot take a write: full, failing (any extended I/O error), read-only.
const STORAGE_FAULT = /^SQLITE_(FULL|IOERR|READONLY)(_|$)/;

/**
 * The SQLite code of a storage fault behind err, or null. Drivers name it in `code` (the native libsql
 * SqliteError, @libsql/client's LibsqlError, which adds `extendedCode`), and drizzle wraps them as `cause`.
 */
export function storageFault(err: unknown): string | null {
  for (let e = err, depth = 0; e !== null && typeof e === "object" && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const { extendedCode, code } = e as { extendedCode?: unknown; code?: unknown };
    for (const c of [extendedCode, code]) if (typeof c === "string" && STORAGE_FAULT.test(c)) return c;
  }
  return null;
}

/** Seconds a caller is asked to wait when the database was busy: another writer held it past the busy timeout. */
export const BUSY_RETRY_AFTER_S = 1;

/**
 * Anything that is not an AppError becomes INTERNAL with nothing of the cause leaked, except a storage fault or a
 * busy database: the caller is told the server cannot store writes now, and that retrying later is safe.
 */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof WriteConflict) {
    return new AppError(
      "STORAGE_UNAVAILABLE",
      "What this call read kept changing under it as it wrote (many calls changing the same thing at once). Nothing of it was stored; retrying is safe.",
      undefined,
      BUSY_RETRY_AFTER_S,
    );
  }
  if (databaseBusy(err)) {
    return new AppError(
      "STORAGE_UNAVAILABLE",
      "The database is busy: another writer held it longer than this call could wait. Nothing of this call was stored.",
      undefined,
      BUSY_RETRY_AFTER_S,
    );
  }
  if (transient(err)) {
    return new AppError(
      "STORAGE_UNAVAILABLE",
      "The database server did not answer this call in time (it is restarting, compacting its log or out of reach). Retrying with the same idempotency key is safe.",
      undefined,
      BUSY_RETRY_AFTER_S,
    );
  }
  if (storageFault(err)) {
    return new AppError(
      "STORAGE_UNAVAILABLE",
      "The server cannot store writes right now: its database storage is full, failing or read-only. Nothing of this call was stored.",
      undefined,
      STORAGE_RETRY_AFTER_S,
    );
  }
  return new AppError("INTERNAL", "Something went wrong on the server.");
}

/** An error in OAuth's own wire format ({error, error_description}). */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
  body() {
    return { error: this.error, error_description: this.message };
  }
}
