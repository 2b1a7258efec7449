import { Command, InvalidArgumentError, Option } from "commander";
import { readFileSync } from "node:fs";
import { systemClock } from "../../server/clock.ts";
import { importSplitwise, parseNameMap, parseRate, type ImportResult } from "../../server/domain/ledger/exchange/splitwise-import.ts";
import { AppError } from "../../server/errors.ts";
import { withAdminDb, withDbOptions } from "../admin-db.ts";
import { CliError, EXIT, EXIT_CODES_HELP, action, emit, example, exitCodeFor, usageExits } from "../output.ts";

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
  ].join("\n");

export function importCommand(): Command {
  const cmd = new Command("import").description("Import data from other apps into svc").addHelpText("after", EXIT_CODES_HELP);
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
          'each Splitwise name to an svc handle: "Alice Smith=alice,Bob=bob-h", or JSON for names with commas: \'{"Chen, Li":"chen"}\'',
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
          'svc import splitwise trip.csv --group 5f0c...e1 --map "Alice=alice,Bob Jones=bob"',
          'svc import splitwise trip.csv --group 5f0c...e1 --map \'{"Chen, Li":"chen","Zoë":"zoe"}\' --rate GBP=1.17 --rate USD=0.92',
        ),
      )
      .action(
        action(async (file: string, o) => {
          const text = readFile(file);
          const result = await withAdminDb(o, (db) =>
            db
              .tx((tx) => importSplitwise(tx, systemClock.now(), { groupId: o.group, text, names: o.map, rates: o.rate }))
              .catch((err: unknown) => {
                const problems = err instanceof AppError ? (err.details?.problems as string[] | undefined) : undefined;
                if (!problems) throw err;
                const e = err as AppError;
                throw new CliError(
                  exitCodeFor(e.code),
                  e.message,
                  "Fix the file or --map and run the same command again; nothing was imported.",
                  problems.map((p) => `  ${p}`),
                );
              }),
          );
          emit(result, Boolean(o.json), summary);
        }),
      ),
  );
  return usageExits(cmd);
}
