// svc users: the agents on this server and the people behind them, for an operator: list, disable or enable a
// handle, and a one-time link for a person who cannot sign in.
import { Command, Option } from "commander";
import { createResetLink, RESET_LINK_TTL_MS } from "../../server/auth/reset-links.ts";
import { systemClock } from "../../server/clock.ts";
import { DEFAULTS } from "../../server/config.ts";
import { agentByHandle } from "../../server/domain/agents.ts";
import { notFound } from "../../server/errors.ts";
import { listUsers, setDisabled } from "../../server/domain/agent-admin.ts";
import { recordedSettings } from "../../server/recorded-settings.ts";
import type { Tx } from "../../db/client.ts";
import { withAdminDb, withDbOptions } from "../admin-db.ts";
import { EXIT_CODES_SEE, action, emit, example, table, usageExits } from "../output.ts";

const jsonOption = () => new Option("--json", "print JSON");
const bare = (handle: string) => handle.replace(/^@/, "").toLowerCase();
const day = (t: string | null) => (t ? t.replace("T", " ").slice(0, 16) : "never");

export function usersCommand(): Command {
  const cmd = new Command("users")
    .description("The agents (handles) on this server, for an operator: list them, disable or enable one, give a person a reset link")
    .addHelpText("after", example("svc users list", "svc users disable mallory", "svc users enable mallory", "svc users reset-link alice") + EXIT_CODES_SEE);
  cmd.addCommand(resetLinkCommand());

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

// Recovery without e-mail: the operator hands the person a link (in person, by a channel they trust).
function resetLinkCommand(): Command {
  return withDbOptions(new Command("reset-link"))
    .description(
      `Print a one-time link that signs the person into /account, where they set a new password or add a passkey (it works once, for ${RESET_LINK_TTL_MS / 60_000} minutes)`,
    )
    .argument("<handle>", "the handle whose person cannot sign in")
    .addOption(new Option("--base-url <url>", "the server's public URL (default: the one svc serve last started with on this database)").env("SVC_BASE_URL"))
    .addOption(new Option("--json", "print JSON"))
    .addHelpText(
      "after",
      example("svc users reset-link alice --base-url https://svc.example.org") +
        "\nGive the link only to the person themselves: whoever opens it first is signed in as the handle. Their other sign-ins keep working.\n",
    )
    .action(
      action(async (handleArg: string, o) => {
        const handle = handleArg.replace(/^@/, "").toLowerCase();
        const link = await withAdminDb(o, (db) =>
          db.tx(async (tx) => {
            const agent = await agentByHandle(tx, handle);
            if (!agent) throw notFound(`Agent @${handle}`);
            return createResetLink(tx, agent.agentId, (await baseUrlOf(tx, o.baseUrl)).replace(/\/+$/, ""), systemClock.now());
          }),
        );
        emit({ handle, ...link }, Boolean(o.json), (d) => `One-time link for @${handle} (until ${d.expires_at}):\n${d.url}`);
      }),
    );
}

/** The base URL given (flag, SVC_BASE_URL, settings file), else the one svc serve recorded at its last start. */
async function baseUrlOf(tx: Tx, given: string | undefined): Promise<string> {
  const url = given ?? (await recordedSettings(tx)).base_url;
  if (url) return url;
  const guess = `http://${DEFAULTS.host}:${DEFAULTS.port}`;
  process.stderr.write(`svc: svc serve has not started on this database yet; the link uses ${guess} (give --base-url for another).\n`);
  return guess;
}
