// MCP transport: {base_url}/mcp serves every tool of the catalogue over Streamable HTTP, and /mcp/docs the
// documentation server. Both speak 2026-07-28 (server/discover, a _meta envelope on every request) and the
// 2025-era protocol (initialize, up to 2025-11-25) from one factory each; stateless, JSON answers, no sessions.
import { getUiCapability, RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY } from "@modelcontextprotocol/ext-apps/server";
import { ResourceNotFoundError, type Server, type Tool as McpTool, type ToolAnnotations } from "@modelcontextprotocol/server";
import { authenticate, bearerToken } from "../auth/authenticate.ts";
import { AppError } from "../errors.ts";
import { TOOLS, findTool, inputJsonSchema, outputJsonSchema, toolsOf, toolsetOf } from "../tools/catalogue.ts";
import { sharedRules } from "../tools/shared-rules.ts";
import { MAX_BODY_BYTES } from "./http.ts";
import type { Tool } from "../tools/define.ts";
import { chargeFailedCredential, invoke, noSuchTool } from "../tools/invoke.ts";
import type { Services } from "../services.ts";
import { VIEWS } from "../views/index.ts";
import { mcpEndpoint, onToolCall, requestIdOf, rpcError, statelessServer, toolResult, type Era, type Exchange } from "./mcp-common.ts";
import { docsServer } from "./mcp-docs.ts";
import type { RestRequest } from "./rest.ts";
import { bearerChallenge, missingScope, resourceMetadataUrl } from "./well-known.ts";

/** What every session lists whatever its toolsets: who you are and what waits for you (the instructions start there). */
const ESSENTIALS = ["get_me", "get_inbox", "ack_inbox"];
/** The ways in, listed to every session without a credential: the tools that work without one. */
const WAYS_IN = TOOLS.filter((t) => t.isPublic).map((t) => t.name);

/**
 * The server's instructions, written for the tools the session lists (null: every tool): what svc is, the ways in
 * for a session without a credential, where to start, and the shared rules; a tool the session does not list is
 * never named.
 */
function toolsInstructions(baseUrl: string, listed: ReadonlySet<string> | null): string {
  const has = (name: string) => listed === null || listed.has(name);
  const open = WAYS_IN.filter(has);
  const apiKey = has("register_agent")
    ? "an API key (call register_agent once, keep the key, send it as 'Authorization: Bearer <key>'; only for a human new to svc)"
    : null;
  const join = has("join_network")
    ? "joining the handle your human already has from another app (join_network, then finish_join: a key of this app's own)"
    : null;
  const oauth = `OAuth (a client that signs its human in: a call that needs a credential is answered 401 naming ${resourceMetadataUrl(baseUrl)}, where the authorization server is found; the human signs in on svc's page and allows the client)`;
  const ways = [apiKey, join, oauth].filter((w) => w !== null);
  return [
    "svc is a personal agent network with a shared-expense ledger. Every capability is a tool here and over REST, with the same schemas and errors.",
    open.length
      ? `Without a credential only ${open.join(", ")} work. The ways in: ${ways.join("; or ")}.`
      : `A credential goes in 'Authorization: Bearer <key>'; or ${oauth}.`,
    "Start a session with get_me, read get_inbox regularly (nothing is pushed), mark what you handled with ack_inbox, and follow suggested_next.",
    sharedRules(has),
    "The documentation server (no credential) is at /mcp/docs.",
  ].join(" ");
}

/** Annotations from the tags; MCP's defaults assume a non-read tool is destructive, so every hint is explicit. */
function toolAnnotations(t: Pick<Tool, "title" | "tags" | "idempotent">): ToolAnnotations {
  if (t.tags.includes("read")) return { title: t.title, readOnlyHint: true, openWorldHint: false };
  return {
    title: t.title,
    readOnlyHint: false,
    destructiveHint: t.tags.includes("destructive"),
    idempotentHint: t.idempotent,
    openWorldHint: false,
  };
}

/** The catalogue's own JSON Schemas (2020-12), passed through unchanged. */
const mcpTool = (t: Tool): McpTool => ({
  name: t.name,
  title: t.title,
  description: t.description,
  inputSchema: inputJsonSchema(t) as McpTool["inputSchema"],
  outputSchema: outputJsonSchema(t) as McpTool["outputSchema"],
  annotations: toolAnnotations(t),
});

/** MCP Apps: a tool with a view names it in _meta.ui (and under the older flat key, for hosts that read that). */
const withView = (t: Tool, listed: McpTool): McpTool =>
  t.view ? { ...listed, _meta: { ui: { resourceUri: t.view.uri }, [RESOURCE_URI_META_KEY]: t.view.uri } } : listed;

