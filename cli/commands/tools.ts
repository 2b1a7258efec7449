import { Command } from "commander";
import { EXIT_CODES_SEE, action, emit, example, printable, shellWord, table, usageExits } from "../output.ts";
import { type JsonSchema, type ToolDescription, describeTool, withJsonOutput, request, resolveTarget, urlOption, wantsJson } from "../remote.ts";

const range = (min?: number, max?: number) =>
  min !== undefined && max !== undefined ? `${min}-${max}` : min !== undefined ? `>= ${min}` : max !== undefined ? `<= ${max}` : "";

/** A one-line summary of a field's JSON Schema: type and constraints. */
function fieldSummary(s: JsonSchema): string {
  if (s.anyOf) return s.anyOf.map(fieldSummary).join(" or ");
  if (s.enum) return `one of ${s.enum.map((v) => JSON.stringify(v)).join(", ")}`;
  if (s.const !== undefined) return JSON.stringify(s.const);
  const type = s.type ?? "any";
  const parts = [type === "array" && s.items ? `array of ${fieldSummary(s.items)}` : type];
  const length = type === "array" ? range(s.minItems, s.maxItems) : type === "string" ? range(s.minLength, s.maxLength) : range(s.minimum, s.maximum);
  if (length) parts.push(type === "string" ? `${length} chars` : type === "array" ? `${length} items` : length);
  if (s.format) parts.push(s.format);
  // A format (uuid, email) says more than the long pattern that implements it.
  if (s.pattern && !s.format) parts.push(`pattern ${s.pattern}`);
  return parts.join(", ");
}

/**
 * The tool's example as a command to paste: svc call adds the idempotency_key itself, objects and lists go as
 * JSON in quotes. Made-up ids are named, with the tool that lists real ones.
 */
function exampleLines(t: ToolDescription): string[] {
  if (!t.example) return [];
  const words = Object.entries(t.example.arguments)
    .filter(([k]) => k !== "idempotency_key")
    .map(([k, v]) => shellWord(k, v));
  const madeUp = t.example.made_up.map((m) => `${m.field} from ${m.from}`).join(", ");
  return ["", `Example${madeUp ? ` (made-up ids: take ${madeUp})` : ""}:`, `  ${printable(["svc call", t.name, ...words].join(" "))}`];
}

function describeText(t: ToolDescription): string {
  const props = t.input_schema.properties ?? {};
  const required = new Set(t.input_schema.required ?? []);
  // Each field with what it is and where its value comes from (its description), after its type.
  const rows = Object.entries(props).map(([name, s]) => [name, required.has(name) ? "required" : "optional", fieldSummary(s), s.description ?? ""]);
  return [
    `${t.name}: ${t.title}`,
    `tags: ${t.tags.join(", ")}; ${t.public ? "public (no credential)" : `needs scope ${t.required_scope}`}${t.idempotent ? "; idempotent (svc call adds an idempotency_key)" : ""}`,
    "",
    printable(t.description),
    "",
    "Input:",
    rows.length ? table(rows).replace(/^/gm, "  ") : "  (no arguments)",
    "",
    `Output: ${Object.keys(t.output_schema.properties ?? {}).join(", ")}`,
    ...exampleLines(t),
  ].join("\n");
}

export function toolsCommand(): Command {
  return usageExits(
    withJsonOutput(new Command("tools"))
      .description("List the tools of a running svc server, or describe one (from GET /v1/tools; no credential needed)")
      .argument("[name]", "a tool to describe: its purpose, arguments and output")
      .addOption(urlOption())
      .addHelpText("after", example("svc tools", "svc tools add_contact", "svc tools --json | jq '.tools[].name'") + EXIT_CODES_SEE)
      .action(
        action(async (name: string | undefined, o) => {
          const target = resolveTarget(o);
          if (name) {
            emit(await describeTool(target, name), wantsJson(o), describeText);
            return;
          }
          const data = await request(target, "GET", "/v1/tools");
          emit(data, wantsJson(o), (d: { tools: ToolDescription[]; count: number }) =>
            [
              table(d.tools.map((t) => [t.name, t.tags.join(","), t.title])),
              "",
              `${d.count} tools; svc tools NAME describes one, svc call NAME field=value calls it.`,
            ].join("\n"),
          );
        }),
      ),
  );
}
