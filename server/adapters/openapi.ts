// OpenAPI 3.1, generated from the catalogue: one path per tool plus the discovery endpoints.
import { ERROR_CODES } from "../errors.ts";
import { TOOLS, inputJsonSchema, outputJsonSchema } from "../tools/catalogue.ts";
import type { Tool } from "../tools/define.ts";
import { VERSION } from "../version.ts";
import { TOOL_ALIASES } from "./rest.ts";
import { SCOPES } from "./well-known.ts";

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: ref("ErrorEnvelope") } },
});
const STATUS_TEXT: Record<number, string> = {
  400: "VALIDATION_ERROR: invalid arguments; details.issues names each field",
  401: "UNAUTHENTICATED: missing, invalid or revoked credential",
  403: "FORBIDDEN: the credential lacks a scope (details.required_scope)",
  404: "NOT_FOUND: unknown tool, or an object the caller may not see",
  409: "CONFLICT or IDEMPOTENCY_KEY_REUSED",
  429: "RATE_LIMITED: wait retry_after seconds (Retry-After header)",
  500: "INTERNAL: nothing internal is leaked; quote request_id",
  503: "STORAGE_UNAVAILABLE: the server cannot store writes now (disk full, failing or read-only); retry after retry_after seconds with the same idempotency key",
};
const statuses = (list: number[]) => Object.fromEntries(list.map((s) => [String(s), errorResponse(STATUS_TEXT[s]!)]));

const rateLimitHeaders = {
  "RateLimit-Policy": { schema: { type: "string" }, description: "The rate-limit policy (IETF RateLimit fields)" },
  RateLimit: { schema: { type: "string" }, description: "Remaining calls and seconds to reset" },
  "X-Request-Id": { schema: { type: "string" } },
};

/**
 * A tool's answer schema with the definitions it shares ($defs) moved to components/schemas as `<tool>.<name>`:
 * inside an OpenAPI document a "#/..." reference points into the document itself.
 */
function hoistDefinitions(t: Tool, schema: Record<string, unknown>, components: Record<string, unknown>): Record<string, unknown> {
  const { $defs, ...rest } = schema;
  const rewrite = (node: unknown) => JSON.parse(JSON.stringify(node).replaceAll('"#/$defs/', `"#/components/schemas/${t.name}.`));
  for (const [name, def] of Object.entries(($defs ?? {}) as Record<string, unknown>)) components[`${t.name}.${name}`] = rewrite(def);
  return rewrite(rest);
}

function toolOperation(t: Tool, components: Record<string, unknown>) {
  const security = t.isPublic ? [] : [{ bearer: [] }, { oauth: [t.scope] }];
  return {
    operationId: t.name,
    summary: t.title,
    description: t.description,
    tags: t.tags,
    security,
    ...(t.idempotent ? { parameters: [{ $ref: "#/components/parameters/IdempotencyKey" }] } : {}),
    requestBody: { required: false, content: { "application/json": { schema: inputJsonSchema(t) } } },
    responses: {
      "200": {
        description: "Success envelope",
        headers: rateLimitHeaders,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["ok", "data"],
              properties: { ok: { const: true }, data: hoistDefinitions(t, outputJsonSchema(t), components), request_id: { type: "string" } },
            },
          },
        },
      },
      ...statuses(t.isPublic ? [400, 409, 429, 500, 503] : [400, 401, 403, 404, 409, 429, 500, 503]),
    },
  };
}

export function openApiDocument(baseUrl: string) {
  const paths: Record<string, unknown> = {};
  const shared: Record<string, unknown> = {};
  for (const t of TOOLS) paths[`/v1/tools/${t.name}`] = { post: toolOperation(t, shared) };
  paths["/v1/tools"] = {
    get: {
      operationId: "list_tools",
      summary: "Every tool with its input and output JSON Schema; ETag is the catalogue version",
      security: [],
      parameters: [{ name: "If-None-Match", in: "header", required: false, schema: { type: "string" } }],
      responses: {
        "200": { description: "The catalogue", headers: { ETag: { schema: { type: "string" } } } },
        "304": { description: "Unchanged" },
        ...statuses([429, 500]),
      },
    },
  };
  paths["/v1/tools/{name}"] = {
    get: {
      operationId: "describe_tool",
      summary: "One tool with its input and output schema",
      security: [],
      parameters: [{ name: "name", in: "path", required: true, schema: { type: "string" } }],
      responses: { "200": { description: "The tool" }, ...statuses([404, 429, 500]) },
    },
  };
  paths["/v1/sandbox/tools/{name}"] = {
    post: {
      operationId: "sandbox_tool",
      summary: "Validates arguments against the live schema; nothing is stored or sent",
      security: [],
      parameters: [{ name: "name", in: "path", required: true, schema: { type: "string" } }],
      requestBody: { required: false, content: { "application/json": { schema: { type: "object" } } } },
      responses: { "200": { description: "The arguments are valid" }, ...statuses([400, 404, 429, 500]) },
    },
  };
  paths["/v1"] = {
    get: {
      operationId: "who_am_i",
      summary: "Who am I: the agent profile and where to go next",
      security: [{ bearer: [] }, { oauth: ["svc:read"] }],
      responses: { "200": { description: "The caller" }, ...statuses([401, 429, 500, 503]) },
    },
  };
  for (const [path, name] of Object.entries(TOOL_ALIASES)) {
    const tool = TOOLS.find((t) => t.name === name);
    if (tool) paths[path] = { post: { ...toolOperation(tool, shared), operationId: `${name}_alias` } };
  }

  const codes = Object.keys(ERROR_CODES);
  return {
    openapi: "3.1.0",
    info: { title: "svc: agent network and shared-expense ledger", version: VERSION },
    servers: [{ url: baseUrl }],
    paths,
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "An API key from register_agent, or an OAuth access token" },
        oauth: {
          type: "oauth2",
          flows: {
            authorizationCode: {
              authorizationUrl: `${baseUrl}/oauth/authorize`,
              tokenUrl: `${baseUrl}/oauth/token`,
              scopes: Object.fromEntries(SCOPES.map((s) => [s, s === "svc:read" ? "read tools" : "write tools"])),
            },
          },
        },
      },
      parameters: {
        IdempotencyKey: {
          name: "Idempotency-Key",
          in: "header",
          required: false,
          description: "Same as the idempotency_key field: 8-128 chars; retries with the same key never repeat the action",
          schema: { type: "string", minLength: 8, maxLength: 128 },
        },
      },
      schemas: {
        ...shared,
        SuccessEnvelope: {
          type: "object",
          required: ["ok", "data"],
          properties: { ok: { const: true }, data: { type: "object" }, request_id: { type: "string" } },
        },
        ErrorEnvelope: {
          type: "object",
          required: ["ok", "error", "request_id"],
          properties: {
            ok: { const: false },
            error: {
              type: "object",
              required: ["code", "message", "suggested_action"],
              properties: {
                code: { type: "string", enum: codes },
                message: { type: "string" },
                suggested_action: { type: "string" },
                details: { type: "object" },
                retry_after: { type: "number" },
              },
            },
            request_id: { type: "string" },
          },
        },
      },
    },
  };
}
