import { Command, Option } from "commander";
import { systemClock } from "../../server/clock.ts";
import { notFound } from "../../server/errors.ts";
import { auditAdmin, withAdminDb, withDbOptions } from "../admin-db.ts";
import { EXIT_CODES_SEE, action, emit, example, table, usageExits } from "../output.ts";

export function keysCommand(): Command {
  const cmd = new Command("keys")
    .description("API keys and clients of agents, for an operator")
    .addHelpText("after", example("svc keys list --handle alice", "svc keys revoke --handle alice") + EXIT_CODES_SEE);
  cmd.addCommand(
    withDbOptions(new Command("list"))
      .description("List an agent's connected clients (API keys, OAuth apps, browsers): id, kind, name, made, last used")
      .addOption(new Option("--handle <handle>", "the agent").makeOptionMandatory())
      .addOption(new Option("--json", "print JSON"))
      .addHelpText("after", example("svc keys list --handle alice", "svc keys list --handle alice --json"))
      .action(
        action(async (o) => {
          const handle = String(o.handle).replace(/^@/, "").toLowerCase();
          const [{ agentByHandle }, { listClients }] = await Promise.all([import("../../server/domain/agents.ts"), import("../../server/auth/credentials.ts")]);
          const { clients } = await withAdminDb(o, (db) =>
            db.read(async (tx) => {
              const agent = await agentByHandle(tx, handle);
              if (!agent) throw notFound(`Agent @${handle}`);
              return listClients({ tx, now: systemClock.now(), actor: { agentId: agent.agentId, handle } });
            }),
          );
          emit({ handle, clients }, Boolean(o.json), () =>
            clients.length
              ? table([
                  ["CLIENT", "KIND", "NAME", "MADE", "LAST USED"],
                  ...clients.map((c) => [c.client_id, c.kind, c.name, c.created_at.slice(0, 10), c.last_used_at?.slice(0, 16).replace("T", " ") ?? "never"]),
                ])
              : `@${handle} has no connected clients.`,
          );
        }),
      ),
  );
  cmd.addCommand(
    withDbOptions(new Command("revoke"))
      .description("Revoke an agent's clients at once (all of them, or one with --client): their API keys stop working immediately")
      .addOption(new Option("--handle <handle>", "the agent whose keys leaked").makeOptionMandatory())
      .addOption(new Option("--client <id>", "revoke only this client (a client_id as list_clients shows it)"))
      .addOption(new Option("--json", "print JSON"))
      .addHelpText(
        "after",
        example("svc keys revoke --handle alice", "svc keys revoke --handle alice --client 0b7c...") +
          "\nThe agent keeps its handle; it can get a new key through join_network, or by its human on the account page.\n",
      )
      .action(
        action(async (o) => {
          const handle = String(o.handle).replace(/^@/, "");
          const [{ agentByHandle }, { revokeAgentClients }] = await Promise.all([
            import("../../server/domain/agents.ts"),
            import("../../server/auth/credentials.ts"),
          ]);
          const revoked = await withAdminDb(o, (db) =>
            db.tx(async (tx) => {
              const agent = await agentByHandle(tx, handle);
              if (!agent) throw notFound(`Agent @${handle}`);
              return revokeAgentClients(tx, agent.agentId, o.client, systemClock.now());
            }),
          );
          for (const c of revoked) auditAdmin({ event: "client_disconnected", handle, client_id: c.client_id });
          emit({ handle, revoked }, Boolean(o.json), () =>
            revoked.length
              ? `Revoked ${revoked.length} client${revoked.length === 1 ? "" : "s"} of @${handle}:\n${table(revoked.map((c) => [c.client_id, c.kind, c.name])).replace(/^/gm, "  ")}`
              : `@${handle} has no active clients; nothing to revoke.`,
          );
        }),
      ),
  );
  return usageExits(cmd);
}
