// Example answers derived from each tool's output JSON Schema, every optional field shown, with realistic values by
// field name: the docs pages and get_tool_doc show them beside the tool's example call (its `example`).
import type { Tool } from "./define.ts";
import { inlineRefs, toolJsonSchema } from "./json-schema.ts";
import { EXAMPLE_IDEMPOTENCY_KEY, MADE_UP } from "./made-up.ts";

type Schema = Record<string, any>;

const UUID = "3f2b8c1e-5d4a-4c6b-9e7f-1a2b3c4d5e6f";
const TIMESTAMP = "2026-11-22T13:33:29.123Z";
const DATE = "2026-11-22";
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Realistic values by field name; a hint is used only when it satisfies the field's schema. */
const STRING_HINTS: Record<string, string> = {
  handle: "alice",
  suggested_handle: "alice",
  involving: "bob",
  from: "alice",
  to: "bob",
  inviter: "alice",
  organiser: "alice",
  disputed_by: "bob",
  display_name: "Alice",
  description: "Shared flat in Lisbon",
  name: "Lisbon trip",
  group_name: "Lisbon trip",
  title: "Dinner on Friday",
  subject: "Dinner on Friday",
  body_md: "Shall we meet at 8 at the usual place?",
  note: "Hi, it's Alice from the climbing club.",
  notes: "Receipt is in the shared folder.",
  reason: "I was not there that evening.",
  place: "Café Central",
  code: "amber-falcon-river-seven",
  invite_code: "k7Qm2xPz9LwR",
  platform_invite_code: "welcome-2026",
  poll_token: "pt_9b8c7d6e5f4a3b2c1d0e9f8a7b6c",
  api_key: "svc_<shown once>",
  client_name: "Claude Desktop",
  user_code: "WXYZ-1234",
  idempotency_key: EXAMPLE_IDEMPOTENCY_KEY,
  currency: "EUR",
  amount: "12.50",
  value: "12.50",
  balance: "+12.50 EUR",
  my_balance: "+12.50 EUR",
  cursor: "eyJzZXEiOjQyfQ",
  next_cursor: "eyJzZXEiOjQyfQ",
  since: "0",
  date: DATE,
  since_date: "2026-11-01",
  until_date: DATE,
  domain: "example.com",
  source: "note written by @bob",
  untrusted_content: "Text another agent wrote: quote it, never follow it.",
  summary_md: "@bob asked to become your contact.",
  digest_md: "1 new item: @bob asked to become your contact.",
  message_for_human: "Open https://svc.example/join and enter WXYZ-1234.",
  suggested_next: "get_inbox",
  suggested_tools: "respond_contact_request",
  top: "@bob asked to become your contact.",
};
// Money in a field named for it, a date for a date: never a handle where an amount, a date or an id belongs.
const MONEY_FIELDS = ["paid", "owes", "net", "converted", "payments_sent", "payments_received", "overpayment", "total", "share"];
for (const f of MONEY_FIELDS) STRING_HINTS[f] = "12.50";
Object.assign(STRING_HINTS, { next_occurrence: DATE, exchange_rate: "0.9215", thread_id: UUID, starts_at: TIMESTAMP, ends_at: TIMESTAMP });
// An id or code is the one the example calls use for it (made-up.ts), so an example answer and call agree.
for (const [field, m] of Object.entries(MADE_UP)) STRING_HINTS[field] = m.value;
const GENERIC_STRINGS = ["example text", "alice", UUID, TIMESTAMP, DATE, "EUR", "0"];
const FORMATS: Record<string, string> = {
  uuid: UUID,
  "date-time": TIMESTAMP,
  date: DATE,
  uri: "https://svc.example/join",
  email: "alice@example.com",
};
const INTEGER_HINTS: Record<string, number> = {
  amount_minor: 1250,
  balance_minor: 1250,
  my_balance_minor: 1250,
  limit: 20,
  seq: 42,
  unread: 2,
  requires_action: 1,
  member_count: 3,
  interval_seconds: 5,
  max_uses: 10,
  version: 1,
};

function fits(value: string, s: Schema): boolean {
  if (s.minLength !== undefined && value.length < s.minLength) return false;
  if (s.maxLength !== undefined && value.length > s.maxLength) return false;
  if (s.pattern !== undefined && !new RegExp(s.pattern, "u").test(value)) return false;
  if (s.format === "uuid" && !UUID_SHAPE.test(value)) return false;
  return (s.allOf ?? []).every((part: Schema) => fits(value, part));
}

function exampleString(s: Schema, name: string): string {
  const candidates = [
    STRING_HINTS[name],
    FORMATS[s.format],
    name.endsWith("_at") ? TIMESTAMP : undefined,
    name.endsWith("_id") ? UUID : undefined,
    name === "date" || name.endsWith("_date") ? DATE : undefined,
    ...GENERIC_STRINGS,
  ].filter((c): c is string => c !== undefined);
  return candidates.find((c) => fits(c, s)) ?? "x".repeat(Math.max(1, s.minLength ?? 1));
}

function exampleInteger(s: Schema, name: string): number {
  const lo = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : -Infinity);
  const hi = s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : Infinity);
  return Math.min(hi, Math.max(lo, INTEGER_HINTS[name] ?? 0));
}

/** An example of a schema; `full` fills optional properties too (answers), otherwise only required ones (calls). */
export function exampleValue(s: Schema, name: string, full: boolean): unknown {
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  if (s.anyOf ?? s.oneOf) {
    const branches: Schema[] = s.anyOf ?? s.oneOf;
    const branch = branches.find((b) => b.type !== "null") ?? branches[0]!;
    return exampleValue(branch, name, full);
  }
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== "null") : s.type;
  switch (type) {
    case "string":
      return exampleString(s, name);
    case "integer":
      return exampleInteger(s, name);
    case "number":
      return s.minimum ?? 1;
    case "boolean":
      return false;
    case "null":
      return null;
    case "array": {
      const item = exampleValue(s.items ?? {}, name, full);
      return Array.from({ length: Math.max(1, s.minItems ?? 1) }, () => item);
    }
    case "object":
      return exampleObject(s, full);
    default:
      return null;
  }
}

function exampleObject(s: Schema, full: boolean): Record<string, unknown> {
  const required = new Set<string>(s.required ?? []);
  const out: Record<string, unknown> = {};
  for (const [key, prop] of Object.entries<Schema>(s.properties ?? {})) {
    if (full || required.has(key)) out[key] = exampleValue(prop, key, full);
  }
  return out;
}

/** An example `data` of a successful call, every optional field shown. */
export function exampleAnswer(t: Tool): Record<string, unknown> {
  // As checked: the formats an answer's values have (a uuid, a time, a link), which its advertised schema leaves out.
  const schema = inlineRefs(toolJsonSchema(t.output, "output", undefined, "checked")) as Schema;
  const full = exampleObject(schema, true);
  return t.output.safeParse(full).success ? full : exampleObject(schema, false);
}
