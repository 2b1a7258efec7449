import { Command, Option } from "commander";
import { writeFileSync } from "node:fs";
import { textFor } from "../answer-text.ts";
import { CliError, EXIT, EXIT_CODES_SEE, action, emit, example, usageError, usageExits } from "../output.ts";
import { type JsonSchema, type ToolDescription, describeTool, withJsonOutput, keyOption, request, resolveTarget, urlOption, wantsJson } from "../remote.ts";
import { expandShorthands } from "../shorthands.ts";
import { didYouMean } from "../suggest.ts";

/** The JSON types a field's schema admits. */
function typesOf(s: JsonSchema | undefined): Set<string> {
  if (!s) return new Set(["any"]);
  if (s.anyOf) return new Set(s.anyOf.flatMap((x) => [...typesOf(x)]));
  if (s.enum) return new Set(s.enum.map((v) => (v === null ? "null" : typeof v)));
  if (s.const !== undefined) return new Set([s.const === null ? "null" : typeof s.const]);
  return new Set(s.type === undefined ? ["any"] : Array.isArray(s.type) ? s.type : [s.type]);
}

/**
 * `key=value` pairs as JSON fields. A value that parses as JSON (number, boolean, array, object, null) is taken
 * as such, except for a field whose schema admits only text: `since=0` or `code=1234` stay strings there.
 */
function parsePairs(pairs: string[], input: JsonSchema): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq < 1) throw usageError(`expected key=value, got "${pair}"`, "Write each argument as field=value, or pass all of them with --json '{...}'.");
    const [name, raw] = [pair.slice(0, eq), pair.slice(eq + 1)];
    const types = typesOf(input.properties?.[name]);
    const textOnly = [...types].every((t) => t === "string" || (t === "null" && raw !== "null"));
    try {
      args[name] = textOnly ? raw : JSON.parse(raw);
    } catch {
      args[name] = raw;
    }
  }
  return args;
}

async function jsonArgument(json: string | undefined): Promise<Record<string, unknown>> {
  if (json === undefined) return {};
  const text = json === "-" ? await Bun.stdin.text() : json;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw usageError(`The arguments are not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw usageError("The arguments must be one JSON object of the tool's fields.");
  return parsed as Record<string, unknown>;
}

/** Field names the tool does not take are refused before the call, with the nearest names it does take. */
function checkFields(tool: ToolDescription, args: Record<string, unknown>): void {
  if (!tool.input_schema.properties) return;
  const known = Object.keys(tool.input_schema.properties);
  for (const name of Object.keys(args)) {
    if (known.includes(name)) continue;
    throw usageError(
      `${tool.name} has no field "${name}".${didYouMean(name, known)}`,
      known.length ? `Its fields: ${known.join(", ")} (svc tools ${tool.name} describes them).` : `${tool.name} takes no arguments.`,
    );
  }
}

/**
 * -o FILE: the file a tool exports (export_group's CSV or JSON), written as the plain text it is; `-o -` prints it.
 * The text was written by the group's members: it goes to the file untouched, never into a terminal's JSON.
 */
function writeExport(tool: string, data: Record<string, any>, file: string): void {
  const content = data.content?.untrusted_content;
  if (typeof content !== "string" || typeof data.filename !== "string") {
    throw usageError(`${tool} answers no file to write.`, "-o works with tools that export a file, such as export_group.");
  }
  if (file === "-") {
    process.stdout.write(content);
    return;
  }
  writeFileSync(file, content);
  process.stderr.write(
    `svc: wrote ${file} (${Buffer.byteLength(content)} bytes, ${data.media_type}); its descriptions and notes were written by the group's members.\n`,
  );
}

