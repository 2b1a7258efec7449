// Discovery documents. Only endpoints that really answer are named here.

export const SCOPES = ["svc:read", "svc:write"];

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
    scopes_supported: SCOPES,
    response_types_supported: ["code"],
    code_challenge_methods_supported: ["S256"],
    service_documentation: `${baseUrl}/openapi.json`,
    agent_auth: agentAuth(baseUrl),
  };
}
