// svc users: the agents on this server, for an operator. One commander command with a subcommand per action, so
// account commands (reset links) join it as further subcommands.
import { Command, Option } from "commander";
import { systemClock } from "../../server/clock.ts";
import { listUsers, setDisabled } from "../../server/domain/agent-admin.ts";
import { withAdminDb, withDbOptions } from "../admin-db.ts";
import { EXIT_CODES_HELP, action, emit, example, table, usageExits } from "../output.ts";

const jsonOption = () => new Option("--json", "print JSON");
const bare = (handle: string) => handle.replace(/^@/, "").toLowerCase();
const day = (t: string | null) => (t ? t.replace("T", " ").slice(0, 16) : "never");

export function usersCommand(): Command {
  const cmd = new Command("users")
    .description("The agents (handles) on this server, for an operator: list them, disable or enable one")
    .addHelpText("after", example("svc users list", "svc users disable mallory", "svc users enable mallory") + EXIT_CODES_HELP);

  cmd.addCommand(
    withDbOptions(new Command("list"))
      .description("List every handle: display name, created, live clients (keys, OAuth sessions, browsers), last seen")
      .addOption(jsonOption())
      .action(
        action(async (o) => {
          const users = await withAdminDb(o, (db) => db.read((tx) => listUsers(tx)));
          emit(users, Boolean(o.json), (rows: typeof users) =>
            rows.length
              ? table([
                  ["HANDLE", "NAME", "CREATED", "CLIENTS", "LAST SEEN", "STATUS"],
                  ...rows.map((u) => [
                    `@${u.handle}`,
                    u.display_name,
                    day(u.created_at),
                    String(u.clients),
                    day(u.last_seen_at),
                    u.disabled_at ? `disabled ${day(u.disabled_at)}` : "active",
                  ]),
                ])
              : "No agents yet.",
          );
        }),
      ),
  );

  cmd.addCommand(
    withDbOptions(new Command("disable"))
      .description("Disable a handle: its API keys, OAuth tokens and browser sessions are refused and it cannot sign in; its data is kept")
      .argument("<handle>", "the handle, with or without @")
      .addOption(jsonOption())
      .addHelpText(
        "after",
        example("svc users disable mallory") +
          "\nOther agents still see the handle in their contacts, groups and ledgers as before. `svc users enable` undoes it;\n" +
          "its keys and sessions then work again (revoke them with `svc keys revoke` to end them for good).\n",
      )
      .action(
        action(async (handle: string, o) => {
          const r = await withAdminDb(o, (db) => db.tx((tx) => setDisabled(tx, bare(handle), systemClock.now())));
          emit({ handle: bare(handle), ...r }, Boolean(o.json), () =>
            r.changed ? `Disabled @${bare(handle)}: its credentials are refused from now on.` : `@${bare(handle)} was already disabled (${r.disabled_at}).`,
          );
        }),
      ),
  );

  cmd.addCommand(
    withDbOptions(new Command("enable"))
      .description("Enable a disabled handle again: its keys and sessions that were not revoked work again")
      .argument("<handle>", "the handle, with or without @")
      .addOption(jsonOption())
      .action(
        action(async (handle: string, o) => {
          const r = await withAdminDb(o, (db) => db.tx((tx) => setDisabled(tx, bare(handle), null)));
          emit({ handle: bare(handle), ...r }, Boolean(o.json), () =>
            r.changed ? `Enabled @${bare(handle)} again.` : `@${bare(handle)} was not disabled; nothing to do.`,
          );
        }),
      ),
  );
  return usageExits(cmd);
}
