// The read-only documentation server at /mcp/docs, read with the SDK clients of both eras and no credential.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { exampleAnswer } from "../../server/tools/example-answer.ts";
import { ERROR_CODES } from "../../server/errors.ts";
import { TOOLS, findTool, inputJsonSchema, outputJsonSchema } from "../../server/tools/catalogue.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { ERAS, connectMcp, postRpc, type McpClient } from "./clients.ts";
import { INBOX_TYPES } from "../../server/contract/inbox-types.ts";

// The inbox item types the catalogue (shared/spec/catalogue.md) names.
const ITEM_TYPES = [
  "contact.request",
  "contact.accepted",
  // added by svc (docs/federation.md): what was sent to another server was given up after 72 hours
  "network.undelivered",
  // added by svc (docs/auth.md): someone you share a group with, or a contact, deleted their account
  "network.account_deleted",
  "mail.envelope",
  "group.invitation",
  "group.member_joined",
  "ledger.expense_added",
  "ledger.expense_updated",
  "ledger.expense_deleted",
  "ledger.expense_disputed",
  "ledger.payment_to_confirm",
  "ledger.payment_confirmed",
  "ledger.payment_rejected",
  // added by svc (docs/ledger.md): a payment voided by the other party
  "ledger.payment_voided",
  // added by svc (docs/ledger.md): a placeholder member taken over, summing up what it was put down for
  "ledger.placeholder_claimed",
  "plan.invitation",
  "plan.response",
  "plan.changed",
  "plan.cancelled",
  "auth.join_code",
  // added by svc (docs/inbox-item-types.md): a new app connected to the handle, with how to disconnect it
  "auth.client_connected",
];

