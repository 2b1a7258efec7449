// fast-check arbitraries derived from a tool's input JSON Schema (as GET /v1/tools publishes it), so every
// registered tool is fuzzed without anyone writing generators for it: valid values, and near misses.
import fc from "fast-check";
import { NO_CONTROL } from "../../server/contract/text.ts";

export type JsonSchema = Record<string, any>;

/** Values a property should take instead of random ones (real ids, known handles), by property name. */
export type Hints = (name: string, schema: JsonSchema) => fc.Arbitrary<unknown> | undefined;

const noHints: Hints = () => undefined;

const ALWAYS = Symbol("always");
/** Marks a hint as a value to send even where the property is optional. */
export const always = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T> => Object.assign(a, { [ALWAYS]: true });
const isAlways = (a: fc.Arbitrary<unknown>) => (a as unknown as Record<symbol, unknown>)[ALWAYS] === true;
const LONGEST_RANDOM = 60;

/** The non-null branch of `anyOf: [X, {type: null}]`, and X itself otherwise. */
function branches(s: JsonSchema): JsonSchema[] {
  return s.anyOf ?? s.oneOf ?? [s];
}

const typeOf = (s: JsonSchema): string | undefined => (Array.isArray(s.type) ? s.type[0] : s.type);

function patternOf(s: JsonSchema): RegExp | undefined {
  if (typeof s.pattern !== "string") return undefined;
  try {
    return new RegExp(s.pattern);
  } catch {
    return undefined;
  }
}

const lengthOk = (s: JsonSchema, v: string) => v.length >= (s.minLength ?? 0) && v.length <= (s.maxLength ?? Infinity);

function validString(s: JsonSchema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? 10_000;
  if (s.format === "uuid") return fc.uuid({ version: 4 });
  if (s.format === "date-time") return fc.date({ min: new Date("2000-01-01"), max: new Date("2099-12-31"), noInvalidDate: true }).map((d) => d.toISOString());
  if (s.format === "date")
    return fc.date({ min: new Date("1990-01-01"), max: new Date("2099-12-31"), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
  if (s.format === "email") return fc.emailAddress();
  if (s.format === "uri" || s.format === "url") return fc.webUrl();
  const re = patternOf(s);
  const plain = fc.oneof(
    { weight: 6, arbitrary: fc.string({ minLength: min, maxLength: Math.min(max, Math.max(min, LONGEST_RANDOM)), unit: "grapheme-ascii" }) },
    { weight: 2, arbitrary: fc.string({ minLength: min, maxLength: Math.min(max, Math.max(min, LONGEST_RANDOM)), unit: "grapheme" }) },
    // the boundaries themselves are valid and worth hitting
    { weight: 1, arbitrary: fc.constant("x".repeat(Math.min(max, 100_000))) },
    { weight: 1, arbitrary: fc.constant("y".repeat(min)) },
  );
  // No text svc takes holds control or invisible characters (a shared rule the advertised schemas leave out).
  if (!re) return plain.filter((v) => lengthOk(s, v) && NO_CONTROL.test(v));
  let matching: fc.Arbitrary<string>;
  try {
    matching = fc.stringMatching(re);
  } catch {
    return plain.filter((v) => re.test(v) && lengthOk(s, v));
  }
  return fc.oneof({ weight: 3, arbitrary: matching }, { weight: 1, arbitrary: plain }).filter((v) => re.test(v) && lengthOk(s, v));
}

function validNumber(s: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const lo = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + (integer ? 1 : 1e-9) : -1e9);
  const hi = s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - (integer ? 1 : 1e-9) : 1e9);
  const bounded = integer
    ? fc.integer({ min: Math.max(Math.ceil(lo), Number.MIN_SAFE_INTEGER), max: Math.min(Math.floor(hi), Number.MAX_SAFE_INTEGER) })
    : fc.double({ min: lo, max: hi, noNaN: true, noDefaultInfinity: true });
  return fc.oneof({ weight: 4, arbitrary: bounded }, { weight: 1, arbitrary: fc.constantFrom(integer ? Math.ceil(lo) : lo, integer ? Math.floor(hi) : hi) });
}

/**
 * An arbitrary of values valid against `s` (as far as JSON Schema can say: zod refinements are checked by the
 * caller). `omitWeight` is how much likelier an optional property is left out than sent (1: even odds).
 */
