import { Command, InvalidArgumentError, Option } from "commander";
import { readFileSync } from "node:fs";
import { systemClock } from "../../server/clock.ts";
import { importSplitwise, parseNameMap, type ImportResult } from "../../server/domain/ledger/splitwise-import.ts";
import { AppError } from "../../server/errors.ts";
import { withAdminDb, withDbOptions } from "../admin-db.ts";
import { CliError, EXIT, EXIT_CODES_HELP, action, emit, example, exitCodeFor, usageExits } from "../output.ts";

const names = (v: string) => {
  try {
    return parseNameMap(v);
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

const summary = (r: ImportResult) =>
  [
    `Imported ${r.expenses} expense${r.expenses === 1 ? "" : "s"} and ${r.payments} payment${r.payments === 1 ? "" : "s"} into group ${r.group_id} (import ${r.import_id}).`,
    ...r.skipped.map((x) => `skipped line ${x.line}: ${x.reason}`),
  ].join("\n");

export function importCommand(): Command {
  const cmd = new Command("import").description("Import data from other apps into svc").addHelpText("after", EXIT_CODES_HELP);
  cmd.addCommand(
    withDbOptions(new Command("splitwise"))
      .description(
        'Import a Splitwise CSV export (Date,Description,Category,Cost,Currency, then one column per person with their net) into a group: expenses with their payers and shares, and "Payment" rows as confirmed payments. The whole file is checked first: if any row does not sum to zero, a name is not mapped, a handle is not a member or a currency differs from the group\'s, nothing is imported and every problem is listed. A file already imported into the group is refused.',
      )
      .argument("<file>", "the CSV file Splitwise exported for the group")
      .addOption(new Option("--group <group_id>", "the svc group to import into (get_group or list_groups shows its id)").makeOptionMandatory())
      .addOption(new Option("--map <names>", 'each Splitwise name to an svc handle: "Alice Smith=alice,Bob=bob-h"').makeOptionMandatory().argParser(names))
      .addOption(new Option("--json", "print JSON"))
      .addHelpText("after", example('svc import splitwise trip.csv --group 5f0c...e1 --map "Alice=alice,Bob Jones=bob"'))
      .action(
        action(async (file: string, o) => {
          const text = readFile(file);
          const result = await withAdminDb(o, (db) =>
            db
              .tx((tx) => importSplitwise(tx, systemClock.now(), { groupId: o.group, text, names: o.map }))
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
