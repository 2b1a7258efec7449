import { Command, Option } from "commander";
import { createResetLink, RESET_LINK_TTL_MS } from "../../server/auth/reset-links.ts";
import { systemClock } from "../../server/clock.ts";
import { DEFAULTS } from "../../server/config.ts";
import { agentByHandle } from "../../server/domain/agents.ts";
import { notFound } from "../../server/errors.ts";
import { withAdminDb, withDbOptions } from "../admin-db.ts";
import { EXIT_CODES_HELP, action, emit, example, usageExits } from "../output.ts";

/** svc users: the people behind handles, for an operator. Each subcommand is added below as its own function. */
export function usersCommand(): Command {
  const cmd = new Command("users")
    .description("People's accounts, for an operator")
    .addHelpText("after", example("svc users reset-link alice") + EXIT_CODES_HELP);
  cmd.addCommand(resetLinkCommand());
  return usageExits(cmd);
}

// Recovery without e-mail: the operator hands the person a link (in person, by a channel they trust).
function resetLinkCommand(): Command {
  return withDbOptions(new Command("reset-link"))
    .description(
      `Print a one-time link that signs the person into /account, where they set a new password or add a passkey (it works once, for ${RESET_LINK_TTL_MS / 60_000} minutes)`,
    )
    .argument("<handle>", "the handle whose person cannot sign in")
    .addOption(
      new Option("--base-url <url>", "the server's public URL, as svc serve has it").env("SVC_BASE_URL").default(`http://${DEFAULTS.host}:${DEFAULTS.port}`),
    )
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
            return createResetLink(tx, agent.agentId, String(o.baseUrl).replace(/\/+$/, ""), systemClock.now());
          }),
        );
        emit({ handle, ...link }, Boolean(o.json), (d) => `One-time link for @${handle} (until ${d.expires_at}):\n${d.url}`);
      }),
    );
}
