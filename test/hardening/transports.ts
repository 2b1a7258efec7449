// Calls a tool over REST or MCP with a deadline and judges the answer against the contract every call owes:
// the success envelope valid against the tool's output schema, or the error envelope with a 4xx code;
// never a 5xx, never a hang, never a stack trace.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ERROR_CODES, type ErrorCode } from "../../server/errors.ts";
import { findTool } from "../../server/tools/catalogue.ts";
import { checkEnvelope } from "../harness.ts";

export type Transport = "rest" | "mcp";

export interface Outcome {
  transport: Transport;
  tool: string;
  /** HTTP status over REST; over MCP the status the error code maps to (200 for a success). */
  status: number;
  /** "OK" or the error code; "HANG" or "NO_ENVELOPE" when there was no proper answer. */
  code: string;
  body: any;
  /** What broke the contract, or null. */
  violation: string | null;
}

export interface RawRequest {
  /** POST /v1/sandbox/tools/{tool} instead: validate only. */
  sandbox?: boolean;
  /** A path of its own, sent as is (malformed escapes included). */
  path?: string;
  body?: RequestInit["body"];
  contentType?: string | null;
  headers?: Record<string, string>;
}

const STACK_TRACE = /\bat \S+ \(|\.(ts|js):\d+:\d+|node_modules\//;

export const DEFAULT_TIMEOUT_MS = 10_000;

/** POST /v1/tools/{tool} with whatever body and headers; the answer is judged, never thrown. */
export async function restCall(url: string, tool: string, apiKey: string | null, raw: RawRequest, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Outcome> {
  const headers: Record<string, string> = {};
  if (raw.contentType !== null) headers["content-type"] = raw.contentType ?? "application/json";
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  Object.assign(headers, raw.headers);
  const out = (status: number, code: string, body: any, violation: string | null): Outcome => ({ transport: "rest", tool, status, code, body, violation });
  const path = raw.path ?? `${raw.sandbox ? "/v1/sandbox/tools/" : "/v1/tools/"}${encodeURIComponent(tool)}`;
  let res: Response;
  try {
    res = await fetch(`${url}${path}`, { method: "POST", headers, body: raw.body, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    const timedOut = err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
    return out(0, timedOut ? "HANG" : "NO_ENVELOPE", null, timedOut ? `no answer within ${timeoutMs} ms` : `connection failed: ${String(err)}`);
  }
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return out(res.status, "NO_ENVELOPE", text.slice(0, 200), `status ${res.status} without a JSON body: ${text.slice(0, 120)}`);
  }
  const code = res.status === 200 ? "OK" : String(body?.error?.code ?? "NO_ENVELOPE");
  // a sandbox answer is {valid, arguments}, not the tool's output
  return out(res.status, code, body, judgeRest(raw.sandbox ? `sandbox:${tool}` : tool, res, body, text));
}

function judgeRest(tool: string, res: Response, body: any, text: string): string | null {
  if (res.status >= 500) return `${res.status} ${text.slice(0, 200)}`;
  try {
    checkEnvelope(tool, res, body);
  } catch (err) {
    return (err as Error).message.slice(0, 300);
  }
  if (STACK_TRACE.test(text)) return "stack trace in the answer";
  if (res.headers.get("x-content-type-options") !== "nosniff") return "no X-Content-Type-Options: nosniff";
  if (res.headers.get("cache-control") !== "no-store") return `Cache-Control is ${res.headers.get("cache-control")}, not no-store`;
  if (res.status !== 200) {
    const known = ERROR_CODES[body.error.code as ErrorCode];
    if (!known) return `unknown error code ${body.error.code}`;
    if (known.status !== res.status) return `${body.error.code} answered with status ${res.status}`;
  }
  return null;
}

/** One MCP session (the SDK's client over Streamable HTTP) for one credential. */
export class McpSession {
  private constructor(private readonly client: Client) {}

  static async connect(url: string, apiKey: string | null): Promise<McpSession> {
    const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} },
    });
    const client = new Client({ name: "svc-hardening", version: "1.0.0" });
    await client.connect(transport);
    return new McpSession(client);
  }

  /** tools/call; an error is a tool result with isError and the same error envelope as REST. */
  async call(tool: string, args: unknown, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Outcome> {
    const out = (status: number, code: string, body: any, violation: string | null): Outcome => ({ transport: "mcp", tool, status, code, body, violation });
    let result: any;
    try {
      result = await this.client.callTool({ name: tool, arguments: args as Record<string, unknown> }, undefined, { timeout: timeoutMs });
    } catch (err) {
      const message = String((err as Error)?.message ?? err);
      const rpcCode = (err as { code?: number })?.code;
      if (rpcCode === -32001 || /timed? ?out/i.test(message)) return out(0, "HANG", null, `no answer within ${timeoutMs} ms`);
      // arguments that are not an object never make a tools/call: JSON-RPC "invalid params" is the protocol's answer
      const notAnObject = args === null || typeof args !== "object" || Array.isArray(args);
      if (rpcCode === -32602 && notAnObject) return out(400, "INVALID_PARAMS", message, null);
      return out(0, "NO_ENVELOPE", message, `JSON-RPC error ${rpcCode} instead of a tool result: ${message.slice(0, 200)}`);
    }
    const text = JSON.stringify(result);
    if (STACK_TRACE.test(text)) return out(0, "NO_ENVELOPE", result, "stack trace in the answer");
    if (result.isError) {
      const envelope = result.structuredContent ?? safeJson(result.content?.[0]?.text);
      const code = envelope?.error?.code;
      const known = ERROR_CODES[code as ErrorCode];
      if (envelope?.ok !== false || !known) return out(0, "NO_ENVELOPE", result, `isError without the error envelope: ${text.slice(0, 200)}`);
      return out(known.status, code, envelope, known.status >= 500 ? `${code} over MCP` : null);
    }
    const parsed = findTool(tool)?.output.safeParse(result.structuredContent);
    if (!parsed?.success) return out(200, "OK", result, `structuredContent outside the output schema: ${parsed?.error?.message.slice(0, 200)}`);
    return out(200, "OK", result.structuredContent, null);
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

function safeJson(text: unknown): any {
  try {
    return typeof text === "string" ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the server mounts MCP at /mcp yet (the adapter lands separately from the REST spine). */
export async function mcpAvailable(url: string): Promise<boolean> {
  const res = await fetch(`${url}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
  await res.body?.cancel();
  return res.status !== 404;
}
