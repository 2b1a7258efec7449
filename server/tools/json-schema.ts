// The one place JSON Schema is made from zod (REST catalogue, OpenAPI, MCP, the docs server), in the portable
// subset: clients that map tool schemas onto a single-`type` dialect (Gemini's function declarations, for one)
// reject or drop a tool whose schema has a type array (["string","null"]) or a schema that says nothing ({}).
import { z } from "zod";
import { MAX_MINOR } from "../contract/ledger.ts";
import { NO_CONTROL } from "../contract/text.ts";
import { ABUSE_BOUND, HANDLE_PATTERN, REF_NAME, REF_VALUE } from "../contract/wire.ts";

type Schema = Record<string, unknown>;

/** Every schema svc advertises is JSON Schema 2020-12. */
export const SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema";

/** Keywords that constrain only values of one type; they go into that type's anyOf branch. */
const KEYWORDS_OF: Record<string, string[]> = {
  string: ["minLength", "maxLength", "pattern", "format", "contentEncoding", "contentMediaType"],
  number: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
  integer: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
  array: ["items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains"],
  object: ["properties", "required", "additionalProperties", "patternProperties", "propertyNames", "minProperties", "maxProperties"],
};
const SCHEMA_MAPS = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
const SCHEMA_LISTS = ["anyOf", "oneOf", "allOf", "prefixItems"];
const SCHEMA_VALUES = ["items", "additionalProperties", "propertyNames", "contains", "not", "if", "then", "else"];
/** Keywords that say something about a value without constraining it. */
const ANNOTATIONS = new Set(["$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"]);

/** Any JSON value, spelled so that each branch has one type (what z.unknown() means). */
const ANY_VALUE = ["object", "array", "string", "number", "boolean", "null"].map((type) => ({ type }));

function portable(node: unknown): unknown {
  if (node === null || typeof node !== "object" || Array.isArray(node)) return node;
  const s: Schema = { ...(node as Schema) };
  for (const key of SCHEMA_MAPS) {
    if (s[key] && typeof s[key] === "object") s[key] = Object.fromEntries(Object.entries(s[key] as Schema).map(([k, v]) => [k, portable(v)]));
  }
  for (const key of SCHEMA_LISTS) if (Array.isArray(s[key])) s[key] = (s[key] as unknown[]).map(portable);
  for (const key of SCHEMA_VALUES) if (key in s && typeof s[key] === "object") s[key] = portable(s[key]);
  if (Array.isArray(s.type)) {
    const types = s.type as string[];
    if (types.length === 1) s.type = types[0];
    else {
      const branches = types.map((type) => {
        const branch: Schema = { type };
        for (const k of KEYWORDS_OF[type] ?? []) if (k in s) branch[k] = s[k];
        return branch;
      });
      for (const k of ["type", ...types.flatMap((t) => KEYWORDS_OF[t] ?? [])]) delete s[k];
      s.anyOf = branches;
    }
  }
  if (Object.keys(s).every((k) => ANNOTATIONS.has(k))) s.anyOf = ANY_VALUE;
  return s;
}

/**
 * What a schema says that costs a reader more than it tells, dropped from what is advertised (the zod schema still
 * checks all of it): `$schema` (said once), the pattern zod adds to a format
 * (uuid, date-time, date), the patterns said once in the shared rules (control and invisible characters,
 * a handle's form, refs'), and the bounds of a safe integer or of an amount in minor units. An output's objects are
 * not closed: v1 only grows, and an answer with a field added later must still match a schema a client cached.
 */
