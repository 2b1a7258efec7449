// The one place JSON Schema is made from zod (REST catalogue, OpenAPI, MCP, the docs server), in the portable
// subset: clients that map tool schemas onto a single-`type` dialect (Gemini's function declarations, for one)
// reject or drop a tool whose schema has a type array (["string","null"]) or a schema that says nothing ({}).
import { z } from "zod";

type Schema = Record<string, unknown>;

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

/** The JSON Schema (2020-12) of a tool's input or output, in the portable subset. */
export const toolJsonSchema = (schema: z.ZodType, io: "input" | "output") => portable(z.toJSONSchema(schema, { io, unrepresentable: "any" })) as Schema;
