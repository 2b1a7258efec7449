// A small world of real objects made through the real tools, discovered from the registry: which input
// fields are identifiers, which tools produce them, and valid arguments for any tool. New tools join in
// without anyone naming them here.
import fc from "fast-check";
import { findTool, checkedInputJsonSchema, outputJsonSchema, TOOLS } from "../../server/tools/catalogue.ts";
import type { Tool } from "../../server/tools/define.ts";
import { HANDLE_PATTERN } from "../../server/contract/wire.ts";
import { restCall } from "./transports.ts";
import { always, validArbitrary, type Hints, type JsonSchema } from "./schema-arbitrary.ts";

export interface Api {
  call(tool: string, args: unknown, key?: string | null): Promise<{ status: number; body: any }>;
}

/** An Api over plain HTTP, for the bench scripts that run a server of their own. */
export const restApi = (url: string): Api => ({
  call: (tool, args, key) => restCall(url, tool, key ?? null, { body: JSON.stringify(args) }),
});

export interface Member {
  key: string;
  handle: string;
  agent_id: string;
}

export async function ok(api: Api, tool: string, args: unknown, key?: string | null): Promise<any> {
  const r = await api.call(tool, args, key);
  if (r.status !== 200) throw new Error(`${tool} failed with ${r.status}: ${JSON.stringify(r.body).slice(0, 400)}`);
  return r.body.data;
}

export async function register(api: Api, handle: string): Promise<Member> {
  const d = await ok(api, "register_agent", { handle, display_name: `Agent ${handle}` });
  return { key: d.api_key, handle, agent_id: d.agent.agent_id };
}

export async function befriend(api: Api, a: Member, b: Member): Promise<void> {
  await ok(api, "add_contact", { handle: b.handle, idempotency_key: crypto.randomUUID() }, a.key);
  await ok(api, "respond_contact_request", { handle: a.handle, action: "accept", idempotency_key: crypto.randomUUID() }, b.key);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// Identifier fields whose names do not say which object they point at.
const FAMILY_ALIASES: Record<string, string> = { in_reply_to: "envelope_id", from_member_id: "member_id", to_member_id: "member_id" };

const isUuidSchema = (s: JsonSchema | undefined): boolean => !!s && (s.format === "uuid" || (s.anyOf ?? []).some(isUuidSchema));
const isHandleSchema = (s: JsonSchema | undefined): boolean => s?.pattern === HANDLE_PATTERN.source;

/** The kind of object an identifier field points at: item_ids -> item_id, via_group_id -> group_id. */
export function familyOf(field: string): string {
  if (FAMILY_ALIASES[field]) return FAMILY_ALIASES[field]!;
  const singular = field.endsWith("_ids") ? field.slice(0, -1) : field;
  return singular.replace(/^(via|choose|for|in)_/, "");
}

const properties = (t: Tool): Record<string, JsonSchema> => (checkedInputJsonSchema(t) as JsonSchema).properties ?? {};

/** Input fields of a tool that name an object by uuid (or a list of them). */
export function idFields(t: Tool): string[] {
  return Object.entries(properties(t))
    .filter(([, s]) => isUuidSchema(s) || (s.type === "array" && isUuidSchema(s.items)))
    .map(([name]) => name);
}

const requiredFamilies = (t: Tool): string[] => {
  const required: string[] = (checkedInputJsonSchema(t) as JsonSchema).required ?? [];
  return idFields(t)
    .filter((f) => required.includes(f))
    .map(familyOf);
};

/** Identifier names found anywhere in a tool's output schema. */
function outputIdNames(t: Tool): Set<string> {
  const names = new Set<string>();
  const walk = (s: unknown) => {
    if (!s || typeof s !== "object") return;
    for (const [k, v] of Object.entries(s as Record<string, unknown>)) {
      if (k === "properties" && v && typeof v === "object") for (const p of Object.keys(v)) if (p.endsWith("_id")) names.add(p);
      walk(v);
    }
  };
  walk(outputJsonSchema(t));
  return names;
}

/** Every uuid under a key ending in _id, anywhere in an answer. */
export function collectIds(value: unknown, into: Map<string, string[]>): void {
  if (Array.isArray(value)) for (const v of value) collectIds(v, into);
  else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k.endsWith("_id") && typeof v === "string" && UUID.test(v)) {
        const list = into.get(k) ?? [];
        if (!list.includes(v)) list.push(v);
        into.set(k, list);
      } else collectIds(v, into);
    }
  }
}

