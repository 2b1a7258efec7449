// Every tool's example call, written by hand so that it does something a person would do (nested arguments
// included), and example answers derived from each tool's JSON Schema. The calls are shown by the docs pages,
// GET /v1/tools and `svc tools NAME`; test/cli/examples.test.ts runs each one through `svc call` against a server
// (with the made-up ids below replaced by real ones), so none can rot.
import type { Tool } from "./define.ts";
import { toolJsonSchema } from "./json-schema.ts";

type Schema = Record<string, any>;

const UUID = "3f2b8c1e-5d4a-4c6b-9e7f-1a2b3c4d5e6f";
const TIMESTAMP = "2026-11-22T13:33:29.123Z";
const DATE = "2026-11-22";

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
  idempotency_key: "6f1c2a9e-2b7d-4f0e-9a51-3c8d7e6b5a40",
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
const GENERIC_STRINGS = ["alice", UUID, TIMESTAMP, DATE, "EUR", "0", "example text"];
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
  if (s.format === "uuid" && value !== UUID) return false;
  return (s.allOf ?? []).every((part: Schema) => fits(value, part));
}

function exampleString(s: Schema, name: string): string {
  const candidates = [STRING_HINTS[name], FORMATS[s.format], name.endsWith("_at") ? TIMESTAMP : undefined, ...GENERIC_STRINGS].filter(
    (c): c is string => c !== undefined,
  );
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

/** The made-up identifiers the examples use, and the tool that gives a real one. */
export const MADE_UP = {
  group_id: { value: "6c1f9a2e-3b7d-4e8a-9c5f-0a1b2c3d4e5f", from: "list_groups" },
  expense_id: { value: "8e2d4c6a-1f3b-4a5c-8d7e-9f0a1b2c3d4e", from: "list_expenses" },
  payment_id: { value: "5b7c9d1e-2f4a-4b6c-8d0e-1f2a3b4c5d6e", from: "list_payments" },
  invite_id: { value: "2a4c6e8f-0b1d-4f3a-9b5c-7d9e1f3a5b7c", from: "get_inbox (a group.invitation item)" },
  envelope_id: { value: "9d1f3b5c-7e9a-4c2e-8f4a-6b8c0d2e4f6a", from: "list_envelopes" },
  plan_id: { value: "4f6a8c0e-2b4d-4a6f-8c1e-3b5d7f9a1c3e", from: "list_plans" },
  option_id: { value: "3c5e7a9b-1d3f-4f5a-9c7e-9b1d3f5a7c9e", from: "get_plan" },
  client_id: { value: "7a9c1e3b-5d7f-4b9d-9a2c-4e6f8a0b2d4f", from: "list_clients" },
  item_id: { value: "1e3a5c7e-9b1d-4d3f-8a5b-7c9e1a3b5d7f", from: "get_inbox" },
  poll_token: { value: "join_3kZ8qW1xR7vT5nY2mB9cD4fG6hJ0", from: "join_network" },
  invite_code: { value: "k7qm2xpz9lwr", from: "create_group_invite" },
} as const;
const id = (kind: keyof typeof MADE_UP) => MADE_UP[kind].value;

/**
 * One example call per tool, from the point of view of alice, whose contacts are bob and carol. An example does
 * what the tool is for, with the optional arguments that matter (amount, split, paid_by, plan options).
 */
export const EXAMPLES: Record<string, Record<string, unknown>> = {
  register_agent: { handle: "alice", display_name: "Alice" },
  get_me: {},
  update_me: { display_name: "Alice Martin", description: "Climbs on Tuesdays; pays for the pizza." },
  rotate_api_key: {},
  list_clients: { limit: 10 },
  disconnect_client: { client_id: id("client_id") },
  get_contact_code: {},
  rotate_contact_code: {},
  add_contact: { handle: "bob", note: "Hi Bob, it's Alice from the climbing club." },
  respond_contact_request: { handle: "alice", action: "accept" },
  list_contacts: { state: "accepted" },
  remove_contact: { handle: "carol" },
  block_contact: { handle: "mallory" },
  get_inbox: { include_seen: true, limit: 20 },
  ack_inbox: { item_ids: [id("item_id")], action: "seen" },
  join_network: { client_name: "Claude Desktop", suggested_handle: "alice" },
  finish_join: { poll_token: id("poll_token") },
  get_settings_link: {},
  create_group: { name: "Lisbon trip", currency: "EUR", members: ["bob"] },
  list_groups: { include_archived: true },
  get_group: { group_id: id("group_id") },
  update_group: { group_id: id("group_id"), name: "Lisbon trip 2026", simplify_debts: true },
  archive_group: { group_id: id("group_id"), archived: true },
  create_group_invite: { group_id: id("group_id"), max_uses: 5 },
  respond_group_invite: { invite_id: id("invite_id"), action: "accept" },
  join_group: { invite_code: id("invite_code") },
  leave_group: { group_id: id("group_id") },
  remove_group_member: { group_id: id("group_id"), handle: "dave" },
  open_direct_ledger: { handle: "bob", currency: "EUR" },
  add_expense: {
    group_id: id("group_id"),
    description: "Dinner at Rosa's",
    amount: "60.00",
    category: "food",
    paid_by: [
      { handle: "alice", amount: "40.00" },
      { handle: "bob", amount: "20.00" },
    ],
    split: {
      mode: "shares",
      among: [
        { handle: "alice", value: 2 },
        { handle: "bob", value: 1 },
      ],
    },
  },
  list_expenses: { group_id: id("group_id"), involving: "bob", limit: 10 },
  get_expense: { expense_id: id("expense_id") },
  update_expense: { expense_id: id("expense_id"), expected_version: 1, description: "Dinner at Rosa's, tip included", notes: "Receipt in the shared folder." },
  delete_expense: { expense_id: id("expense_id") },
  restore_expense: { expense_id: id("expense_id") },
  respond_expense: { expense_id: id("expense_id"), action: "dispute", reason: "I only had a starter; my share is 15.00." },
  record_payment: { group_id: id("group_id"), to: "alice", amount: "20.00", note: "Bank transfer" },
  respond_payment: { payment_id: id("payment_id"), action: "confirm" },
  list_payments: { group_id: id("group_id"), state: "pending" },
  get_balances: { group_id: id("group_id") },
  get_activity: { group_id: id("group_id"), limit: 20 },
  export_group: { group_id: id("group_id"), format: "csv" },
  send_envelope: { to: ["bob"], subject: "Dinner on Friday?", body_md: "Shall we meet at 8 at Rosa's? Menu: https://example.com/rosa" },
  get_envelope: { envelope_id: id("envelope_id") },
  reply_envelope: { envelope_id: id("envelope_id"), body_md: "8 works for me. See you there!" },
  list_envelopes: { direction: "received", limit: 10 },
  create_plan: {
    title: "Dinner on Friday",
    options: [
      { starts_at: "2026-12-04T19:00:00Z", place: "Tasca do Chico" },
      { starts_at: "2026-12-05T19:00:00Z", place: "Tasca do Chico" },
    ],
    invitees: ["bob", "carol"],
  },
  get_plan: { plan_id: id("plan_id") },
  list_plans: { when: "upcoming" },
  respond_plan: { plan_id: id("plan_id"), response: "yes", option_ids: [id("option_id")] },
  update_plan: { plan_id: id("plan_id"), choose_option_id: id("option_id") },
  cancel_plan: { plan_id: id("plan_id") },
};

/** The example call of a tool as a REST body (or MCP arguments), with an idempotency_key when the tool takes one. */
export function exampleArguments(t: Tool): Record<string, unknown> {
  const args = EXAMPLES[t.name];
  if (!args) throw new Error(`server/tools/examples.ts has no example for ${t.name}`);
  return t.idempotent ? { ...args, idempotency_key: STRING_HINTS.idempotency_key } : args;
}

/** The made-up values an example holds (by name) and where real ones come from. */
export function madeUpIn(args: Record<string, unknown>): { field: string; value: string; from: string }[] {
  const text = JSON.stringify(args);
  return Object.entries(MADE_UP)
    .filter(([, m]) => text.includes(m.value))
    .map(([field, m]) => ({ field, value: m.value, from: m.from }));
}

/** An example `data` of a successful call, every optional field shown. */
export function exampleAnswer(t: Tool): Record<string, unknown> {
  const schema = toolJsonSchema(t.output, "output") as Schema;
  const full = exampleObject(schema, true);
  return t.output.safeParse(full).success ? full : exampleObject(schema, false);
}
