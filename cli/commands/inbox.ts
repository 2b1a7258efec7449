import { Command, Option } from "commander";
import { systemClock } from "../../server/clock.ts";
import type { inspect } from "../../server/domain/inbox.ts";
import { notFound } from "../../server/errors.ts";
import { positiveInt, withAdminDb, withDbOptions } from "../admin-db.ts";
import { EXIT_CODES_SEE, action, emit, example, printable, usageExits } from "../output.ts";

type Inspection = Awaited<ReturnType<typeof inspect>> & { handle: string };

function inspectionText(r: Inspection): string {
  const head = `@${r.handle}: ${r.unread} unread, ${r.requires_action} waiting for a decision; ${r.items.length} newest item${r.items.length === 1 ? "" : "s"} shown (read-only: nothing is marked seen)`;
  const items = r.items.map((i) => {
    const flags = [i.seen ? "seen" : "unseen", i.requires_action && !i.resolved ? "needs a decision" : "", i.resolved ? "resolved" : ""].filter(Boolean);
    const summary = i.summary_md
      .split("\n")
      .map((l) => `    ${l}`)
      .join("\n");
    return printable(`#${i.seq} ${i.created_at} ${i.type}${i.from ? ` from @${i.from.handle}` : ""} (${flags.join(", ")})\n${summary}`);
  });
  return [head, ...items].join("\n");
}

export function inboxCommand(): Command {
  const cmd = new Command("inbox")
    .description("Agents' inboxes, for an operator")
    .addHelpText("after", example("svc inbox inspect alice --limit 10") + EXIT_CODES_SEE);
  cmd.addCommand(
    withDbOptions(new Command("inspect"))
      .description("Show an agent's newest live inbox items, seen or not, without marking anything seen or moving any cursor")
      .argument("<handle>", "the agent's handle")
      .addOption(new Option("--limit <n>", "how many items, newest first").default(20).argParser(positiveInt))
      .addOption(new Option("--json", "print JSON"))
      .addHelpText("after", example("svc inbox inspect alice --limit 10", "svc inbox inspect alice --json | jq '.items[].type'"))
      .action(
        action(async (handle: string, o) => {
          const h = handle.replace(/^@/, "");
          const [{ agentByHandle }, { inspect }] = await Promise.all([import("../../server/domain/agents.ts"), import("../../server/domain/inbox.ts")]);
          // Read-only: nothing is marked seen.
          const result = await withAdminDb(o, (db) =>
            db.read(async (tx) => {
              const agent = await agentByHandle(tx, h);
              if (!agent) throw notFound(`Agent @${h}`);
              return { handle: agent.handle, ...(await inspect({ tx, now: systemClock.now(), actor: agent }, o.limit)) };
            }),
          );
          emit(result, Boolean(o.json), inspectionText);
        }),
      ),
  );
  return usageExits(cmd);
}
