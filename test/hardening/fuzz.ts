// The fuzzing engine shared by test/hardening/fuzz.test.ts (quick) and bench/fuzz-long.ts (long): cases
// generated from every registered tool's input schema, sent over REST (and MCP when mounted), each answer
// judged by transports.ts. Arguments the schema refuses must be refused with VALIDATION_ERROR.
import fc from "fast-check";
import { checkedInputJsonSchema, TOOLS } from "../../server/tools/catalogue.ts";
import type { Tool } from "../../server/tools/define.ts";
import { deeplyNested, nearMissArbitrary, type JsonSchema } from "./schema-arbitrary.ts";
import { type McpSession, restCall, type Outcome, type RawRequest, type Transport } from "./transports.ts";
import { accepts, validArgs, worldHints, type World } from "./world.ts";

export interface FuzzCase {
  tool: string;
  transport: Transport;
  kind: "valid" | "near-miss" | "raw";
  label: string;
  args?: unknown;
  raw?: RawRequest;
  /** The error code the answer must carry: VALIDATION_ERROR when the schema (or the body itself) refuses it. */
  expectCode: string | null;
  /** Sent without a credential (public tools, and the sandbox, need none). */
  anonymous?: boolean;
}

const TEN_MB = 10 * 1024 * 1024;

/** Bodies no tool accepts, whatever its schema: broken JSON, not an object, wrong media type, too big. */
export const RAW_BODIES: { label: string; raw: () => RawRequest }[] = [
  { label: "truncated JSON", raw: () => ({ body: '{"handle": "abc' }) },
  { label: "not JSON", raw: () => ({ body: "handle=abc&display_name=x" }) },
  { label: "JSON array", raw: () => ({ body: "[1, 2, 3]" }) },
  { label: "JSON string", raw: () => ({ body: '"just a string"' }) },
  { label: "JSON null", raw: () => ({ body: "null" }) },
  { label: "two JSON documents", raw: () => ({ body: "{}{}" }) },
  { label: "invalid UTF-8", raw: () => ({ body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) }) },
  { label: "NUL bytes", raw: () => ({ body: "\u0000\u0000{}" }) },
  { label: "text/plain", raw: () => ({ body: "{}", contentType: "text/plain" }) },
  { label: "form content type", raw: () => ({ body: "a=b", contentType: "application/x-www-form-urlencoded" }) },
  { label: "multipart content type", raw: () => ({ body: "--x\r\n\r\n--x--", contentType: "multipart/form-data; boundary=x" }) },
  { label: "no content type", raw: () => ({ body: "{}", contentType: null }) },
  { label: "100,000 nested arrays", raw: () => ({ body: `${"[".repeat(100_000)}${"]".repeat(100_000)}` }) },
  { label: "10 MB body", raw: () => ({ body: JSON.stringify({ x: "a".repeat(TEN_MB) }) }) },
  {
    label: "10 MB chunked body (no Content-Length)",
    raw: () => ({
      body: new ReadableStream({
        start(c) {
          const chunk = new TextEncoder().encode("a".repeat(1024 * 1024));
          c.enqueue(new TextEncoder().encode('{"x": "'));
          for (let i = 0; i < 10; i++) c.enqueue(chunk);
          c.enqueue(new TextEncoder().encode('"}'));
          c.close();
        },
      }),
    }),
  },
];

/** Bodies that parse as JSON but carry traps: deep nesting, duplicate keys, a prototype key, a bad header. */
type Args = Record<string, unknown>;
const never = () => false;
const TRICKY_BODIES: { label: string; build: (valid: Args) => RawRequest; refused: (t: Tool, valid: Args) => boolean }[] = [
  { label: "20,000-deep nesting in a field", build: (v) => ({ body: JSON.stringify({ ...v, deep: deeplyNested(20_000) }) }), refused: () => true },
  {
    label: "duplicate keys",
    build: (v) => ({ body: `{"idempotency_key": "dup-dup-dup-1", ${JSON.stringify(v).slice(1)}`.replace(/, }$/, "}") }),
    refused: never,
  },
  { label: "__proto__ key", build: (v) => ({ body: `{"__proto__": {"polluted": true}, ${JSON.stringify(v).slice(1)}`.replace(/, }$/, "}") }), refused: never },
  {
    label: "Idempotency-Key header differing from the body",
    build: (v) => ({ body: JSON.stringify(v), headers: { "idempotency-key": "a-different-key-123" } }),
    refused: (t, v) => t.idempotent && typeof v.idempotency_key === "string",
  },
  // 12 KB: past any real token, under the 16 KiB of headers beyond which Bun itself answers a bare 431
  { label: "oversized bearer token", build: (v) => ({ body: JSON.stringify(v), headers: { authorization: `Bearer ${"k".repeat(12_000)}` } }), refused: never },
  // decoding the body as UTF-8 drops a leading byte-order mark, as RFC 8259 allows
  { label: "byte-order mark", build: (v) => ({ body: `\uFEFF${JSON.stringify(v)}` }), refused: never },
  { label: "malformed Authorization", build: (v) => ({ body: JSON.stringify(v), headers: { authorization: "Bearer a b c" } }), refused: never },
];

/** Tool names in the path that name no tool: malformed escapes, NUL, traversal, prototype names. */
const BAD_PATHS = (tool: string) => [
  "/v1/tools/%ZZ",
  "/v1/sandbox/tools/%E0%A4%A",
  `/v1/tools/${tool}%00`,
  `/v1/tools/..%2F${tool}`,
  "/v1/tools/__proto__",
  "/v1/tools/constructor",
  `/v1/tools/${tool.toUpperCase()}`,
];

