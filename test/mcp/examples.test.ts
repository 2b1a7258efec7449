// Examples that are true: every example call in GET /v1/tools and every example call and answer the documentation
// server gives (get_tool_doc) fits the tool's schemas, and no handle stands where an amount, a date or an id belongs.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TOOLS, findTool } from "../../server/tools/catalogue.ts";
import { MADE_UP } from "../../server/tools/made-up.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { connectMcp } from "./clients.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const HANDLE_LIKE = /^[a-z][a-z0-9_-]{2,31}$/;
/** A field whose value is money, a date or an id, by its name. */
const typedField = (key: string) =>
  /(^|_)(amount|paid|owes|net|converted|balance|payments_sent|payments_received|exchange_rate)$/.test(key) ||
  /(_at|_date|^date|occurrence)$/.test(key) ||
  /_id$/.test(key);

/** Every field of a value that holds a handle-looking string where money, a date or an id belongs. */
function misplacedHandles(value: unknown, path: string, out: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v, i) => misplacedHandles(v, `${path}[${i}]`, out));
  else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (typeof v === "string" && typedField(k) && HANDLE_LIKE.test(v)) out.push(`${path}.${k}=${v}`);
      misplacedHandles(v, `${path}.${k}`, out);
    }
  }
  return out;
}

/** Ids that are not the made-up id the example calls use for that kind (so an answer and a call disagree). */
function strayIds(value: unknown, path: string, out: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v, i) => strayIds(v, `${path}[${i}]`, out));
  else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const made = (MADE_UP as Record<string, { value: string }>)[k];
      if (made && typeof v === "string" && v !== made.value) out.push(`${path}.${k}=${v}`);
      strayIds(v, `${path}.${k}`, out);
    }
  }
  return out;
}

test("GET /v1/tools: every example call fits the tool's input schema, with no handle where a number, date or id belongs", async () => {
  const { data } = await (await fetch(`${s.url}/v1/tools`)).json();
  expect(data.tools).toHaveLength(TOOLS.length);
  for (const listed of data.tools) {
    const t = findTool(listed.name)!;
    const parsed = t.input.safeParse(listed.example.arguments);
    expect({ tool: t.name, valid: parsed.success }).toEqual({ tool: t.name, valid: true });
    expect(misplacedHandles(listed.example.arguments, t.name)).toEqual([]);
  }
});

test("/mcp/docs get_tool_doc: every example call and answer fits the schemas, with no handle where a number, date or id belongs", async () => {
  const client = await connectMcp("2026-07-28", `${s.url}/mcp/docs`);
  try {
    const wrong: string[] = [];
    for (const t of TOOLS) {
      const { structuredContent: doc } = await client.callTool({ name: "get_tool_doc", arguments: { name: t.name } });
      if (!t.input.safeParse(doc.example.arguments).success) wrong.push(`${t.name}: example call`);
      if (!t.output.safeParse(doc.example.answer).success) wrong.push(`${t.name}: example answer`);
      wrong.push(...misplacedHandles(doc.example.answer, t.name), ...misplacedHandles(doc.example.arguments, t.name));
      wrong.push(...strayIds(doc.example.answer, t.name));
    }
    expect(wrong).toEqual([]);
  } finally {
    await client.close();
  }
});

test("/docs/tools pages show the same true example answers", async () => {
  for (const t of TOOLS) {
    const res = await fetch(`${s.url}/docs/tools/${t.name}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    for (const [, quoted] of html.matchAll(/&quot;(?:paid|net|owes|converted|next_occurrence|amount|date)&quot;: &quot;([^&]*)&quot;/g)) {
      expect({ tool: t.name, value: HANDLE_LIKE.test(quoted!) }).toEqual({ tool: t.name, value: false });
    }
  }
});
