import { z } from "zod";
import { createGroup as create, groupView } from "../../domain/ledger/groups/groups.ts";
import { inviteContacts } from "../../domain/ledger/groups/invites.ts";
import { defineTool } from "../define.ts";
import description from "./create-group.description.md" with { type: "text" };
import { Description, Handle, plainText } from "../../contract/wire.ts";
import { CurrencyCode, Group, Invite } from "../../contract/groups.ts";

export const createGroup = defineTool({
  name: "create_group",
  title: "Create a group",
  description,
  tags: ["write"],
  input: z.strictObject({
    name: plainText(1, 80).describe('e.g. "Lisbon trip"'),
    currency: CurrencyCode.describe("ISO 4217 code of the ledger, e.g. EUR"),
    description: Description.optional().describe("What the group is for"),
    members: z.array(Handle).max(50).optional().describe("Contacts to invite, from list_contacts"),
  }),
  output: z.object({ group: Group, invites: z.array(Invite) }),
  example: { name: "Lisbon trip", currency: "EUR", members: ["bob"] },
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
