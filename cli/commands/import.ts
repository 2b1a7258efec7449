import { Command, InvalidArgumentError, Option } from "commander";
import { readFileSync } from "node:fs";
import { systemClock } from "../../server/clock.ts";
import type { ImportProblem, ImportResult } from "../../server/domain/ledger/exchange/splitwise-import.ts";
import { AppError } from "../../server/errors.ts";
import { withAdminDb, withDbOptions } from "../admin-db.ts";
import { CliError, EXIT, EXIT_CODES_SEE, action, emit, example, exitCodeFor, usageExits } from "../output.ts";

/** A parser of a flag's text whose errors commander reports as an invalid argument (exit 2). */
const flag =
  <A extends unknown[], T>(parse: (text: string, ...rest: A) => T) =>
  (text: string, ...rest: A): T => {
    try {
      return parse(text, ...rest);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  };

const HANDLE = /^[a-z0-9][a-z0-9_-]{2,31}$/;

/**
 * --map: "Name=handle,Other Name=handle2", or a JSON object {"Chen, Li": "chen", ...} for names holding a
 * comma or an equals sign -> Map(name -> handle).
 */
export function parseNameMap(text: string): Map<string, string> {
  const map = new Map<string, string>();
  const add = (name: string, rawHandle: string, given: string) => {
    const handle = rawHandle.trim().replace(/^@/, "");
    // "+Name": a new placeholder member named so (a friend with no account yet)
    const placeholder = /^\+.{1,80}$/su.test(handle) && handle.slice(1).trim() !== "";
    if (!name || !(placeholder || HANDLE.test(handle))) throw new Error(`--map: ${given} is not Name=handle or Name=+New Name`);
    if (map.has(name)) throw new Error(`--map: ${name} is mapped twice`);
    map.set(name, handle);
  };
  if (text.trim().startsWith("{")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error('--map: not a JSON object such as {"Chen, Li": "chen"}');
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error('--map: not a JSON object such as {"Chen, Li": "chen"}');
    for (const [name, handle] of Object.entries(parsed)) {
      if (typeof handle !== "string") throw new Error(`--map: the handle of ${JSON.stringify(name)} must be a string`);
      add(name.trim(), handle, JSON.stringify({ [name]: handle }));
    }
  } else {
    for (const pair of text.split(",").filter((p) => p.trim())) {
      const eq = pair.indexOf("=");
      add(eq < 1 ? "" : pair.slice(0, eq).trim(), pair.slice(eq + 1), `"${pair.trim()}"`);
    }
  }
  if (!map.size) throw new Error("--map: give at least one Name=handle");
  return map;
}

/** One --rate CUR=RATE added to the rates given before it; the rate itself is checked with the group's currency. */
export function parseRate(text: string, previous: ReadonlyMap<string, string> = new Map()): Map<string, string> {
  const m = /^\s*([A-Z]{3})\s*=\s*(\S+)\s*$/.exec(text);
  if (!m) throw new Error(`--rate: "${text}" is not CUR=RATE, such as GBP=1.17`);
  if (previous.has(m[1]!)) throw new Error(`--rate: ${m[1]} is given twice`);
  return new Map([...previous, [m[1]!, m[2]!]]);
}

/** A problem of the import as the operator fixes it: one with the names or rates given says which flag to change. */
export function problemText(p: ImportProblem): string {
  if (typeof p === "string") return p;
  if (p.input === "rates") return p.add ? `${p.text}; give the rate with --rate ${p.add}=<${p.currency} per 1 ${p.add}>` : `--rate ${p.text}`;
  if (!p.add) return `--map: ${p.text}`;
  const entry = /[,=]/.test(p.add)
    ? `${JSON.stringify({ [p.add]: "<handle>" })} to --map (as JSON: the name holds a comma or =)`
    : `${p.add}=<handle> to --map`;
  return `${p.text}; add ${entry}`;
}

function readFile(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw new CliError(EXIT.notFound, `Cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

const summary = (r: ImportResult) =>
  [
    `Imported ${plural(r.expenses, "expense")} and ${plural(r.payments, "payment")} into group ${r.group_id} (import ${r.import_id}).`,
    ...(r.skipped.length
      ? [`Skipped ${plural(r.skipped.length, "row")} moving no money, ${r.skipped_total.map((t) => `${t.amount} ${t.currency}`).join(" + ")} in all:`]
      : []),
    ...r.skipped.map((x) => `  line ${x.line}: ${x.reason}`),
    ...(r.placeholders.length ? [`Added ${plural(r.placeholders.length, "placeholder member")} (no account yet); send each their one-time claim link:`] : []),
    ...r.placeholders.map(
      (p) =>
        `  ${p.name} (column "${p.column}", member_id ${p.member_id}): <server>${p.claim_path}, or join_group with ${p.claim_code} (until ${p.claim_expires_at})`,
    ),
  ].join("\n");

export function importCommand(): Command {
  const cmd = new Command("import").description("Import data from other apps into svc").addHelpText("after", EXIT_CODES_SEE);
  cmd.addCommand(
    withDbOptions(new Command("splitwise"))
      .description(
        'Import a Splitwise CSV export (Date,Description,Category,Cost,Currency, then one column per person with their net) into a group: expenses with their payers and shares, and "Payment" rows as confirmed payments. Rows in another currency than the group\'s need its rate (--rate) and keep their amounts as given. The "Total balance" rows at the end are not imported: each person\'s total must equal what the imported rows give them. The whole file is checked first: if any row does not sum to zero, a total disagrees, a name is not mapped, a handle is not a member or a currency has no rate, nothing is imported and every problem is listed. Rows moving no money are skipped and reported. A file already imported into the group is refused.',
      )
      .argument("<file>", "the CSV file Splitwise exported for the group")
      .addOption(new Option("--group <group_id>", "the svc group to import into (get_group or list_groups shows its id)").makeOptionMandatory())
      .addOption(
        new Option(
          "--map <names>",
          'each Splitwise name to an svc handle, or to "+Name" for a new placeholder member (a friend with no account yet): "Alice Smith=alice,Dana=+Dana", or JSON for names with commas: \'{"Chen, Li":"chen"}\'',
        )
          .makeOptionMandatory()
          .argParser(flag(parseNameMap)),
      )
      .addOption(
        new Option(
          "--rate <CUR=RATE>",
          "the rate of a currency other than the group's, in units of the group's currency per unit (as exchange_rate in add_expense); repeat for each currency",
        )
          .argParser(flag(parseRate))
          .default(new Map(), "none"),
      )
      .addOption(new Option("--json", "print JSON"))
      .addHelpText(
        "after",
        example(
          'svc import splitwise trip.csv --group 5f0c...e1 --map "Alice=alice,Bob Jones=bob,Dana=+Dana"',
          'svc import splitwise trip.csv --group 5f0c...e1 --map \'{"Chen, Li":"chen","Zoë":"zoe"}\' --rate GBP=1.17 --rate USD=0.92',
        ),
      )
      .action(
        action(async (file: string, o) => {
          const text = readFile(file);
          const { importSplitwise } = await import("../../server/domain/ledger/exchange/splitwise-import.ts");
          const result = await withAdminDb(o, (db) =>
            db
              .tx((tx) => importSplitwise(tx, systemClock.now(), { groupId: o.group, text, names: o.map, rates: o.rate }))
              .catch((err: unknown) => {
                const problems = err instanceof AppError ? (err.details?.problems as ImportProblem[] | undefined) : undefined;
                if (!problems) throw err;
                const e = err as AppError;
                throw new CliError(
                  exitCodeFor(e.code),
                  e.message,
                  "Fix the file or --map and run the same command again; nothing was imported.",
                  problems.map((p) => `  ${problemText(p)}`),
                );
              }),
          );
          emit(result, Boolean(o.json), summary);
        }),
      ),
  );
  return usageExits(cmd);
}