let listed: { plain: McpTool[]; apps: McpTool[] } | undefined;
function mcpTools(apps: boolean, only: ReadonlySet<string> | null): McpTool[] {
  listed ??= { plain: TOOLS.map(mcpTool), apps: TOOLS.map((t) => withView(t, mcpTool(t))) };
  const all = apps ? listed.apps : listed.plain;
  return only ? all.filter((t) => only.has(t.name)) : all;
}

/**
 * The tools named by `?toolsets=a,b` (all without it), or the message refusing an unknown toolset. A session of
 * some toolsets also lists the essentials (get_me, the inbox), and without a credential the ways in, so that what
 * its instructions tell it to call is there.
 */
function sessionTools(url: string, credential: boolean): ReadonlySet<string> | null | { error: string } {
  const param = new URL(url).searchParams.get("toolsets");
  const names = (param ?? "")
    .split(",")
    .map((n) => n.trim())
    .filter(Boolean);
  if (!names.length) return null;
  try {
    const wanted = new Set([...toolsOf(names).map((t) => t.name), ...ESSENTIALS, ...(credential ? [] : WAYS_IN)]);
    // In catalogue order, as tools/list shows them.
    return new Set(TOOLS.filter((t) => wanted.has(t.name)).map((t) => t.name));
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/**
 * Whether to name the views. A 2026-07-28 request carries the client's capabilities, so only a host that declares
 * MCP Apps sees them. A 2025-era request after initialize carries none, so they are always named there; a host
 * without Apps ignores _meta, and the tools' answers are the same either way.
 */
function offersViews(server: Server, era: Era): boolean {
  return era === "legacy" || getUiCapability(server.getClientCapabilities())?.mimeTypes?.includes(RESOURCE_MIME_TYPE) === true;
}

/** What every answer of svc carries, over MCP too. */
const commonHeaders = (requestId: string) => ({ "X-Request-Id": requestId, "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" });

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Against DNS rebinding: no Origin (not a browser), the service's own host, or a loopback page. */
function originAllowed(origin: string | null, baseUrl: string): boolean {
  if (origin === null) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // includes the opaque origin "null"
  }
  return url.host === new URL(baseUrl).host || LOOPBACK.has(url.hostname);
}

/** Copies a response with extra headers (the SDK's responses carry only its own). */
function withHeaders(res: Response, headers: Record<string, string>): Response {
  const merged = new Headers(res.headers);
  for (const [k, v] of Object.entries(headers)) merged.set(k, v);
  return new Response(res.body, { status: res.status, headers: merged });
}

/**
 * A call refused at the HTTP level, so that MCP clients start or step up their authorization: 401 without a valid
 * credential, 403 insufficient_scope for a missing scope; the envelope is the JSON-RPC error's data.
 */
function refusal(svc: Services, error: AppError, id: string | number | null, requestId: string): Response {
  const challenge = bearerChallenge(svc.config.baseUrl, error)!;
  const status = error.code === "UNAUTHENTICATED" ? 401 : 403;
  return rpcError(
    status,
    `${status === 401 ? "Unauthorized" : "Forbidden"}: ${error.message}`,
    id,
    { "WWW-Authenticate": challenge },
    error.envelope(requestId),
  );
}

// add_attachment takes a file as base64: its calls may be larger than other messages.
const toolsEndpoint = mcpEndpoint(toolsServer, {
  largest: (svc) => Math.max(MAX_BODY_BYTES, ...TOOLS.map((t) => t.bodyLimit?.(svc.config) ?? 0)),
  of(svc, body) {
    const call = body as { method?: unknown; params?: { name?: unknown } } | null;
    const tool = call?.method === "tools/call" && typeof call.params?.name === "string" ? findTool(call.params.name) : undefined;
    return tool?.bodyLimit?.(svc.config) ?? MAX_BODY_BYTES;
  },
});
const docsEndpoint = mcpEndpoint((x) => docsServer(x.svc.config.baseUrl, x.requestId));

/** The /mcp and /mcp/docs route: transport rules first, then the server for the path. */
export async function handleMcp(svc: Services, path: string, r: RestRequest): Promise<Response> {
  const endpoint = path === "/mcp" ? toolsEndpoint : path === "/mcp/docs" ? docsEndpoint : null;
  if (!endpoint) throw new AppError("NOT_FOUND", `Nothing at ${path}.`, undefined, undefined, "MCP is at /mcp; the documentation server at /mcp/docs.");
  const headers = commonHeaders(r.requestId);
  if (!originAllowed(r.req.headers.get("origin"), svc.config.baseUrl)) {
    return withHeaders(rpcError(403, "Forbidden: requests from this Origin are not accepted.", null), headers);
  }
  if (r.req.method !== "POST") {
    const message = "Method not allowed: this server offers no stream and no sessions; send each JSON-RPC message with POST.";
    return withHeaders(rpcError(405, message, null, { Allow: "POST" }), headers);
  }
  const token = path === "/mcp" ? bearerToken(r.req.headers.get("authorization")) : null;
  const only = path === "/mcp" ? sessionTools(r.req.url, token !== null) : null;
  if (only && "error" in only) return withHeaders(rpcError(400, `Bad request: ${only.error}`, null), headers);
  const x: Exchange = {
    svc,
    toolNames: only,
    requestId: r.requestId,
    clientAddress: r.clientAddress,
    token,
    idempotencyKey: r.req.headers.get("idempotency-key"),
    headers: {},
    refused: null,
  };
  // A bearer token that is invalid, expired or revoked is refused whatever the method, and spends the address's
  // public limit as over REST: past it the answer is 429.
  const checkToken = async (body: unknown) => {
    if (!x.token || (await svc.db.read((tx) => authenticate(tx, x.token!, svc.config.clock.now())))) return null;
    const limited = chargeFailedCredential(svc, r.clientAddress());
    if (limited) {
      const { error } = limited;
      const headers = { ...limited.headers, "Retry-After": String(error.retryAfter) };
      return rpcError(429, `Too many requests: ${error.message}`, requestIdOf(body), headers, error.envelope(r.requestId));
    }
    return refusal(svc, new AppError("UNAUTHENTICATED", "The credential is missing, invalid, expired or revoked."), requestIdOf(body), r.requestId);
  };
  let res = await endpoint(r.req, x, checkToken);
  if (x.refused) {
    await res.body?.cancel();
    res = refusal(svc, x.refused.error, x.refused.id, r.requestId);
  }
  return withHeaders(res, { ...headers, ...x.headers });
}

/**
 * initialize, server/discover, ping and the lists are public, as tool listing is over REST; a tools/call that needs a
 * credential and lacks a valid one is answered 401, and one whose credential lacks the scope 403 (MCP authorization).
 */
function toolsServer(x: Exchange, era: Era): Server {
  const svc = x.svc;
  const server = statelessServer("svc", "svc agent network", {
    capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
    instructions: toolsInstructions(svc.config.baseUrl, x.toolNames),
  });
  server.setRequestHandler("tools/list", () => ({ tools: mcpTools(offersViews(server, era), x.toolNames) }));
  server.setRequestHandler("resources/list", () => ({
    resources: VIEWS.map((v) => ({ uri: v.uri, name: v.name, title: v.title, description: v.description, mimeType: RESOURCE_MIME_TYPE })),
  }));
  server.setRequestHandler("resources/read", (req) => {
    const view = VIEWS.find((v) => v.uri === req.params.uri);
    if (!view) throw new ResourceNotFoundError(req.params.uri);
    return { contents: [{ uri: view.uri, mimeType: RESOURCE_MIME_TYPE, text: view.html, _meta: { ui: { prefersBorder: true } } }] };
  });
  onToolCall(server, async (name, args, ctx) => {
    if (x.toolNames && !x.toolNames.has(name)) {
      const set = toolsetOf(name);
      const error = set
        ? new AppError(
            "NOT_FOUND",
            `No tool ${name} in this session: it is in the toolset ${set}, which this session's ?toolsets= leaves out.`,
            { toolset: set },
            undefined,
            `Connect to /mcp?toolsets=...,${set} (or /mcp for every tool).`,
          )
        : noSuchTool(name);
      return toolResult(error.envelope(x.requestId), true, { "svc/request_id": x.requestId });
    }
    const result = await invoke(svc, name, args, { requestId: x.requestId, token: x.token, idempotencyKey: x.idempotencyKey, clientAddress: x.clientAddress });
    Object.assign(x.headers, result.headers);
    const meta: Record<string, unknown> = { "svc/request_id": x.requestId };
    if (result.ok) {
      if (result.replayed) meta["svc/idempotent_replayed"] = true;
      return toolResult(result.data, false, meta);
    }
    if (result.error.code === "UNAUTHENTICATED" || missingScope(result.error)) x.refused = { error: result.error, id: ctx.mcpReq.id };
    return toolResult(result.error.envelope(x.requestId), true, meta);
  });
  return server;
}