function compact(node: unknown, io: "input" | "output", advertised: boolean): unknown {
  if (Array.isArray(node)) return node.map((n) => compact(n, io, advertised));
  if (node === null || typeof node !== "object") return node;
  const s = node as Schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === "pattern" && (UNSAID_PATTERNS.has(v as string) || ["uuid", "date-time", "date"].includes(s.format as string))) continue;
    if (k === "minLength" && v === 0) continue;
    // Not empty: a field a model fills is never sent empty; the server still refuses one.
    if (advertised && k === "minLength" && v === 1) continue;
    if ((k === "minimum" && v === Number.MIN_SAFE_INTEGER) || (k === "maximum" && v === Number.MAX_SAFE_INTEGER)) continue;
    if (k === ABUSE_BOUND) continue;
    if (advertised && k === "pattern" && SAID_IN_RULES.has(v as string)) continue;
    if (advertised && k === "maxLength" && s[ABUSE_BOUND]) continue;
    if (advertised && k === "maximum" && v === MAX_MINOR) continue;
    if (io === "output" && k === "additionalProperties" && v === false) continue;
    // An answer's ids and times are copied, not parsed by their form: said by their names (…_id, …_at) instead.
    if (advertised && io === "output" && k === "format") continue;
    // What a model reads needs neither: it sends the properties listed (an unknown one is refused, naming the one
    // meant), and a record's keys are strings whatever is said. The checked schema keeps both.
    if (advertised && io === "input" && k === "additionalProperties" && v === false) continue;
    if (advertised && k === "propertyNames" && JSON.stringify(compact(v, io, advertised)) === '{"type":"string"}') continue;
    // An id is copied from the answer its description names, never made up: its form tells a model nothing.
    if (advertised && io === "input" && k === "format" && v === "uuid") continue;
    // How many items a long list may hold: a bound no call comes near but by mistake, and then refused naming it.
    // A small one (a plan's 10 options) is a rule a call must know, and stays.
    if (advertised && io === "input" && k === "maxItems" && (v as number) >= 100) continue;
    out[k] = k === "properties" || k === "$defs" ? mapValues(v as Schema, (c) => compact(c, io, advertised)) : compact(v, io, advertised);
    // An array's items described again (ids from the same tool as the array says) is said once, on the array.
    if (advertised && io === "input" && k === "items" && typeof s.description === "string" && out.items && typeof out.items === "object") {
      const { description: _, ...item } = out.items as Schema;
      out.items = item;
    }
  }
  // A value that may be null, described as a whole: its branches need not say it again.
  if (advertised && io === "input" && typeof out.description === "string" && Array.isArray(out.anyOf)) {
    out.anyOf = (out.anyOf as Schema[]).map(({ description: _, ...branch }) => branch);
  }
  // A decimal taken as a string or a JSON number is advertised as the string it is read as: one branch less for a
  // model to read (its description shows both forms), and the server takes the number all the same.
  if (advertised && io === "input" && JSON.stringify(out.anyOf) === '[{"type":"string"},{"type":"number"}]') {
    delete out.anyOf;
    out.type = "string";
  }
  // zod's allOf of patterns, once a pattern is dropped: what is left joins the schema, or goes.
  if (Array.isArray(out.allOf)) {
    const parts = (out.allOf as Schema[]).filter((p) => Object.keys(p).length > 0);
    delete out.allOf;
    if (parts.length === 1 && Object.keys(parts[0]!).every((k) => !(k in out))) Object.assign(out, parts[0]);
    else if (parts.length) out.allOf = parts;
  }
  return out;
}

/** Patterns that refuse what no one means to send (control, invisible and NUL characters): said once in the docs. */
const UNSAID_PATTERNS = new Set([NO_CONTROL.source, "^[^\\x00]*$"]);
/**
 * Patterns said otherwise: a handle's form (copied from other tools' answers, never made up) and refs' in the shared
 * rules, a currency's in its description (an ISO 4217 code).
 */
const SAID_IN_RULES = new Set([HANDLE_PATTERN.source, REF_NAME.source, REF_VALUE.source, "^[A-Z]{3}$"]);

const mapValues = (o: Schema, f: (v: unknown, k: string) => unknown): Schema => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v, k)]));

/** The same schema with each subschema it holds (a property, an item, a branch) replaced by f's answer. */
function mapSubschemas(s: Schema, f: (sub: Schema, key: string) => Schema, key: string): Schema {
  const out: Schema = { ...s };
  if (s.properties) out.properties = mapValues(s.properties as Schema, (v, k) => f(v as Schema, k));
  for (const k of ["items", "additionalProperties", "propertyNames"]) if (s[k] && typeof s[k] === "object") out[k] = f(s[k] as Schema, key);
  for (const k of ["anyOf", "oneOf", "allOf"]) if (Array.isArray(s[k])) out[k] = (s[k] as Schema[]).map((b) => f(b, key));
  return out;
}

/**
 * Shares what an answer's schema repeats (an agent, a member, an expense's content): a subschema met more than once
 * is said once under $defs, named after the first property that holds it, and referred to by $ref, whenever that
 * makes the schema shorter. The one that saves most goes first, and the count is taken again after each, so a shape
 * held only inside a shared one is not given a definition of its own.
 */
