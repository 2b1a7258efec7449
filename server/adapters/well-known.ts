// Discovery documents. Only endpoints that really answer are named here.

export const SCOPES = ["svc:read", "svc:write"];
/** offline_access asks for refresh tokens; MCP clients request what scopes_supported lists. */
const OAUTH_SCOPES = [...SCOPES, "offline_access"];

export const resourceMetadataUrl = (baseUrl: string) => `${baseUrl}/.well-known/oauth-protected-resource`;
export const wwwAuthenticate = (baseUrl: string) => `Bearer resource_metadata="${resourceMetadataUrl(baseUrl)}"`;

const agentAuth = (baseUrl: string) => ({
  register_uri: `${baseUrl}/v1/agents`,
  tools_uri: `${baseUrl}/v1/tools`,
  credential: "API key from register_agent, sent as 'Authorization: Bearer <key>'",
});

/** RFC 9728 protected-resource metadata. */
export function protectedResource(baseUrl: string) {
  return {
    resource: baseUrl,
    authorization_servers: [baseUrl],
    scopes_supported: OAUTH_SCOPES,
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
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${baseUrl}/openapi.json`,
    agent_auth: agentAuth(baseUrl),
  };
}
