// REST transport: POST /v1/tools/{name} and its aliases, translated to and from invoke().
import { bearerToken } from "../auth/authenticate.ts";
import type { AppError } from "../errors.ts";
import { invoke } from "../tools/invoke.ts";
import { findTool } from "../tools/catalogue.ts";
import type { CallResult, Services } from "../services.ts";
import { errorResponse, json, readJsonBody } from "./http.ts";
import { bearerChallenge } from "./well-known.ts";

/** REST paths that call a tool directly, besides POST /v1/tools/{name}. */
export const TOOL_ALIASES: Readonly<Record<string, string>> = {
  "/v1/agents": "register_agent",
  "/v1/join-network": "join_network",
  "/v1/join-network/finish": "finish_join",
};

export interface RestRequest {
  req: Request;
  requestId: string;
  clientAddress: () => string;
}

export function resultResponse(svc: Services, r: CallResult, requestId: string): Response {
  if (r.ok) {
    const headers = r.replayed ? { ...r.headers, "Idempotent-Replayed": "true" } : r.headers;
    return json({ ok: true, data: r.data, request_id: requestId }, 200, requestId, headers);
  }
  return failure(svc, r.error, requestId, r.headers);
}

export function failure(svc: Services, error: AppError, requestId: string, headers: Record<string, string> = {}): Response {
  const challenge = bearerChallenge(svc.config.baseUrl, error);
  return errorResponse(error, requestId, challenge ? { ...headers, "WWW-Authenticate": challenge } : headers);
}

export async function callTool(svc: Services, name: string, r: RestRequest, opts: { sandbox?: boolean } = {}): Promise<Response> {
  let body: unknown;
  try {
    body = await readJsonBody(r.req, findTool(name)?.bodyLimit?.(svc.config));
  } catch (err) {
    // a refused body may be partly unread; closing the connection keeps it from holding up shutdown
    return failure(svc, err as AppError, r.requestId, { Connection: "close" });
  }
  const result = await invoke(svc, name, body, {
    requestId: r.requestId,
    token: bearerToken(r.req.headers.get("authorization")),
    idempotencyKey: r.req.headers.get("idempotency-key"),
    clientAddress: r.clientAddress,
    sandbox: opts.sandbox,
  });
  return resultResponse(svc, result, r.requestId);
}
