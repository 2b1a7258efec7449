// The HTTP application: the route table (server/routes.ts), one error handler, and the headers every answer carries.
import { AppError, toAppError } from "./errors.ts";
import { hasBaseHeaders } from "./adapters/http.ts";
import { failure } from "./adapters/rest.ts";
import type { Ops } from "./observability/ops.ts";
import { Router } from "./router.ts";
import { type Call, notFound, ROUTES } from "./routes.ts";
import type { Services } from "./services.ts";

/** A request and how to learn its client's address (asked only when needed). */
export type Handler = (req: Request, clientAddress: () => string) => Promise<Response>;

export function createApp(svc: Services, ops: Ops): Handler {
  const router = new Router(ROUTES);
  const cache = {};

  const route: Handler = async (req, clientAddress) => {
    const requestId = crypto.randomUUID();
    const c: Call = { svc, ops, req, path: pathOf(req.url), requestId, clientAddress, cache };
    try {
      const found = router.find(req.method, c.path);
      return await (found ? found.route.run(c, found.params) : notFound(c));
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