export function validArbitrary(s: JsonSchema, hints: Hints = noHints, name = "", omitWeight = 1): fc.Arbitrary<unknown> {
  const hinted = name ? hints(name, s) : undefined;
  if (hinted) return hinted;
  if (s.anyOf || s.oneOf) return fc.oneof(...branches(s).map((b) => validArbitrary(b, hints, name, omitWeight)));
  if (s.const !== undefined) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  switch (typeOf(s)) {
    case "string":
      return validString(s);
    case "integer":
      return validNumber(s, true);
    case "number":
      return validNumber(s, false);
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      const item = validArbitrary(s.items ?? {}, hints, name.replace(/s$/, ""), omitWeight);
      const min = s.minItems ?? 0;
      return fc.array(item, { minLength: min, maxLength: Math.min(s.maxItems ?? 5, Math.max(min, 5)) });
    }
    case "object":
      return validObject(s, hints, omitWeight);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

const OMIT = Symbol("omit");

function validObject(s: JsonSchema, hints: Hints, omitWeight = 1): fc.Arbitrary<Record<string, unknown>> {
  const props: Record<string, JsonSchema> = s.properties ?? {};
  const required = new Set<string>(s.required ?? []);
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [k, ps] of Object.entries(props)) {
    const value = validArbitrary(ps, hints, k, omitWeight);
    model[k] = required.has(k) || isAlways(value) ? value : fc.oneof({ weight: omitWeight, arbitrary: fc.constant(OMIT) }, { weight: 1, arbitrary: value });
  }
  const fixed = fc.record(model).map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== OMIT && v !== undefined)));
  const extra = s.additionalProperties;
  if (!extra || typeof extra !== "object" || Object.keys(props).length) return fixed;
  // a record type such as refs: keys from propertyNames, values from additionalProperties
  const keys = s.propertyNames ? (validString({ type: "string", ...s.propertyNames }) as fc.Arbitrary<string>) : fc.string({ minLength: 1, maxLength: 12 });
  return fc.dictionary(keys, validArbitrary(extra, hints), { maxKeys: 3 }) as fc.Arbitrary<Record<string, unknown>>;
}

const CONTROL_CHARACTERS = ["\u0000", "\u0007", "\u001b[31m", "\r\n", "\u007f", "\u0085", "\u2028", "\ud800", "\u202e"];

/** Values that miss what `s` accepts by a little (or by a lot): the shapes of bad input clients really send. */
function nearMissValues(s: JsonSchema): fc.Arbitrary<unknown> {
  const base = branches(s).find((b) => typeOf(b) !== "null") ?? s;
  const wrongTypes: unknown[] = [
    typeOf(base) === "string" ? 12345 : "a string",
    typeOf(base) === "boolean" ? "true" : true,
    typeOf(base) === "array" ? { not: "an array" } : [1, "two", null],
    typeOf(base) === "object" ? ["not", "an", "object"] : { nested: { deeper: [1] } },
    null,
  ];
  const misses: fc.Arbitrary<unknown>[] = [fc.constantFrom(...wrongTypes)];
  if (Array.isArray(base.enum)) misses.push(fc.constantFrom("NOT_AN_OPTION", String(base.enum[0]).toUpperCase(), `${base.enum[0]} `));
  switch (typeOf(base)) {
    case "string": {
      if (base.maxLength !== undefined) misses.push(fc.constant("z".repeat(base.maxLength + 1)));
      if (base.minLength) misses.push(fc.constant("z".repeat(base.minLength - 1)));
      misses.push(fc.constantFrom(...CONTROL_CHARACTERS).map((c) => `ok${c}ok`));
      misses.push(fc.constant("h".repeat(200_000)));
      if (base.pattern || base.format)
        misses.push(fc.string({ maxLength: 40 }), fc.constantFrom("../../etc/passwd", "' OR 1=1 --", "00000000-0000-0000-0000-00000000000g"));
      break;
    }
    case "integer":
    case "number": {
      if (base.minimum !== undefined) misses.push(fc.constant(base.minimum - 1));
      if (base.maximum !== undefined) misses.push(fc.constant(base.maximum + 1));
      misses.push(fc.constantFrom(1.5, -0, 2 ** 53 + 2, 1e308, -1e308, "12"));
      break;
    }
    case "array": {
      if (base.maxItems !== undefined) misses.push(fc.constant(Array.from({ length: base.maxItems + 1 }, () => crypto.randomUUID())));
      if (base.minItems) misses.push(fc.constant([]));
      misses.push(fc.constant([{}, [], 7]));
      break;
    }
  }
  return fc.oneof(...misses);
}

/** `depth` nested arrays around a value: deep nesting must be refused, not recursed into until the stack ends. */
export const deeplyNested = (depth: number): unknown => {
  let v: unknown = "bottom";
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { d: v };
  return v;
};

/**
 * An arbitrary of argument objects that miss the schema: one property mutated (wrong type, length +-1,
 * control characters, huge), a required field dropped, an unknown field, deep nesting, or not an object at all.
 */
export function nearMissArbitrary(s: JsonSchema, hints: Hints = noHints): fc.Arbitrary<unknown> {
  const props: Record<string, JsonSchema> = s.properties ?? {};
  const names = Object.keys(props);
  const valid = validObject(s, hints);
  const mutations: fc.Arbitrary<unknown>[] = [
    valid.map((v) => ({ ...v, unknown_field_xyz: "surprise" })),
    valid.map((v) => ({ ...v, nested: deeplyNested(2_000) })),
    valid.map((v) => JSON.parse(`{"__proto__": {"admin": true}, ${JSON.stringify(v).slice(1)}`.replace(/, }$/, "}"))),
    fc.constantFrom<unknown>([], "a string", 42, null, true, [{}]),
  ];
  const required: string[] = s.required ?? [];
  if (required.length) {
    mutations.push(fc.tuple(valid, fc.constantFrom(...required)).map(([v, k]) => Object.fromEntries(Object.entries(v).filter(([n]) => n !== k))));
  }
  if (names.length) {
    mutations.push(
      fc
        .constantFrom(...names)
        .chain((k) => fc.tuple(valid, fc.constant(k), nearMissValues(props[k]!)))
        .map(([v, k, bad]) => ({ ...v, [k]: bad })),
    );
  }
  return fc.oneof(...mutations);
}