/** Families any tool takes as input: the objects the access matrix must guard. */
export function inputFamilies(): Set<string> {
  return new Set(TOOLS.flatMap((t) => idFields(t).map(familyOf)));
}

export interface HintOptions {
  /** Identifiers by family (group_id -> [...]); a field of a family without one is left out (or see randomIds). */
  ids: Map<string, string[]>;
  /** The agent named wherever a handle is asked for. */
  target?: string;
  /** Values for named fields, taking precedence and always sent. */
  fixed?: Record<string, unknown>;
  /** Prefer the agreeing option of enums (accept, confirm, yes). */
  agree?: boolean;
  /** Identifier fields of a family without known ids get random uuids (fuzzing) instead of being left out. */
  randomIds?: boolean;
}

const AGREEING = ["accept", "confirm", "yes"];
const timeRank = (name: string) => (/^(respond|expires?|due)/.test(name) ? 0 : /^(ends?|until)/.test(name) ? 2 : 1);
// Unique per call: a key reused with other arguments is refused (IDEMPOTENCY_KEY_REUSED), as it should be.
const key = fc.constant(null).map(() => `hz-${crypto.randomUUID()}`);

/** Field values a realistic caller would send: real ids, a known handle, a real currency and amount. */
export function worldHints(o: HintOptions): Hints {
  return (name, s) => {
    if (o.fixed && name in o.fixed) return always(fc.constant(o.fixed[name]));
    if (name === "idempotency_key") return key;
    // a cursor is valid only as a list handed it out
    if (name === "cursor") return fc.constant(undefined);
    if (isUuidSchema(s) || (s.type === "array" && isUuidSchema(s.items))) {
      const known = o.ids.get(familyOf(name));
      if (!known?.length && !o.randomIds) return fc.constant(undefined);
      const one = known?.length ? fc.constantFrom(...known) : fc.uuid({ version: 4 });
      return s.type === "array" ? one.map((v) => [v]) : one;
    }
    if (o.target && isHandleSchema(s)) return fc.constant(o.target);
    if (o.target && s.type === "array" && isHandleSchema(s.items)) return fc.constant([o.target]);
    if (name === "currency") return fc.constant("EUR");
    // times in a plausible order: answers due before things start, and things end after they start
    if (s.format === "date-time") return fc.constant(new Date(Date.UTC(2030 + timeRank(name), 0, 1)).toISOString());
    // an amount is a decimal string or a JSON number (anyOf); a realistic caller sends the string
    if (name === "amount" && (s.type === "string" || s.anyOf)) return fc.constant("12.34");
    if (name === "amount_minor") return fc.constant(1234);
    // a file is kept only when its content is of its declared type: a small PDF
    if (name === "media_type" && Array.isArray(s.enum) && s.enum.includes("application/pdf")) return fc.constant("application/pdf");
    if (name === "content_base64") return fc.constant(Buffer.from("%PDF-1.4\n%%EOF\n").toString("base64"));
    if (o.agree && Array.isArray(s.enum)) {
      const yes = s.enum.find((v: unknown) => AGREEING.includes(String(v)));
      if (yes !== undefined) return fc.constant(yes);
    }
    return undefined;
  };
}

export interface ArgOptions {
  /** Optional fields to send always. */
  require?: string[];
  /** How much likelier an optional field is left out than sent; default: sparse first, then even odds. */
  omitWeight?: number;
}

/**
 * Arguments the tool's own zod schema accepts (refinements included), generated from its JSON Schema with
 * hints. Undefined when no attempt passes.
 */
export function validArgs(t: Tool, hints: Hints, seed: number, o: ArgOptions = {}): Record<string, unknown> | undefined {
  const schema = checkedInputJsonSchema(t) as JsonSchema;
  const withRequired = { ...schema, required: [...new Set([...(schema.required ?? []), ...(o.require ?? [])])] };
  // Sparse arguments first (fewer optional fields, fewer ways to conflict), then fuller ones.
  const weights = o.omitWeight === undefined ? [4, 1] : [o.omitWeight];
  for (const w of weights) {
    const found = fc.sample(validArbitrary(withRequired, hints, "", w), { numRuns: 60, seed }).find((v) => accepts(t, v));
    if (found) return found as Record<string, unknown>;
  }
  return undefined;
}

/** Whether the tool's schema accepts the value; a refinement that throws counts as a refusal (the fuzz reports it). */
export function accepts(t: Tool, v: unknown): boolean {
  try {
    return t.input.safeParse(v).success;
  } catch {
    return false;
  }
}

