// Structured logs: one JSON object per line on stdout. Callers pass only fields that are safe to keep:
// never keys, tokens, codes or message bodies.
import type { CallEvent } from "../services.ts";
import { ERROR_CODES, type ErrorCode } from "../errors.ts";
import { LOG_LEVELS, type LogFormat, type LogLevel } from "../config.ts";

export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** An audit line (observability/audit.ts): written at every level but silent. */
  audit(fields: LogFields): void;
  /** Whether lines of this level are written: what a line would cost to build need not be spent otherwise. */
  enabled(level: Exclude<LogLevel, "silent">): boolean;
}

/**
 * Lines written together once per turn of the event loop: a busy server writes once per turn, not once per call (a
 * write per line cost a sixth of a cheap call).
 */
export class Lines {
  private pending = "";
  private flushesAtExit = false;

  constructor(private readonly sink: (text: string) => void) {}

  /** Whole lines, each ending in a newline. */
  append(text: string): void {
    // Registered by the first line, so a command that never logs adds nothing at import.
    if (!this.flushesAtExit) {
      this.flushesAtExit = true;
      process.on("exit", this.flush);
    }
    if (!this.pending) setImmediate(this.flush);
    this.pending += text;
    if (this.pending.length > 1 << 16) this.flush();
  }

  private readonly flush = () => {
    const out = this.pending;
    this.pending = "";
    if (out) this.sink(out);
  };
}

const stdout = new Lines((text) => process.stdout.write(text));

/** Whole lines to write to this process's stdout: its own, and those of the workers of svc serve --workers. */
export function appendLines(text: string): void {
  stdout.append(text);
}

const toStdout = (line: string) => appendLines(`${line}\n`);

/** A line a person reads on a terminal: time, level, message, then the fields as key=value. */
function textLine(time: string, level: string, msg: string, fields: LogFields): string {
  const rest = Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === "string" && /[\s"=]/.test(v) ? JSON.stringify(v) : v}`);
  return [time.slice(11, 19), level.padEnd(5), msg, ...rest].join(" ");
}

export function createLogger(level: LogLevel, write: (line: string) => void = toStdout, format: LogFormat = "json"): Logger {
  const min = LOG_LEVELS.indexOf(level);
  const at =
    (lvl: Exclude<LogLevel, "silent">) =>
    (msg: string, fields: LogFields = {}) => {
      if (LOG_LEVELS.indexOf(lvl) < min) return;
      const time = new Date().toISOString();
      write(format === "text" ? textLine(time, lvl, msg, fields) : JSON.stringify({ time, level: lvl, msg, ...fields }));
    };
  const audit = (fields: LogFields) => {
    if (level === "silent") return;
    const time = new Date().toISOString();
    write(
      format === "text"
        ? textLine(time, "audit", String(fields.event), { ...fields, event: undefined })
        : JSON.stringify({ time, level: "info", msg: "audit", ...fields }),
    );
  };
  const enabled = (lvl: Exclude<LogLevel, "silent">) => LOG_LEVELS.indexOf(lvl) >= min;
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), audit, enabled };
}

/** The one line per tool call; a server error is logged at error level with its cause (and SQLite code), anything else at info. */
export function logCall(log: Logger, e: CallEvent): void {
  const status = e.code === "OK" ? 200 : (ERROR_CODES[e.code as ErrorCode]?.status ?? 500);
  if (!log.enabled(status >= 500 ? "error" : "info")) return;
  const fields = {
    request_id: e.requestId,
    tool: e.tool,
    agent_id: e.agentId,
    code: e.code,
    status,
    duration_ms: Math.round(e.ms * 10) / 10,
    client_address: e.clientAddress?.(),
  };
  if (status >= 500) log.error("call", { ...fields, cause: e.cause, sqlite_code: e.sqliteCode });
  else log.info("call", fields);
}
