// Client mode: talks to a running svc over its REST API, exactly as any other client would.
import { type Command, Option } from "commander";
import { DEFAULTS } from "../server/config.ts";
import { readConfig } from "./config-file.ts";
import { CliError, EXIT, exitCodeFor } from "./output.ts";
import { didYouMean } from "./suggest.ts";

export const DEFAULT_URL = `http://${DEFAULTS.host}:${DEFAULTS.port}`;

export const urlOption = () => new Option("--url <url>", `server URL (default: the one stored by svc login, else ${DEFAULT_URL})`).env("SVC_URL");
export const keyOption = () => new Option("--key <key>", "API key (default: the one stored by svc login)").env("SVC_API_KEY");
/** --json, which means "print JSON" on every command that prints; --json-out is its older name, kept working. */
export const withJsonOutput = (cmd: Command) =>
  cmd
    .addOption(new Option("--json", "print JSON even on a terminal (the default when stdout is not a terminal)"))
    .addOption(new Option("--json-out", "the same as --json").hideHelp());

/** JSON for scripts and pipes, text for people. */
export const wantsJson = (o: { json?: boolean; jsonOut?: boolean }) => Boolean(o.json || o.jsonOut) || !process.stdout.isTTY;

/** The parts of a tool's JSON Schema the CLI reads. */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

/** A tool as GET /v1/tools describes it. */
export interface ToolDescription {
  name: string;
  title: string;
  description: string;
  tags: string[];
  public: boolean;
  required_scope: string | null;
  idempotent: boolean;
  input_schema: JsonSchema;
  output_schema: JsonSchema;
  /** A call that works (an older server sends none); made_up names the ids to replace with real ones. */
  example?: { arguments: Record<string, unknown>; made_up: { field: string; value: string; from: string }[] };
}

/** GET /v1/tools/{name}; an unknown name is NOT_FOUND with the nearest names the server has. */
export async function describeTool(target: Target, name: string): Promise<ToolDescription> {
  try {
    return (await request(target, "GET", `/v1/tools/${encodeURIComponent(name)}`)).tool;
  } catch (err) {
    if (!(err instanceof CliError) || err.exitCode !== EXIT.notFound) throw err;
    const { tools } = await request(target, "GET", "/v1/tools");
    throw new CliError(
      EXIT.notFound,
      `there is no tool named ${name}.${didYouMean(
        name,
        tools.map((t: ToolDescription) => t.name),
      )}`,
      "svc tools lists every tool.",
    );
  }
}

export interface Target {
  url: string;
  key?: string;
}

/**
 * Flags and environment win over the stored config. The stored key is sent only to the stored URL,
 * so pointing --url at another server never hands it the key.
 */
export function resolveTarget(o: { url?: string; key?: string }): Target {
  const stored = readConfig();
  const url = (o.url ?? stored.url ?? DEFAULT_URL).replace(/\/+$/, "");
  const key = o.key ?? (stored.url && stored.url.replace(/\/+$/, "") === url ? stored.api_key : undefined);
  return { url, key };
}

export interface ErrorEnvelope {
  code: string;
  message: string;
  suggested_action?: string;
  details?: { issues?: { path: string; message: string }[] } & Record<string, unknown>;
  retry_after?: number;
}

/** The server's answer as a success `data` object, or a CliError carrying the error envelope. */
export async function request(target: Target, method: "GET" | "POST", path: string, opts: { body?: unknown; auth?: boolean } = {}) {
  const headers: Record<string, string> = { accept: "application/json" };
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  if (opts.auth && target.key) headers.authorization = `Bearer ${target.key}`;
  let res: Response;
  try {
    res = await fetch(`${target.url}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  } catch (err) {
    const why = (err instanceof Error ? err.message : String(err)).replace(/[.\s]*$/, "");
    // A certificate this machine does not trust (a self-signed one) is not a server that is down.
    if (/certificate|CERT|SELF_SIGNED/i.test(`${why} ${(err as { code?: string })?.code ?? ""}`)) {
      throw new CliError(
        EXIT.server,
        `could not reach ${target.url}: its TLS certificate is not trusted here (${why}).`,
        "Trust the certificate's authority with NODE_EXTRA_CA_CERTS=/path/to/ca.pem, or use the server's http:// address where it listens on this machine.",
      );
    }
    throw new CliError(
      EXIT.server,
      `could not reach ${target.url}: ${why}.`,
      "Check that the server runs (svc serve) and that --url, SVC_URL or the URL stored by svc login is right.",
    );
  }
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    throw new CliError(EXIT.server, `${target.url}${path} answered HTTP ${res.status} without a JSON body.`, "Check that the URL points at an svc server.");
  }
  if (body?.ok === true) return body.data as Record<string, any>;
  if (body?.ok === false && body.error && typeof body.error.code === "string") throw envelopeError(body.error, body.request_id, target);
  throw new CliError(EXIT.server, `${target.url}${path} answered HTTP ${res.status} with an unexpected body.`, "Check that the URL points at an svc server.");
}

/** One tool call; `auth` sends the key (public tools go without it). */
export const callTool = (target: Target, tool: string, args: Record<string, unknown>, auth = false) =>
  request(target, "POST", `/v1/tools/${encodeURIComponent(tool)}`, { body: args, auth });

function envelopeError(e: ErrorEnvelope, requestId: unknown, target: Target): CliError {
  const extra = (e.details?.issues ?? []).map((i) => `  - ${i.path}: ${i.message}`);
  if (e.retry_after !== undefined) extra.push(`retry after: ${e.retry_after} s`);
  if (typeof requestId === "string") extra.push(`request_id: ${requestId}`);
  // The server's own advice for a missing credential speaks HTTP (an Authorization header); here the way is svc login.
  if (e.code === "UNAUTHENTICATED") {
    const why = target.key ? "The server refused the API key (revoked, rotated or mistyped)." : "No API key was sent.";
    const how = `Run: svc login --url ${target.url} (it connects through the server's join page), or svc login --key KEY --url ${target.url} with a key you have (from register_agent, or made on ${target.url}/account); or pass --key or SVC_API_KEY.`;
    return new CliError(exitCodeFor(e.code), `${e.code}: ${e.message}`, `${why} ${how}`, extra);
  }
  return new CliError(exitCodeFor(e.code), `${e.code}: ${e.message}`, e.suggested_action || undefined, extra);
}
