// The catalogue as a language model reads it: what a client puts in the model's context before any work (each tool's
// name, description and input schema) stays within a budget, every input property says what it is and where its
// value comes from, and the whole MCP tools/list answer stays within its own budget.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { inlineRefs } from "../../server/tools/json-schema.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { ERAS, connectMcp, postRpc } from "./clients.ts";

/** name + description + input schema of every tool, as JSON: what a client hands the model (40.5 KB before issue 47). */
const CONTEXT_BUDGET = 36 * 1024;
/** The whole tools/list answer, output schemas included, each declaring every field its answer carries. */
const LIST_BUDGET = 120 * 1024;

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const contextBytes = (tools: { name: string; description?: string; inputSchema: unknown }[]) =>
  tools.reduce((n, t) => n + Buffer.byteLength(JSON.stringify({ name: t.name, description: t.description, inputSchema: t.inputSchema })), 0);

/** Every property of a schema, nested ones included, with its path. */
function properties(schema: any, path: string, out: { path: string; schema: any }[] = []): { path: string; schema: any }[] {
  if (!schema || typeof schema !== "object") return out;
  for (const [k, v] of Object.entries<any>(schema.properties ?? {})) {
    out.push({ path: `${path}.${k}`, schema: v });
    properties(v, `${path}.${k}`, out);
  }
  if (schema.items) properties(schema.items, `${path}[]`, out);
  for (const k of ["anyOf", "oneOf", "allOf"]) for (const b of schema[k] ?? []) properties(b, path, out);
  return out;
}

describe("the catalogue's budget", () => {
  test("GET /v1/tools: name, description and input schema of all tools fit the budget", async () => {
    const { data } = await (await fetch(`${s.url}/v1/tools`)).json();
    const bytes = contextBytes(data.tools.map((t: any) => ({ name: t.name, description: t.description, inputSchema: t.input_schema })));
    expect(bytes).toBeLessThanOrEqual(CONTEXT_BUDGET);
  });

  test.each(ERAS)("MCP tools/list (%s): the context part and the whole answer fit their budgets", async (era) => {
    const client = await connectMcp(era, `${s.url}/mcp`);
    try {
      const { tools } = await client.listTools();
      expect(contextBytes(tools as any)).toBeLessThanOrEqual(CONTEXT_BUDGET);
    } finally {
      await client.close();
    }
    const res = await postRpc(era, `${s.url}/mcp`, "tools/list");
    const text = await res.text();
    expect(JSON.parse(text).result.tools.length).toBeGreaterThan(40);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(LIST_BUDGET);
  });

  test("every input property, nested ones included, is described", async () => {
    const { data } = await (await fetch(`${s.url}/v1/tools`)).json();
    const missing = data.tools.flatMap((t: any) =>
      properties(t.input_schema, t.name)
        .filter((p) => typeof p.schema.description !== "string" || p.schema.description.length < 8)
        .map((p) => p.path),
    );
    expect(missing).toEqual([]);
  });

  test("an id names the tool its value comes from", async () => {
    const { data } = await (await fetch(`${s.url}/v1/tools`)).json();
    const vague = data.tools.flatMap((t: any) =>
      properties(t.input_schema, t.name)
        .filter((p) => /(^|\.)(group|expense|payment|plan|envelope|invite|client)_id$/.test(p.path) && !/\b[a-z]+_[a-z_]+\b/.test(p.schema.description))
        .map((p) => p.path),
    );
    expect(vague).toEqual([]);
  });

  test("the rules every tool shares are said once: in the server's instructions, not in each description", async () => {
    const { data } = await (await fetch(`${s.url}/v1/tools`)).json();
    for (const t of data.tools) {
      expect(t.description).not.toContain("retrying with the same key");
      expect(t.description.length).toBeLessThanOrEqual(700);
    }
    const client = await connectMcp("2025-11-25", `${s.url}/mcp`);
    try {
      const instructions = client.getInstructions() ?? "";
      expect(instructions).toContain("idempotency_key");
      expect(instructions).toContain("untrusted_content");
    } finally {
      await client.close();
    }
  });

  test("no schema repeats the control-character pattern", async () => {
    const text = await (await fetch(`${s.url}/v1/tools`)).text();
    expect(text).not.toContain("\\\\x00-\\\\x1f");
  });
});

describe("the rules a field depends on are in its own schema", () => {
  test("every idempotency_key says its bounds and what it is for, so a client that drops the instructions keeps them", async () => {
    const client = await connectMcp("2026-07-28", `${s.url}/mcp`);
    try {
      const { tools } = await client.listTools();
      const keyed = tools.filter((t: any) => t.inputSchema.properties?.idempotency_key);
      expect(keyed.length).toBeGreaterThan(30);
      for (const t of keyed) {
        const key = t.inputSchema.properties.idempotency_key;
        expect({ tool: t.name, ...key }).toEqual({
          tool: t.name,
          type: "string",
          minLength: 8,
          maxLength: 128,
          description: expect.stringMatching(/UUID.*retry/),
        });
        expect(t.description).not.toContain("Shared rules");
      }
    } finally {
      await client.close();
    }
  });

  test("wherever an answer carries untrusted_content, its schema says what it is", async () => {
    const { data } = await (await fetch(`${s.url}/v1/tools`)).json();
    const found: string[] = [];
    const undescribed: string[] = [];
    for (const t of data.tools) {
      for (const p of properties(inlineRefs(t.output_schema), t.name)) {
        if (!p.path.endsWith(".untrusted_content")) continue;
        found.push(p.path);
        if (!/never follow/.test(p.schema.description ?? "")) undescribed.push(p.path);
      }
    }
    expect(found.length).toBeGreaterThan(20);
    expect(undescribed).toEqual([]);
  });

  test("a read tool's answer declares its shapes in full: no pointer to another tool's schema", async () => {
    const { data } = await (await fetch(`${s.url}/v1/tools`)).json();
    const pointing = data.tools
      .filter((t: any) => t.tags.includes("read"))
      .filter((t: any) => JSON.stringify(t.output_schema).includes("answer declares it"))
      .map((t: any) => t.name);
    expect(pointing).toEqual([]);
    const listExpenses = data.tools.find((t: any) => t.name === "list_expenses");
    const expense = (inlineRefs(listExpenses.output_schema) as any).properties.expenses.items;
    expect(Object.keys(expense.properties)).toEqual(
      expect.arrayContaining(["description", "paid_by", "shares", "split", "created_by", "version", "responses"]),
    );
  });
});
