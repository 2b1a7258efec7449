// How every svc command prints: data as readable text or JSON on stdout, failures on stderr with a distinct exit code.
import type { Command } from "commander";
import { AppError, type ErrorCode } from "../server/errors.ts";

export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  auth: 3,
  notFound: 4,
  conflict: 5,
  rateLimited: 6,
  server: 7,
} as const;

const EXIT_BY_CODE: Record<ErrorCode, number> = {
  VALIDATION_ERROR: EXIT.usage,
  UNAUTHENTICATED: EXIT.auth,
  FORBIDDEN: EXIT.auth,
  NOT_FOUND: EXIT.notFound,
  CONFLICT: EXIT.conflict,
  IDEMPOTENCY_KEY_REUSED: EXIT.conflict,
  RATE_LIMITED: EXIT.rateLimited,
  INTERNAL: EXIT.server,
  STORAGE_UNAVAILABLE: EXIT.server,
};

/** Codes a newer server may add fall back to the general failure code. */
export const exitCodeFor = (code: string): number => EXIT_BY_CODE[code as ErrorCode] ?? EXIT.failure;

export const EXIT_CODES_HELP = `
Exit codes:
  0  success
  1  other failure (e.g. the database could not be opened)
  2  usage or validation error (VALIDATION_ERROR, bad flags or arguments)
  3  not authenticated or not allowed (UNAUTHENTICATED, FORBIDDEN)
  4  not found (NOT_FOUND: unknown tool, handle, code or object)
  5  conflict (CONFLICT, IDEMPOTENCY_KEY_REUSED)
  6  rate limited (RATE_LIMITED: wait, then retry with the same idempotency key)
  7  server or network failure (INTERNAL, STORAGE_UNAVAILABLE, server unreachable, unreadable answer)
`;

/** What each command's help says instead of repeating the table, which `svc --help` prints once. */
export const EXIT_CODES_SEE = "\nExit codes: svc --help lists them.\n";

/** A failure the CLI reports: message and suggested action on stderr, then exit with `exitCode`. */
export class CliError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
    readonly suggestedAction?: string,
    readonly extra: string[] = [],
  ) {
    super(message);
  }
}

export const usageError = (message: string, suggestedAction?: string) => new CliError(EXIT.usage, message, suggestedAction);

function report(err: unknown): number {
  const e =
    err instanceof CliError
      ? err
      : err instanceof AppError
        ? new CliError(exitCodeFor(err.code), `${err.code}: ${err.message}`, err.suggestedAction)
        : new CliError(EXIT.failure, err instanceof Error ? err.message : String(err));
  const lines = [`svc: ${e.message}`, ...(e.suggestedAction ? [`suggested action: ${e.suggestedAction}`] : []), ...e.extra];
  process.stderr.write(`${lines.map(printable).join("\n")}\n`);
  return e.exitCode;
}

/** Wraps a command action so every failure is reported the same way and ends with its exit code. */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    // A reader that stops early (| head) is not an error.
    process.stdout.on("error", (err: NodeJS.ErrnoException) => process.exit(err.code === "EPIPE" ? EXIT.ok : EXIT.failure));
    try {
      await fn(...args);
    } catch (err) {
      process.exit(report(err));
    }
  };
}

/** Commander's own errors (unknown option, missing argument) exit with the usage code; help exits 0. */
export function usageExits(cmd: Command): Command {
  cmd.exitOverride((err) => process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.usage));
  for (const sub of cmd.commands) usageExits(sub);
  return cmd;
}

/** Control characters (terminal escapes) in data written by other agents must not reach the terminal raw. */
export const printable = (s: string) => s.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

const isNested = (v: unknown) => (Array.isArray(v) ? v.length > 0 : v !== null && typeof v === "object" && Object.keys(v).length > 0);

function textLines(v: unknown): string[] {
  if (Array.isArray(v)) {
    if (!v.length) return ["(none)"];
    return v.flatMap((item) => textLines(item).map((line, i) => (i ? "  " : "- ") + line));
  }
  if (v !== null && typeof v === "object") {
    const entries = Object.entries(v);
    if (!entries.length) return ["(empty)"];
    return entries.flatMap(([k, x]) => {
      const lines = textLines(x);
      return lines.length === 1 && !isNested(x) ? [`${k}: ${lines[0]}`] : [`${k}:`, ...lines.map((l) => `  ${l}`)];
    });
  }
  if (v === null || v === undefined) return ["-"];
  return printable(String(v)).split("\n");
}

/** Any JSON value as indented `key: value` lines, lists as `- ` items. */
export const toText = (v: unknown) => textLines(v).join("\n");

/** Prints data as JSON (for scripts) or through `text` (for people). */
export function emit(data: unknown, json: boolean, text: (d: any) => string = toText): void {
  process.stdout.write(`${json ? JSON.stringify(data, null, 2) : text(data)}\n`);
}

/** Lines of columns padded to the widest cell; the last column is not padded. */
export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join("  ")
        .trimEnd(),
    )
    .map(printable)
    .join("\n");
}

export const example = (...lines: string[]) => `\nExample${lines.length > 1 ? "s" : ""}:\n${lines.map((l) => `  ${l}`).join("\n")}\n`;

const SHELL_SAFE = /^[A-Za-z0-9_.,:@%+/=-]*$/;

/** `field=value` as one shell word a person can paste into bash or zsh: quoted only when it must be. */
export function shellWord(field: string, value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (SHELL_SAFE.test(text) && text !== "") return `${field}=${text}`;
  // Double quotes read best for prose; they are safe when nothing inside them expands ($ ` \ and ! in bash).
  if (typeof value === "string" && !/["$`\\!]/.test(text)) return `${field}="${text}"`;
  return `${field}='${text.replaceAll("'", `'\\''`)}'`;
}
