// What completion and the "did you mean" of a mistyped command know of the tools: each tool's name (in the
// catalogue's order), its fields, and the values a field may take where its schema lists them. The compiled svc
// carries this as it was at build time (scripts/build.ts defines SVC_TOOL_FIELDS from the catalogue), so a TAB is
// answered without loading the catalogue, zod and the server behind it; run from source, it is read from the
// catalogue itself. test/cli/startup.test.ts holds the binary's answers equal to the live catalogue's.
import type { JsonSchema } from "./remote.ts";

/** Tool name -> field name -> the values it may be set to (empty when the schema does not list them). */
export type ToolFields = Record<string, Record<string, string[]>>;

declare const SVC_TOOL_FIELDS: ToolFields | undefined;

/** What a field may be set to, when the schema lists it: enums, consts, booleans. */
function valuesOf(s: JsonSchema | undefined): string[] {
  if (!s) return [];
  if (s.anyOf) return s.anyOf.flatMap(valuesOf);
  if (s.enum) return s.enum.map(String);
  if (s.const !== undefined) return [String(s.const)];
  return s.type === "boolean" ? ["true", "false"] : [];
}

/** The fields of each tool, from the tools and their input JSON Schemas. */
export function fieldsOf<T extends { name: string }>(tools: readonly T[], inputSchema: (t: T) => unknown): ToolFields {
  return Object.fromEntries(
    tools.map((t) => {
      const props = (inputSchema(t) as JsonSchema).properties ?? {};
      return [t.name, Object.fromEntries(Object.entries(props).map(([field, schema]) => [field, valuesOf(schema)]))];
    }),
  );
}

/** The tools' fields: as built into this svc, else (run from source) from the catalogue. */
export async function toolFields(): Promise<ToolFields> {
  if (typeof SVC_TOOL_FIELDS !== "undefined") return SVC_TOOL_FIELDS;
  const { TOOLS, inputJsonSchema } = await import("../server/tools/catalogue.ts");
  return fieldsOf(TOOLS, inputJsonSchema);
}