function shareDefinitions(root: Schema): Schema {
  // A shape described where it is used (an agent as "the payer") is the same shape: it is shared without its
  // description, which stays beside the $ref (2020-12 reads both).
  const bare = ({ description: _, ...rest }: Schema): Schema => rest;
  const defs: Record<string, Schema> = {};
  let tree = root;
  for (;;) {
    const seen = new Map<string, { n: number; key: string }>();
    const count = (sub: Schema, key: string): Schema => {
      const text = JSON.stringify(bare(sub));
      const s = seen.get(text);
      if (s) s.n++;
      else seen.set(text, { n: 1, key });
      return mapSubschemas(sub, count, key);
    };
    mapSubschemas(tree, count, "");
    for (const [name, def] of Object.entries(defs)) mapSubschemas(def, count, name);
    let best: { text: string; name: string; saves: number } | undefined;
    for (const [text, { n, key }] of seen) {
      if (n < 2) continue;
      let name = key || "shared";
      for (let i = 2; name in defs; i++) name = `${key || "shared"}_${i}`;
      // n copies become n references and one definition ("name":text, and a comma).
      const saves = n * text.length - (n * `{"$ref":"#/$defs/${name}"}`.length + text.length + name.length + 4);
      if (saves > 0 && (!best || saves > best.saves)) best = { text, name, saves };
    }
    if (!best) break;
    const { text, name } = best;
    const share = (sub: Schema, key: string): Schema => {
      if (JSON.stringify(bare(sub)) !== text) return mapSubschemas(sub, share, key);
      return typeof sub.description === "string" ? { $ref: `#/$defs/${name}`, description: sub.description } : { $ref: `#/$defs/${name}` };
    };
    tree = mapSubschemas(tree, share, "");
    for (const [n, def] of Object.entries(defs)) defs[n] = mapSubschemas(def, share, n);
    defs[name] = JSON.parse(text) as Schema;
  }
  return Object.keys(defs).length ? { ...tree, $defs: defs } : tree;
}

/** The same schema with every $ref to its own $defs replaced by the definition (for code that walks a schema). */
export function inlineRefs(root: Schema): Schema {
  const defs = (root.$defs ?? {}) as Record<string, Schema>;
  const inline = (s: Schema, key: string): Schema => {
    const ref = typeof s.$ref === "string" ? /^#\/\$defs\/(.+)$/.exec(s.$ref) : null;
    const { $ref: _, ...rest } = s;
    return ref ? inline({ ...defs[ref[1]!], ...rest }, key) : mapSubschemas(s, inline, key);
  };
  const { $defs: _, ...rest } = root;
  return mapSubschemas(rest, inline, "");
}

/**
 * Shapes that several tools answer with (an expense, a group, a plan, ...): declared in full once, in the answer of
 * the tool that reads them (their home), and in every other tool's answer as an object that keeps its ids and says
 * where the full shape is. The answers themselves are checked against the whole zod schema all the same.
 */
const SHARED_SHAPES = new Map<z.ZodType, { home: string; what: string }>();

/** Marks a shape as declared in full in `home`'s answer only; returns it unchanged. */
export function sharedShape<T extends z.ZodType>(schema: T, what: string, home: string): T {
  SHARED_SHAPES.set(schema, { home, what });
  return schema;
}

/** In a tool other than its home, a shared shape becomes an object with its ids and a pointer to the full one. */
function pointToSharedShapes(tool: string | undefined) {
  return ({ zodSchema, jsonSchema }: { zodSchema: unknown; jsonSchema: Schema }) => {
    const shared = SHARED_SHAPES.get(zodSchema as z.ZodType);
    if (!shared || tool === undefined || tool === shared.home) return;
    const props = (jsonSchema.properties ?? {}) as Record<string, Schema>;
    const ids = Object.keys(props).filter((k) => k.endsWith("_id") && props[k]!.type === "string" && props[k]!.format === "uuid");
    for (const k of Object.keys(jsonSchema)) delete jsonSchema[k];
    Object.assign(jsonSchema, {
      type: "object",
      description: `${shared.what}, as ${shared.home}'s answer declares it`,
      ...(ids.length ? { properties: Object.fromEntries(ids.map((k) => [k, { type: "string", format: "uuid" }])), required: ids } : {}),
    });
  };
}

/**
 * The JSON Schema (2020-12) of a tool's input or output, in the portable subset: as advertised (what the shared
 * rules say is left out), or as checked (every bound and pattern the server holds a value to, for code that makes
 * valid values from the schema).
 */
export function toolJsonSchema(schema: z.ZodType, io: "input" | "output", tool?: string, as: "advertised" | "checked" = "advertised"): Schema {
  const json = z.toJSONSchema(schema, { io, unrepresentable: "any", override: io === "output" ? pointToSharedShapes(tool) : undefined });
  // The dialect is said once (GET /v1/tools schema_dialect; MCP's default): 2020-12.
  delete json.$schema;
  const plain = compact(portable(json), io, as === "advertised") as Schema;
  return io === "output" ? shareDefinitions(plain) : plain;
}