export function callCommand(): Command {
  return usageExits(
    withJsonOutput(new Command("call"))
      .description("Call a tool of a running svc server and print its data (text on a terminal, JSON when piped)")
      .argument("<tool>", "tool name, e.g. get_me (svc tools lists them)")
      .argument("[args...]", "arguments as field=value; values that parse as JSON (numbers, true, [..]) are sent as such")
      .addOption(new Option("--args <object>", "all arguments as one JSON object, or - to read it from stdin; field=value pairs override it"))
      .addOption(new Option("-o, --output <file>", "write the file a tool exports (export_group's CSV or JSON) to FILE as plain text; - prints it"))
      .addOption(new Option("--ids", "on a terminal, also show the ids that the text of some answers leaves out"))
      .addOption(urlOption())
      .addOption(keyOption())
      .addHelpText(
        "after",
        example(
          "svc call register_agent handle=alice display_name=Alice",
          "svc login --key svc_... --url https://svc.example.org",
          "svc call get_inbox limit=10 include_seen=true",
          `svc call add_contact handle=bob note="hi, it's Alice"`,
          `svc call add_expense group="Lisbon trip" description="Dinner at Rosa's" amount=60.00 paid_by=alice:40,bob:20 split=shares among=alice:2,bob:1`,
          `svc call add_expense group="Lisbon trip" description=Taxi amount=12.00 split=equal among=alice,bob`,
          `svc call get_balances group="Lisbon trip" by_currency=true`,
          "svc call export_group group_id=GROUP_ID format=csv -o lisbon.csv",
          `echo '{"item_ids":["..."],"action":"seen"}' | svc call ack_inbox --args -`,
        ) +
          "\nA value is sent as JSON when it parses as JSON (limit=10, include_seen=true, item_ids='[\"...\"]'),\n" +
          "except for fields that take only text (since=0 stays a string); objects and lists are JSON in quotes.\n" +
          "A group may be named instead of its id: group=NAME (or group_id=NAME) is looked up in list_groups by\n" +
          "exact name, any case; several groups of that name, or none, is an error listing them.\n" +
          "split=MODE among=alice,bob (among=alice:2,bob:1 for weights, percentages or amounts) and\n" +
          "paid_by=alice:40,bob:20 (paid_by=alice: alice paid it all) stand for the JSON split and paid_by.\n" +
          "--ids shows the ids that the text of get_inbox, get_activity and get_me leaves out.\n" +
          "svc tools NAME shows a runnable example of every tool.\n" +
          "Write tools get a fresh idempotency_key unless you pass one (idempotency_key=...); when a call\n" +
          "fails in a way worth retrying, that key is printed so the retry can reuse it.\n" +
          EXIT_CODES_SEE,
      )
      .action(
        action(async (tool: string, pairs: string[], o) => {
          const target = resolveTarget(o);
          // A lone `-` or `{...}` among the arguments is the JSON object (what --json took before it meant output).
          const objects = pairs.filter((p) => p === "-" || p.trimStart().startsWith("{"));
          if (objects.length + (o.args === undefined ? 0 : 1) > 1) throw usageError("Give the arguments as one JSON object at most (--args, - or {...}).");
          const base = await jsonArgument(o.args ?? objects[0]);
          const described = await describeTool(target, tool);
          const args = {
            ...base,
            ...parsePairs(
              pairs.filter((p) => !objects.includes(p)),
              described.input_schema,
            ),
          };
          await expandShorthands(target, described, args);
          checkFields(described, args);
          const generatedKey = described.idempotent && args.idempotency_key === undefined ? crypto.randomUUID() : undefined;
          if (generatedKey) args.idempotency_key = generatedKey;
          try {
            // Public tools get no key: a stale stored key must not stand in the way of register_agent.
            const data = await request(target, "POST", `/v1/tools/${encodeURIComponent(tool)}`, { body: args, auth: !described.public });
            if (o.output !== undefined) return writeExport(tool, data, o.output);
            emit(data, wantsJson(o), textFor(tool, target.url, { ids: Boolean(o.ids) }));
          } catch (err) {
            if (err instanceof CliError && generatedKey && (err.exitCode === EXIT.rateLimited || err.exitCode === EXIT.server)) {
              err.extra.push(`idempotency_key: ${generatedKey} (retry with idempotency_key=${generatedKey})`);
            }
            throw err;
          }
        }),
      ),
  );
}
