// The HTTP application: one explicit route list; every tool call goes through invoke().
import { AppError, toAppError } from "./errors.ts";
import { hasBaseHeaders, json } from "./adapters/http.ts";
import { handleMcp } from "./adapters/mcp.ts";
import { openApiDocument } from "./adapters/openapi.ts";
import { TOOL_ALIASES, callTool, failure, resultResponse } from "./adapters/rest.ts";
import { wellKnownDocument } from "./adapters/well-known.ts";
import { bearerToken } from "./auth/authenticate.ts";
import { catalogue, describeTool, findTool } from "./tools/catalogue.ts";
import { invoke } from "./tools/invoke.ts";
import type { Services } from "./services.ts";
import type { Ops } from "./observability/ops.ts";
import { handleWeb, isWebRequest } from "./web/routes.ts";

/** A request and how to learn its client's address (asked only when needed). */
export type Handler = (req: Request, clientAddress: () => string) => Promise<Response>;

export function createApp(svc: Services, ops: Ops): Handler {
  let openapi: string | undefined;

  const route: Handler = async (req, clientAddress) => {
    const requestId = crypto.randomUUID();
    const base = svc.config.baseUrl;
    const path = pathOf(req.url);
    const r = { req, requestId, clientAddress };
    const method = req.method;
    try {
      // MCP (server/adapters/mcp.ts): every tool at /mcp, the documentation server at /mcp/docs.
      if (path === "/mcp" || path.startsWith("/mcp/")) return await handleMcp(svc, path, r);
      if (path.startsWith("/v1/tools/") && method === "POST") return await callTool(svc, toolName(path, 10), r);
      const alias = TOOL_ALIASES[path];
      if (alias && method === "POST") return await callTool(svc, alias, r);
      // Humans on the web and the OAuth authorization server (server/web/routes.ts).
      if (isWebRequest(req, path)) return await handleWeb(svc, req, path, clientAddress());
      if (path.startsWith("/v1/sandbox/tools/") && method === "POST") {
        return await callTool(svc, toolName(path, 18), r, { sandbox: true });
      }
      if (method === "GET" || method === "HEAD") {
        if (path === "/v1/tools") {
          const { tools, etag } = catalogue();
          if (req.headers.get("if-none-match") === etag) {
            return new Response(null, { status: 304, headers: { ETag: etag, "X-Request-Id": requestId } });
          }
          return json(
            { ok: true, data: { version: etag.replaceAll('"', ""), count: tools.length, tools, suggested_next: ["register_agent"] }, request_id: requestId },
            200,
            requestId,
            {
              ETag: etag,
              "Cache-Control": "no-cache",
            },
          );
        }
        if (path.startsWith("/v1/tools/")) {
          const tool = findTool(toolName(path, 10));
          if (!tool) throw new AppError("NOT_FOUND", "There is no tool by that name.", undefined, undefined, "GET /v1/tools lists every tool.");
          return json({ ok: true, data: { tool: describeTool(tool), suggested_next: [tool.name] }, request_id: requestId }, 200, requestId);
        }
        if (path === "/v1") return await whoAmI(svc, r);
        if (path === "/openapi.json") {
          openapi ??= JSON.stringify(openApiDocument(base));
          return new Response(openapi, { headers: { "Content-Type": "application/json", "X-Request-Id": requestId } });
        }
        const metadata = path.startsWith("/.well-known/oauth-") ? wellKnownDocument(path, base) : null;
        if (metadata) return json(metadata, 200, requestId, { "Cache-Control": "public, max-age=300" });
        if (path === "/healthz") return json({ ok: true }, 200, requestId);
        if (path === "/readyz") return await ops.readyz(requestId);
        if (path === "/metrics") return await ops.metricsEndpoint(req, requestId);
      }
      throw new AppError("NOT_FOUND", `Nothing at ${method} ${path}.`, undefined, undefined, "See /openapi.json for every endpoint.");
    } catch (err) {
      if (!(err instanceof AppError)) ops.serverError(err, requestId);
      return failure(svc, toAppError(err), requestId);
    }
  };
  return async (req, clientAddress) => withSecurityHeaders(await route(req, clientAddress));
}

/** The path of a request URL without trailing slashes, read without building a URL object (every request needs it). */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  let end = url.length;
  for (const c of ["?", "#"]) {
    const i = url.indexOf(c, start);
    if (i >= 0 && i < end) end = i;
  }
  while (end > start + 1 && url[end - 1] === "/") end--;
  return url.slice(start, end);
}

/** The tool name at the end of a path; a malformed percent-escape (%ZZ) names no tool rather than failing. */
function toolName(path: string, from: number): string {
  try {
    return decodeURIComponent(path.slice(from));
  } catch {
    return path.slice(from);
  }
}

/**
 * On every answer, whatever wrote it (the MCP SDK, web pages, OAuth endpoints): no MIME sniffing, and no caching
 * unless the route chose a policy (a 304 keeps the cached answer's own).
 */
function withSecurityHeaders(res: Response): Response {
  if (hasBaseHeaders(res)) return res;
  const missing: Record<string, string> = {};
  if (!res.headers.has("X-Content-Type-Options")) missing["X-Content-Type-Options"] = "nosniff";
  if (!res.headers.has("Cache-Control") && res.status !== 304) missing["Cache-Control"] = "no-store";
  if (!Object.keys(missing).length) return res;
  const headers = new Headers(res.headers);
  for (const [k, v] of Object.entries(missing)) headers.set(k, v);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}

/** GET /v1: get_me through the same pipeline, plus where to go next. */
async function whoAmI(svc: Services, r: { req: Request; requestId: string; clientAddress: () => string }): Promise<Response> {
  const result = await invoke(
    svc,
    "get_me",
    {},
    {
      requestId: r.requestId,
      token: bearerToken(r.req.headers.get("authorization")),
      clientAddress: r.clientAddress,
    },
  );
  if (result.ok) {
    const base = svc.config.baseUrl;
    result.data = {
      ...result.data,
      links: { tools: `${base}/v1/tools`, openapi: `${base}/openapi.json`, mcp: `${base}/mcp`, docs: `${base}/mcp/docs` },
    };
  }
  return resultResponse(svc, result, r.requestId);
}