const PAGES = ["overview", "tools", "inbox-item-types", "ledger", "errors", "limits", "mcp", "auth", "federation", "cli"];

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe.each(ERAS)("a %s client", (era) => {
  let docs: McpClient;
  beforeAll(async () => {
    docs = await connect();
  });
  afterAll(() => docs.close());

  const connect = (headers: Record<string, string> = {}) => connectMcp(era, `${s.url}/mcp/docs`, headers);

  const read = async (uri: string) => {
    const { contents } = await docs.readResource({ uri });
    expect(contents).toHaveLength(1);
    expect(contents[0]!.mimeType).toBe("text/markdown");
    return (contents[0] as { text: string }).text;
  };

  /** tools/call; the answer is structuredContent and its JSON text, an error envelope the text only. */
  const callTool = async (name: string, args: Record<string, unknown>): Promise<any> => {
    const result: any = await docs.callTool({ name, arguments: args });
    const body = JSON.parse(result.content[0].text);
    if (result.isError) expect(result.structuredContent).toBeUndefined();
    else expect(body).toEqual(result.structuredContent);
    return { ...result, body };
  };

  describe("resources", () => {
    test("overview, tool index, inbox item types, ledger, errors, limits, MCP, authentication, federation, command line, and one page per tool", async () => {
      const { resources } = await docs.listResources();
      const uris = resources.map((r) => r.uri);
      expect(uris.slice(0, PAGES.length)).toEqual(PAGES.map((p) => `svc://docs/${p}`));
      expect(uris.slice(PAGES.length)).toEqual(TOOLS.map((t) => `svc://docs/tools/${t.name}`));
      for (const r of resources) {
        expect(r.title).toBeString();
        expect(r.description).toBeString();
        expect(r.mimeType).toBe("text/markdown");
      }
      const { resourceTemplates } = await docs.listResourceTemplates();
      expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(["svc://docs/tools/{name}"]);
    });

    test("the overview comes from docs/overview.md with this server's base URL filled in", async () => {
      const text = await read("svc://docs/overview");
      expect(text).toStartWith("# svc: overview");
      expect(text).toContain(`${s.url}/mcp/docs`);
      expect(text).not.toContain("{base_url}");
    });

    test("a tool page: purpose, credential, example call and answer, errors, both schemas", async () => {
      const t = findTool("add_contact")!;
      const text = await read("svc://docs/tools/add_contact");
      expect(text).toStartWith(`# add_contact: ${t.title}`);
      expect(text).toContain(t.description);
      expect(text).toContain("scope `svc:write`");
      expect(text).toContain(`POST ${s.url}/v1/tools/add_contact`);
      for (const heading of ["## Example call", "## Example answer", "## Errors", "## Input schema", "## Output schema"]) expect(text).toContain(heading);
      expect(text).toContain(JSON.stringify(inputJsonSchema(t), null, 2));
      expect(text).toContain(JSON.stringify(outputJsonSchema(t), null, 2));
      for (const code of ["UNAUTHENTICATED", "FORBIDDEN", "VALIDATION_ERROR", "IDEMPOTENCY_KEY_REUSED"]) expect(text).toContain(`| ${code} |`);
      const publicPage = await read("svc://docs/tools/register_agent");
      expect(publicPage).toContain("none (public tool)");
      expect(publicPage).not.toContain("| UNAUTHENTICATED |");
    });

    test("the tool index lists every tool", async () => {
      const text = await read("svc://docs/tools");
      for (const t of TOOLS) expect(text).toContain(`[${t.name}](svc://docs/tools/${t.name})`);
    });

    test("the errors page has every error code with its HTTP status and what to do", async () => {
      const text = await read("svc://docs/errors");
      for (const [code, e] of Object.entries(ERROR_CODES)) {
        expect(text).toContain(`| ${code} | ${e.status} |`);
        expect(text).toContain(e.action);
      }
    });

    test("the inbox item types page documents every type the catalogue names", async () => {
      const text = await read("svc://docs/inbox-item-types");
      const payloadHeadings = text
        .split("\n")
        .filter((l) => l.startsWith("### "))
        .join(" ");
      // The registry deliver() reads holds exactly the catalogue's types, and the page's table is rendered from it.
      expect(Object.keys(INBOX_TYPES).sort()).toEqual([...ITEM_TYPES].sort());
      expect(text).not.toContain("{inbox_types_table}");
      for (const type of ITEM_TYPES) {
        expect(text).toContain(`| \`${type}\` |`);
        expect({ type, payload: payloadHeadings.includes(type) }).toEqual({ type, payload: true });
      }
    });

    test("the limits page", async () => {
      const text = await read("svc://docs/limits");
      expect(text).toContain("idempotency_key | 8-128");
      expect(text).toContain("RateLimit-Policy");
    });

    test("the MCP page, with the client configuration", async () => {
      const text = await read("svc://docs/mcp");
      expect(text).toContain("## MCP client configuration");
      expect(text).toContain(`${s.url}/.well-known/oauth-protected-resource`);
    });

    test("an unknown resource is the JSON-RPC error for a missing resource (-32602 naming the uri, in both eras)", async () => {
      const err = await docs.readResource({ uri: "svc://docs/nothing" }).catch((e) => e);
      expect(err.code).toBe(-32602);
      expect(err.data).toEqual({ uri: "svc://docs/nothing" });
    });
  });

  describe("tools", () => {
    test("search_docs and get_tool_doc, read-only, with input and output schemas", async () => {
      const { tools } = await docs.listTools();
      expect(tools.map((t) => t.name)).toEqual(["search_docs", "get_tool_doc"]);
      for (const t of tools) {
        expect(t.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
        expect(t.inputSchema.type).toBe("object");
        expect(t.outputSchema?.type).toBe("object");
      }
    });

    test("search_docs finds pages by their words, best first, each readable by its uri", async () => {
      const { structuredContent, isError } = await callTool("search_docs", { query: "contact code" });
      expect(isError).toBe(false);
      const results = (structuredContent as any).results;
      expect(results.length).toBeGreaterThan(0);
      expect(results.map((r: any) => r.uri)).toContain("svc://docs/tools/get_contact_code");
      for (const r of results) expect(await read(r.uri)).toBeString();
      const scores = results.map((r: any) => r.score);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
      const byName = await callTool("search_docs", { query: "rotate_api_key", limit: 1 });
      expect(byName.structuredContent.results).toEqual([expect.objectContaining({ uri: "svc://docs/tools/rotate_api_key" })]);
      const dispute = await callTool("search_docs", { query: "ledger.expense_disputed" });
      expect(dispute.structuredContent.results[0].uri).toBe("svc://docs/inbox-item-types");
      expect((await callTool("search_docs", { query: "zzqxj" })).structuredContent.results).toEqual([]);
    });

    test("search_docs: invalid arguments are a VALIDATION_ERROR result", async () => {
      const { isError, body } = await callTool("search_docs", { query: "" });
      expect(isError).toBe(true);
      expect(body.ok).toBe(false);
      expect(body.error.code).toBe("VALIDATION_ERROR");
      expect(body.error.details.issues[0].path).toBe("query");
      expect(body.request_id).toBeString();
    });

    test("arguments that are not an object are a VALIDATION_ERROR result", async () => {
      const res = await postRpc(era, `${s.url}/mcp/docs`, "tools/call", { name: "search_docs", arguments: "idempotency" });
      const { result } = (await res.json()) as any;
      expect(result.isError).toBe(true);
      expect(JSON.parse(result.content[0].text).error.code).toBe("VALIDATION_ERROR");
    });

    test("get_tool_doc: the tool's schemas, a valid example call and answer, its errors and its page", async () => {
      const t = findTool("add_contact")!;
      const { structuredContent: doc, isError } = await callTool("get_tool_doc", { name: "add_contact" });
      expect(isError).toBe(false);
      expect(doc.input_schema).toEqual(inputJsonSchema(t));
      expect(doc.output_schema).toEqual(outputJsonSchema(t));
      expect(doc).toMatchObject({
        name: "add_contact",
        title: t.title,
        public: false,
        required_scope: "svc:write",
        idempotent: true,
        uri: "svc://docs/tools/add_contact",
      });
      expect(t.input.safeParse(doc.example.arguments).success).toBe(true);
      expect(t.output.safeParse(doc.example.answer).success).toBe(true);
      expect(doc.errors.map((e: any) => e.code)).toContain("UNAUTHENTICATED");
      expect(doc.markdown).toBe(await read("svc://docs/tools/add_contact"));
    });

    test("get_tool_doc: an unknown tool is a NOT_FOUND result", async () => {
      const { isError, body } = await callTool("get_tool_doc", { name: "no_such_tool" });
      expect(isError).toBe(true);
      expect(body.error.code).toBe("NOT_FOUND");
    });

    test("an unknown docs tool is a NOT_FOUND result", async () => {
      const { isError, body } = await callTool("add_contact", {});
      expect(isError).toBe(true);
      expect(body.error.code).toBe("NOT_FOUND");
    });
  });

  test("no credential is needed, and a bearer header (even a bad one) is simply ignored", async () => {
    const client = await connect({ authorization: "Bearer svc_not-a-real-key" });
    expect((await client.listResources()).resources.length).toBe(TOOLS.length + PAGES.length);
    await client.close();
  });
});

test("every tool's derived example call is accepted by the live sandbox and its example answer fits the output schema", async () => {
  for (const t of TOOLS) {
    const res = await s.raw(`/v1/sandbox/tools/${t.name}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(t.example),
    });
    expect({ tool: t.name, status: res.status }).toEqual({ tool: t.name, status: 200 });
    const answer = t.output.safeParse(exampleAnswer(t));
    expect({ tool: t.name, valid: answer.success }).toEqual({ tool: t.name, valid: true });
  }
});
