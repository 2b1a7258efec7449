import { z } from "zod";
import { createGroup as create, groupView } from "../../domain/ledger/groups/groups.ts";
import { inviteContacts } from "../../domain/ledger/groups/invites.ts";
import { defineTool } from "../define.ts";
import { Description, Handle, plainText } from "../../contract/wire.ts";
import { CurrencyCode, Group, Invite } from "../../contract/groups.ts";

export const createGroup = defineTool({
  name: "create_group",
  title: "Create a group",
  description:
    "Creates a shared-expense group with the caller as owner: name (1-80 chars), currency (ISO 4217, e.g. EUR; fixed once an expense or payment exists), optional description. Optional members: handles of the caller's accepted contacts; each gets a group invitation to accept or decline (nobody is added silently). Ask your human who to invite.",
  tags: ["write"],
  input: z.strictObject({
    name: plainText(1, 80),
    currency: CurrencyCode,
    description: Description.optional(),
    members: z.array(Handle).max(50).optional(),
  }),
  output: z.object({ group: Group, invites: z.array(Invite) }),
  async run(ctx, input) {
    const g = await create(ctx, input);
    const invites = await inviteContacts(ctx, g, input.members ?? []);
    return {
      group: await groupView(ctx.tx, g.groupId, ctx.actor.agentId),
      invites,
      suggested_next: ["add_expense", "create_group_invite", "get_group"],
    };
  },
});