/** Write tools that hand out identifiers of `family` without needing one of that family first. */
export function producersOf(family: string): Tool[] {
  // destructive tools name the objects they end (cancel_plan answers with the plan's options): not makers
  return TOOLS.filter(
    (t) => t.isWrite && !t.isPublic && !t.tags.includes("destructive") && outputIdNames(t).has(family) && !requiredFamilies(t).includes(family),
  );
}

export interface World {
  owner: Member;
  member: Member;
  stranger: Member;
  /** Every identifier seen by owner or member, by family; the stranger sees none of these objects. */
  ids: Map<string, string[]>;
  /** Producer tools that made nothing, to report. */
  unproduced: string[];
}

/**
 * owner and member are contacts, owner and stranger are contacts; then every registered write tool that
 * produces an identifier some tool takes is called by owner (aimed at member), member agrees to every
 * request in its inbox, and the read tools of both are harvested for identifiers.
 */
export async function buildWorld(api: Api, prefix: string, seed = 1): Promise<World> {
  const [owner, member, stranger] = await Promise.all(["o", "m", "x"].map((r) => register(api, `${prefix}-${r}`)));
  await befriend(api, owner!, member!);
  await befriend(api, owner!, stranger!);
  const ids = new Map<string, string[]>();
  const wanted = inputFamilies();
  const producers = [...new Set([...wanted].flatMap(producersOf))];
  const unproduced = new Set(producers.map((t) => t.name));
  // Two rounds with the member's consent between them: expenses and payments need the member in the group.
  for (let round = 0; round < 2; round++) {
    for (const t of producers) {
      if (!unproduced.has(t.name) && round > 0) continue;
      if (await produce(api, t, owner!, member!.handle, ids, seed + round * 1000)) unproduced.delete(t.name);
    }
    await agreeToEverything(api, member!, ids, seed);
  }
  for (const who of [owner!, member!]) await harvest(api, who, ids, seed);
  return { owner: owner!, member: member!, stranger: stranger!, ids, unproduced: [...unproduced] };
}

async function produce(api: Api, t: Tool, as: Member, target: string, ids: Map<string, string[]>, seed: number): Promise<boolean> {
  const hints = worldHints({ ids, target });
  // lists of handles (members, to, invitees) always name the target, so it takes part in what is made
  // and a group the world has is always named: without one, a tool may act across groups (record_payment) and make nothing
  const require = [
    ...Object.entries(properties(t))
      .filter(([, p]) => p.type === "array" && isHandleSchema(p.items))
      .map(([n]) => n),
    ...idFields(t).filter((f) => f === "group_id" && ids.get("group_id")?.length),
  ];
  for (let attempt = 0; attempt < 24; attempt++) {
    const args = validArgs(t, hints, seed + attempt, { require, omitWeight: attempt % 2 ? 1 : 4 });
    if (!args) return false;
    const r = await api.call(t.name, args, as.key);
    if (r.status === 200) {
      collectIds(r.body.data, ids);
      return true;
    }
  }
  return false;
}

/** The member says yes to every item that waits for a decision, with the tool the item suggests. */
export async function agreeToEverything(api: Api, m: Member, ids: Map<string, string[]>, seed: number): Promise<void> {
  const inbox = await ok(api, "get_inbox", { since: "0", include_seen: true, limit: 100 }, m.key);
  collectIds(inbox, ids);
  for (const item of inbox.items) {
    if (!item.requires_action || item.resolved) continue;
    const t = findTool(item.suggested_tools[0]);
    if (!t) continue;
    const refIds = new Map([...ids, ...Object.entries(item.refs as Record<string, string>).map(([k, v]) => [k, [v]] as [string, string[]])]);
    const fixed = item.from ? { handle: item.from.handle } : {};
    const args = validArgs(t, worldHints({ ids: refIds, fixed, agree: true }), seed);
    if (args) collectIds((await api.call(t.name, args, m.key)).body.data, ids);
  }
}

/** Calls every read tool (with world ids where it takes some) and records the identifiers it shows. */
async function harvest(api: Api, who: Member, ids: Map<string, string[]>, seed: number): Promise<void> {
  for (const t of TOOLS.filter((x) => !x.isWrite && !x.isPublic)) {
    const args = validArgs(t, worldHints({ ids, fixed: { since: "0", include_seen: true } }), seed);
    if (!args) continue;
    const r = await api.call(t.name, args, who.key);
    if (r.status === 200) collectIds(r.body.data, ids);
  }
}
