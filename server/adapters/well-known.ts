// Discovery documents and the Bearer challenges that point to them. Only endpoints that really answer are named here.
import type { AppError } from "../errors.ts";

/** What a resource asks of a token. offline_access is the authorization server's business (refresh tokens), never required here. */
export const SCOPES = ["svc:read", "svc:write"];
/** The authorization server also offers offline_access, for clients that want refresh tokens. */
const OAUTH_SCOPES = [...SCOPES, "offline_access"];

export const resourceMetadataUrl = (baseUrl: string) => `${baseUrl}/.well-known/oauth-protected-resource`;

/** The scope a FORBIDDEN answer says is missing, when that is why it was refused. */
export const missingScope = (error: AppError): string | null =>
  error.code === "FORBIDDEN" && typeof error.details?.required_scope === "string" ? error.details.required_scope : null;

/**
 * The WWW-Authenticate challenge of an answer (RFC 6750 §3, RFC 9728 §5.1): every 401 names the resource metadata;
 * a 403 for a missing scope adds error="insufficient_scope" and the scope, so an OAuth client can step up.
 */
export function bearerChallenge(baseUrl: string, error: AppError): string | null {
  const metadata = `resource_metadata="${resourceMetadataUrl(baseUrl)}"`;
  if (error.code === "UNAUTHENTICATED") return `Bearer ${metadata}`;
  const scope = missingScope(error);
  if (scope === null) return null;
  return `Bearer error="insufficient_scope", scope="${scope}", ${metadata}, error_description="This credential lacks the scope ${scope}."`;
}

const agentAuth = (baseUrl: string) => ({
  register_uri: `${baseUrl}/v1/agents`,
  tools_uri: `${baseUrl}/v1/tools`,
  credential: "API key from register_agent, sent as 'Authorization: Bearer <key>'",
});

/** RFC 9728 protected-resource metadata of `resource` (the service, or its MCP endpoint). */
export function protectedResource(baseUrl: string, resource = baseUrl) {
  return {
    resource,
    authorization_servers: [baseUrl],
    scopes_supported: SCOPES,
    bearer_methods_supported: ["header"],
    resource_name: "svc agent network",
    resource_documentation: `${baseUrl}/openapi.json`,
    agent_auth: agentAuth(baseUrl),
  };
}

/** RFC 8414 authorization-server metadata. */
export function authorizationServer(baseUrl: string) {
  return {
    issuer: baseUrl,
    authorization_endpoint: `${baseUrl}/oauth/authorize`,
    token_endpoint: `${baseUrl}/oauth/token`,
    registration_endpoint: `${baseUrl}/oauth/register`,
    revocation_endpoint: `${baseUrl}/oauth/revoke`,
    jwks_uri: `${baseUrl}/.well-known/jwks.json`,
    scopes_supported: OAUTH_SCOPES,
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"],
    // an https URL may be the client_id: its metadata document is fetched (server/auth/client-metadata.ts)
    client_id_metadata_document_supported: true,
    // RFC 9207: every answer of the authorization endpoint, success or error, carries iss
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${baseUrl}/openapi.json`,
    agent_auth: agentAuth(baseUrl),
  };
}

const AS_PATH = "/.well-known/oauth-authorization-server";
const PRM_PATH = "/.well-known/oauth-protected-resource";

/**
 * The metadata document at `path`, or null. The well-known segment goes between the host and the path of the
 * issuer or resource (RFC 8414 §3.1, RFC 9728 §3.1): for a base URL with a path (svc behind a proxy at
 * https://host/svc) the documents are at /.well-known/oauth-authorization-server/svc and
 * /.well-known/oauth-protected-resource/svc[/mcp]. The bare locations answer too (a proxy that strips the
 * base path forwards {base_url}/.well-known/... there, and the challenges name that URL).
 */
export function wellKnownDocument(path: string, baseUrl: string): object | null {
  const basePath = new URL(baseUrl).pathname.replace(/\/+$/, "");
  if (path === AS_PATH || path === `${AS_PATH}${basePath}`) return authorizationServer(baseUrl);
  if (path === PRM_PATH || path === `${PRM_PATH}${basePath}`) return protectedResource(baseUrl);
  if (path === `${PRM_PATH}${basePath}/mcp`) return protectedResource(baseUrl, `${baseUrl}/mcp`);
  return null;
}
