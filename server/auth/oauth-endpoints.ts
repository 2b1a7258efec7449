// The authorization server's machine endpoints: registration (RFC 7591), token, revocation (RFC 7009), JWKS.
// They answer in OAuth's own JSON format and allow any origin, as browser-based MCP clients need.
import type { Tx } from "../../db/client.ts";
import { registerClient, revokeToken, tokenRequest } from "./oauth.ts";
import { OAuthError } from "../errors.ts";
import type { Services } from "../services.ts";
import { publicKeys } from "./jwt.ts";

const MAX_BODY_BYTES = 64 * 1024;
const CORS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
  "Access-Control-Allow-Headers": "Content-Type, Authorization",
};

function answer(body: unknown, status = 200, extra: Record<string, string> = {}): Response {
  return new Response(body === null ? null : JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", "Cache-Control": "no-store", Pragma: "no-cache", ...CORS, ...extra },
  });
}

const failure = (e: OAuthError) => answer(e.body(), e.status, e.status === 401 ? { "WWW-Authenticate": 'Basic realm="svc"' } : {});

export const preflight = () => new Response(null, { status: 204, headers: { ...CORS, "Access-Control-Max-Age": "600" } });

async function readBody(req: Request, type: "json" | "form"): Promise<unknown> {
  const text = await req.text();
  if (text.length > MAX_BODY_BYTES) throw new OAuthError("invalid_request", "The body is too large.");
  const contentType = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "form") {
    if (contentType !== "application/x-www-form-urlencoded") throw new OAuthError("invalid_request", "Send application/x-www-form-urlencoded.");
    return new URLSearchParams(text);
  }
  if (contentType !== "application/json") throw new OAuthError("invalid_client_metadata", "Send application/json.");
  try {
    return JSON.parse(text);
  } catch {
    throw new OAuthError("invalid_client_metadata", "The body is not valid JSON.");
  }
}

const slowDown = (resetSeconds: number) =>
  answer({ error: "slow_down", error_description: "Too many requests." }, 429, { "Retry-After": String(resetSeconds) });

/**
 * Runs a step in one transaction. An OAuthError is returned, not thrown, from inside it, so what was written
 * before it (a replayed code or refresh token ending its session) is kept. The address is charged first; with
 * `chargeOnFailure` only when the step fails, and then a failure past the limit is answered as the limit.
 */
async function run(
  svc: Services,
  address: string,
  req: Request,
  type: "json" | "form",
  step: (tx: Tx, body: any, now: Date) => Promise<Response>,
  chargeOnFailure?: (body: unknown) => boolean,
): Promise<Response> {
  const take = () => svc.limiter.take(`oauth:${address}`, "oauth", svc.config.publicRateLimit);
  if (!chargeOnFailure) {
    const decision = take();
    if (!decision.allowed) return slowDown(decision.resetSeconds);
  }
  // Until the body shows the step is one charged only on failure, an unreadable body included.
  let deferred = chargeOnFailure !== undefined;
  const res = await (async () => {
    try {
      const body = await readBody(req, type);
      if (deferred && !chargeOnFailure!(body)) {
        deferred = false;
        const decision = take();
        if (!decision.allowed) return slowDown(decision.resetSeconds);
      }
      const now = svc.config.clock.now();
      return await svc.db.tx(async (tx) => {
        try {
          return await step(tx, body, now);
        } catch (err) {
          if (err instanceof OAuthError) return failure(err);
          throw err;
        }
      });
    } catch (err) {
      if (err instanceof OAuthError) return failure(err);
      throw err;
    }
  })();
  if (deferred && !res.ok) {
    const decision = take();
    if (!decision.allowed) return slowDown(decision.resetSeconds);
  }
  return res;
}

export const register = (svc: Services, req: Request, address: string) =>
  run(svc, address, req, "json", async (tx, body, now) => answer(await registerClient(tx, body, now), 201));

// A client refreshing its tokens with a valid refresh token is not held back by others behind the same address (a
// proxy, a NAT) spending its limit; a guess at a refresh token (256 random bits) still spends it.
const isRefresh = (form: unknown) => (form as URLSearchParams).get("grant_type") === "refresh_token";

export const token = (svc: Services, req: Request, address: string) =>
  run(svc, address, req, "form", async (tx, form, now) => answer(await tokenRequest(tx, form, svc.config.baseUrl, now, svc.clientConnected)), isRefresh);

export const revoke = (svc: Services, req: Request, address: string) =>
  run(svc, address, req, "form", async (tx, form, now) => {
    await revokeToken(tx, form, now);
    return answer(null);
  });

export async function jwks(svc: Services): Promise<Response> {
  const keys = await svc.db.read((tx) => publicKeys(tx, svc.config.baseUrl));
  return answer(keys, 200, { "Cache-Control": "public, max-age=300" });
}