/** What the server will see of `args`: JSON drops undefined and turns -0 into 0. */
const overTheWire = (args: unknown) => JSON.parse(JSON.stringify(args) ?? "null");

// An own "__proto__" key cannot travel through the MCP SDK client (its parsing turns it into a prototype), so
// those cases go over REST.
const ownProto = (args: unknown) => !!args && typeof args === "object" && Object.hasOwn(args, "__proto__");

function argsCase(t: Tool, kind: FuzzCase["kind"], args: unknown, transport: Transport, label: string): FuzzCase {
  const via = ownProto(args) ? "rest" : transport;
  // over MCP, `arguments: null` is the same as leaving them out
  const seen = via === "mcp" && args === null ? {} : overTheWire(args);
  return { tool: t.name, transport: via, kind, label, args, expectCode: accepts(t, seen) ? null : "VALIDATION_ERROR" };
}

/**
 * A batch of cases covering every registered tool: `perTool` valid-looking and `perTool` near-miss argument
 * sets each (MCP too when `mcp`), the sandbox, the trick bodies, and the raw bodies spread across tools.
 */
export function planCases(world: World, seed: number, perTool: number, mcp: boolean): FuzzCase[] {
  const hints = worldHints({ ids: world.ids, target: world.member.handle, randomIds: true });
  const cases: FuzzCase[] = [];
  const transports: Transport[] = mcp ? ["rest", "mcp"] : ["rest"];
  TOOLS.forEach((t, i) => {
    const schema = checkedInputJsonSchema(t) as JsonSchema;
    const s = seed + i * 7919;
    const valid = Array.from({ length: perTool }, (_, k) => validArgs(t, hints, s + k, { omitWeight: k % 2 ? 1 : 3 }) ?? {});
    const misses = fc.sample(nearMissArbitrary(schema, hints), { numRuns: perTool, seed: s });
    valid.forEach((a, k) => cases.push(argsCase(t, "valid", a, transports[k % transports.length]!, "schema-valid")));
    misses.forEach((a, k) => cases.push(argsCase(t, "near-miss", a, transports[k % transports.length]!, "near miss")));
    const sandboxed = valid[0]!;
    cases.push({ ...argsCase(t, "valid", sandboxed, "rest", "sandbox"), raw: { sandbox: true, body: JSON.stringify(sandboxed) }, anonymous: true });
    const trick = TRICKY_BODIES[(seed + i) % TRICKY_BODIES.length]!;
    cases.push({
      tool: t.name,
      transport: "rest",
      kind: "raw",
      label: trick.label,
      raw: trick.build(sandboxed),
      expectCode: trick.refused(t, sandboxed) ? "VALIDATION_ERROR" : null,
    });
    const paths = BAD_PATHS(t.name);
    const path = paths[(seed + i) % paths.length]!;
    cases.push({
      tool: t.name,
      transport: "rest",
      kind: "raw",
      label: `path ${path}`,
      raw: { path, body: JSON.stringify(sandboxed) },
      expectCode: "NOT_FOUND",
    });
    const rawBody = RAW_BODIES[(seed + i) % RAW_BODIES.length]!;
    cases.push({ tool: t.name, transport: "rest", kind: "raw", label: rawBody.label, raw: rawBody.raw(), expectCode: "VALIDATION_ERROR" });
  });
  return cases;
}

export interface Violation {
  case: Omit<FuzzCase, "raw" | "args"> & { args?: string };
  outcome: Omit<Outcome, "body"> & { body: string };
}

export interface FuzzReport {
  calls: number;
  /** Answers by "STATUS CODE", e.g. "404 NOT_FOUND". */
  byCode: Map<string, number>;
  violations: Violation[];
}

export const newReport = (): FuzzReport => ({ calls: 0, byCode: new Map(), violations: [] });

const clip = (v: unknown, n = 300) => {
  const text = typeof v === "string" ? v : JSON.stringify(v);
  return (text ?? String(v)).slice(0, n);
};

/** Sends the cases `concurrency` at a time as `key`'s agent and adds what came back to the report. */
export async function runCases(
  url: string,
  key: string,
  cases: FuzzCase[],
  report: FuzzReport,
  o: { concurrency: number; mcp?: McpSession; timeoutMs?: number },
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const c = cases[next++]!;
      const outcome = await send(url, key, c, o);
      report.calls++;
      const bucket = `${outcome.status} ${outcome.code}`;
      report.byCode.set(bucket, (report.byCode.get(bucket) ?? 0) + 1);
      const violation = outcome.violation ?? (c.expectCode && outcome.code !== c.expectCode ? `expected ${c.expectCode} but the answer was ${bucket}` : null);
      if (violation) {
        const { raw: _raw, args, ...rest } = c;
        report.violations.push({ case: { ...rest, args: clip(args) }, outcome: { ...outcome, violation, body: clip(outcome.body) } });
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
}

function send(url: string, key: string, c: FuzzCase, o: { mcp?: McpSession; timeoutMs?: number }): Promise<Outcome> {
  if (c.transport === "mcp") return o.mcp!.call(c.tool, c.args, o.timeoutMs);
  const raw = c.raw ?? { body: JSON.stringify(c.args) };
  return restCall(url, c.tool, c.anonymous ? null : key, raw, o.timeoutMs);
}

/** One line per answer kind, most frequent first. */
export function formatCounts(report: FuzzReport): string {
  return [...report.byCode.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `  ${String(n).padStart(7)}  ${k}`)
    .join("\n");
}
