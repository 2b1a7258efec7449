import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TOOLS } from "../../server/tools/catalogue.ts";
import { VERSION } from "../../server/version.ts";
import { startTestServer, type TestServer } from "../harness.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const get = async (path: string, headers: Record<string, string> = {}) => {
  const res = await s.raw(path, { headers });
  return { res, body: res.status === 304 ? null : ((await res.json()) as any) };
};

describe("catalogue and discovery", () => {
  test("GET /v1/tools lists every tool with input and output JSON Schema; ETag and If-None-Match -> 304", async () => {
    const { res, body } = await get("/v1/tools");
    expect(res.status).toBe(200);
    expect(body.data.tools.map((t: any) => t.name)).toEqual(TOOLS.map((t) => t.name));
    // The dialect is said once for every schema.
    expect(body.data.schema_dialect).toBe("https://json-schema.org/draft/2020-12/schema");
    for (const t of body.data.tools) {
      expect(t.input_schema.type).toBe("object");
      expect(t.output_schema.properties.suggested_next).toBeDefined();
      expect(t.tags.length).toBeGreaterThan(0);
      if (t.idempotent) expect(t.input_schema.required).toContain("idempotency_key");
    }
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^".+"$/);
    const again = await get("/v1/tools", { "if-none-match": etag });
    expect(again.res.status).toBe(304);
    expect((await get("/v1/tools", { "if-none-match": '"stale"' })).res.status).toBe(200);
  });

  test("the catalogue holds exactly the tools of the specification and the issues since, with its tags", () => {
    const spec: Record<string, string[]> = {
      register_agent: ["write"],
      join_network: ["write"],
      finish_join: ["write"],
      get_me: ["read"],
      update_me: ["write"],
      rotate_api_key: ["write", "destructive"],
      get_settings_link: ["read"],
      list_clients: ["read"],
      disconnect_client: ["write", "destructive"],
      get_contact_code: ["read"],
      rotate_contact_code: ["write"],
      add_contact: ["write"],
      respond_contact_request: ["write"],
      list_contacts: ["read"],
      remove_contact: ["write", "destructive"],
      block_contact: ["write", "destructive"],
      get_inbox: ["read"],
      ack_inbox: ["write"],
      create_group: ["write"],
      list_groups: ["read"],
      get_group: ["read"],
      update_group: ["write"],
      archive_group: ["write"],
      create_group_invite: ["write"],
      respond_group_invite: ["write"],
      join_group: ["write"],
      leave_group: ["write"],
      remove_group_member: ["write", "destructive"],
      open_direct_ledger: ["write"],
      add_expense: ["write"],
      list_expenses: ["read"],
      get_expense: ["read"],
      update_expense: ["write"],
      delete_expense: ["write", "destructive"],
      restore_expense: ["write"],
      respond_expense: ["write"],
      list_recurring: ["read"],
      stop_recurring: ["write"],
      add_attachment: ["write"],
      list_attachments: ["read"],
      delete_attachment: ["write", "destructive"],
      record_payment: ["write"],
      respond_payment: ["write"],
      list_payments: ["read"],
      get_balances: ["read"],
      get_activity: ["read"],
      get_spending: ["read"],
      export_group: ["read"],
      send_envelope: ["write"],
      get_envelope: ["read"],
      reply_envelope: ["write"],
      list_envelopes: ["read"],
      create_plan: ["write"],
      get_plan: ["read"],
      list_plans: ["read"],
      respond_plan: ["write"],
      update_plan: ["write"],
      cancel_plan: ["write", "destructive"],
    };
    expect(Object.fromEntries(TOOLS.map((t): [string, string[]] => [t.name, t.tags]))).toEqual(spec);
  });

  test("tool names are unique and follow the MCP naming rules", () => {
    const names = TOOLS.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[a-z][a-z0-9_]{0,63}$/);
  });

  test("GET /v1/tools/{name} describes one tool", async () => {
    const { res, body } = await get("/v1/tools/add_contact");
    expect(res.status).toBe(200);
    expect(body.data.tool.name).toBe("add_contact");
    expect(body.data.tool.description).toContain("human must approve");
    expect(body.data.tool.input_schema.properties.note.maxLength).toBe(500);
  });

  test("POST /v1/sandbox/tools/{name} validates against the live schema and stores nothing, with no credential", async () => {
    const ok = await s.raw("/v1/sandbox/tools/register_agent", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ handle: "sandboxed", display_name: "S" }),
    });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as any).data.valid).toBe(true);
    const bad = await s.raw("/v1/sandbox/tools/add_contact", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ handle: "X" }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.details.issues.map((i: any) => i.path)).toContain("handle");
    // nothing was stored: the handle is still free
    expect((await s.call("register_agent", { handle: "sandboxed", display_name: "S" })).status).toBe(200);
  });

  test("/openapi.json is OpenAPI 3.1 with every tool path, envelopes, security schemes, Idempotency-Key and statuses", async () => {
    const { body } = await get("/openapi.json");
    expect(body.openapi).toBe("3.1.0");
    expect(body.info.version).toBe(VERSION);
    for (const t of TOOLS) {
      const op = body.paths[`/v1/tools/${t.name}`].post;
      expect(op.operationId).toBe(t.name);
      expect(op.responses["200"]).toBeDefined();
      expect(op.responses["400"]).toBeDefined();
      expect(op.responses["429"]).toBeDefined();
      expect(op.responses["500"]).toBeDefined();
      if (!t.isPublic) expect(op.responses["401"]).toBeDefined();
      if (t.idempotent) expect(op.parameters[0].$ref).toBe("#/components/parameters/IdempotencyKey");
    }
    expect(body.paths["/v1/tools"].get.responses["304"]).toBeDefined();
    expect(body.paths["/v1/sandbox/tools/{name}"].post.responses["404"]).toBeDefined();
    expect(body.components.securitySchemes.bearer.scheme).toBe("bearer");
    expect(body.components.securitySchemes.oauth.type).toBe("oauth2");
    expect(body.components.parameters.IdempotencyKey.in).toBe("header");
    expect(body.components.schemas.ErrorEnvelope.properties.error.properties.code.enum).toContain("IDEMPOTENCY_KEY_REUSED");
    // every reference points into the document: an answer's shared definitions are components
    const refs = [...JSON.stringify(body).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(0);
    for (const r of refs) {
      const target = r
        .replace(/^#\//, "")
        .split("/")
        .reduce((node: any, part) => node?.[part.replaceAll("~1", "/").replaceAll("~0", "~")], body);
      expect({ ref: r, found: target !== undefined }).toEqual({ ref: r, found: true });
    }
  });

  test("the well-known metadata documents carry agent_auth.register_uri, and every endpoint they name answers", async () => {
    const pr = (await get("/.well-known/oauth-protected-resource")).body;
    const as = (await get("/.well-known/oauth-authorization-server")).body;
    expect(pr.resource).toBe(s.url);
    expect(pr.agent_auth.register_uri).toBe(`${s.url}/v1/agents`);
    expect(as.issuer).toBe(s.url);
    expect(as.agent_auth.register_uri).toBe(`${s.url}/v1/agents`);
    const urls = [pr, as].flatMap((doc) => Object.entries(doc).flatMap(([k, v]) => (k.endsWith("_endpoint") || k.endsWith("_uri") ? [v as string] : [])));
    for (const u of urls) {
      const res = await fetch(u, { method: "GET" });
      expect([u, res.status === 404]).toEqual([u, false]);
    }
  });
});
