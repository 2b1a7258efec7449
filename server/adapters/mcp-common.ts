// What the tools server (/mcp) and the documentation server (/mcp/docs) share: one factory per endpoint serves
// both protocol eras. 2026-07-28 requests go through the SDK's createMcpHandler; 2025-era requests (initialize
// handshake, no per-request envelope) through a fresh stateless transport answering one JSON body, as before.
import {
  Server,
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
  isLegacyRequest,
  type AuthInfo,
  type CallToolResult,
  type JSONRPCRequest,
  type Result,
  type ServerContext,
  type ServerOptions,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import type { AppError } from "../errors.ts";
import type { Services } from "../services.ts";
import { VERSION } from "../version.ts";
import { MAX_BODY_BYTES, readLimitedText } from "./http.ts";

/** One HTTP request to an MCP endpoint, as the tools see it; the handlers fill in what the HTTP answer needs. */
export interface Exchange {
  svc: Services;
  requestId: string;
  clientAddress: () => string;
  /** The bearer token, if any (already checked to be valid when present). */
  token: string | null;
  /** The tools this session offers: the toolsets named in `?toolsets=` (all without it). */
  toolNames: ReadonlySet<string> | null;
  /** The Idempotency-Key header, if any. */
  idempotencyKey: string | null;
  /** Headers for the HTTP answer: the calls' rate-limit headers. */
  headers: Record<string, string>;
  /** A call that must be answered at the HTTP level (401 or 403 with a challenge), not as a tool result. */
  refused: { error: AppError; id: string | number } | null;
}

export type Era = "legacy" | "modern";
export type ServerFactory = (x: Exchange, era: Era) => Server;

const AnyToolCall = z.looseObject({ name: z.string(), arguments: z.unknown().optional() });

/**
 * A fresh server for one HTTP request. tools/call reaches its handler with whatever `arguments` came, so that a
 * non-object is a VALIDATION_ERROR result with the envelope, as over REST: the SDK's own wrapper would refuse it
 * as a protocol error first (and checks results we already build to the schema).
 */
class StatelessServer extends Server {
  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    return method === "tools/call" ? handler : super._wrapHandler(method, handler);
  }
}

export function statelessServer(name: string, title: string, options: ServerOptions): Server {
  const server = new StatelessServer({ name, title, version: VERSION }, options);
  // Every answer goes back in this one HTTP response: a cancellation sent in the same batch could stop
  // nothing worth stopping, and acting on it would leave the response never sent and the request hanging.
  server.setNotificationHandler("notifications/cancelled", () => undefined);
  return server;
}

/** Registers tools/call; the handler gets the raw arguments and the request's context. */
export function onToolCall(server: Server, handler: (name: string, args: unknown, ctx: ServerContext) => Promise<CallToolResult> | CallToolResult): void {
  server.setRequestHandler("tools/call", { params: AnyToolCall }, (params, ctx) => handler(params.name, params.arguments ?? {}, ctx as ServerContext));
}

/**
 * A tool result: the answer as structuredContent and as JSON text (for clients that ignore structured output).
 * An error envelope goes in the text only: structuredContent must conform to the tool's outputSchema, and SDK
 * clients reject a non-conforming one even on an isError result (typescript-sdk issue 1943).
 */
export function toolResult(body: Record<string, unknown>, isError: boolean, meta: Record<string, unknown>): CallToolResult {
  const content: CallToolResult["content"] = [{ type: "text", text: JSON.stringify(body) }];
  return isError ? { content, isError: true, _meta: meta } : { content, structuredContent: body, isError: false, _meta: meta };
}

/** A JSON-RPC error at the HTTP level; `id` is the request's when it could be read (JSON-RPC 2.0 §5). */
export function rpcError(status: number, message: string, id: string | number | null, headers: Record<string, string> = {}, data?: unknown): Response {
  const error = { code: -32000, message, ...(data === undefined ? {} : { data }) };
  return new Response(JSON.stringify({ jsonrpc: "2.0", error, id }), { status, headers: { "Content-Type": "application/json", ...headers } });
}

/** The id of a single JSON-RPC request, or null (a batch, a notification, or not JSON-RPC). */
export function requestIdOf(body: unknown): string | number | null {
  const id = body !== null && typeof body === "object" && !Array.isArray(body) ? (body as { id?: unknown }).id : undefined;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/** The exchange travels to the factory of a 2026-07-28 request inside the pass-through authInfo. */
const exchangeOf = (authInfo: AuthInfo | undefined): Exchange => authInfo?.extra?.exchange as Exchange;

/** The body of a JSON POST, read within the size limit and parsed; a Response when it cannot be. */
async function readJsonRpc(req: Request, limits: BodyLimits | undefined, svc: Services): Promise<{ body: unknown } | Response> {
  const largest = limits?.largest(svc) ?? MAX_BODY_BYTES;
  if (Number(req.headers.get("content-length") ?? "0") > largest) {
    await req.body?.cancel().catch(() => undefined);
    return rpcError(413, `Payload too large: at most ${largest} bytes.`, null, { Connection: "close" });
  }
  let text: string | null;
  try {
    text = await readLimitedText(req, largest);
  } catch (err) {
    return rpcError(413, (err as AppError).message, null, { Connection: "close" });
  }
  const size = text === null ? 0 : Buffer.byteLength(text);
  const tooLarge = (body: unknown) => size > MAX_BODY_BYTES && size > (limits?.of(svc, body) ?? MAX_BODY_BYTES);
  const parseError = (why: string) =>
    new Response(JSON.stringify({ jsonrpc: "2.0", error: { code: -32700, message: `Parse error: the body is not valid ${why}.` }, id: null }), {
      status: 400,
      headers: { "Content-Type": "application/json" },
    });
  // Refused, not repaired, as over REST: a lossy decode would hand tools U+FFFD where the caller sent something else.
  if (text === null) return parseError("UTF-8");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return parseError("JSON");
  }
  // Past the usual limit only a call to a tool that takes a file (its bodyLimit) is read.
  if (tooLarge(body)) return rpcError(413, `Payload too large: at most ${MAX_BODY_BYTES} bytes for this message.`, null, { Connection: "close" });
  return { body };
}

/** Bodies larger than MAX_BODY_BYTES that an endpoint takes: the most for any message, and for one parsed message. */
export interface BodyLimits {
  largest(svc: Services): number;
  of(svc: Services, body: unknown): number;
}

/**
 * An endpoint serving both eras from one factory. `before` runs once the body is parsed (an invalid credential is
 * refused there, with the request's id). The 2025-era leg keeps answering one JSON body per POST, which the SDK's
 * own stateless fallback would turn into a server-sent event stream.
 */
export function mcpEndpoint(factory: ServerFactory, limits?: BodyLimits) {
  const modern = createMcpHandler(({ authInfo }) => factory(exchangeOf(authInfo), "modern"), { legacy: "reject", maxRequestBodySize: MAX_BODY_BYTES });
  return async (req: Request, x: Exchange, before?: (body: unknown) => Promise<Response | null>): Promise<Response> => {
    const json = /^application\/json\b/i.test(req.headers.get("content-type") ?? "");
    // Not JSON: the SDK answers 415.
    if (!json) return modern.fetch(req);
    const read = await readJsonRpc(req, limits, x.svc);
    if (read instanceof Response) return read;
    const refused = await before?.(read.body);
    if (refused) return refused;
    if (await isLegacyRequest(req, read.body)) {
      const server = factory(x, "legacy");
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await server.connect(transport);
      try {
        return await transport.handleRequest(req, { parsedBody: read.body });
      } finally {
        await server.close();
      }
    }
    return modern.fetch(req, { parsedBody: read.body, authInfo: { token: x.token ?? "", clientId: "", scopes: [], extra: { exchange: x } } });
  };
}
