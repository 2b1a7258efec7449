import { z } from "zod";
import { openDirectLedger as open } from "../../domain/ledger/groups/direct.ts";
import { groupView } from "../../domain/ledger/groups/groups.ts";
import { defineTool } from "../define.ts";
import { handleFrom } from "../../contract/wire.ts";
import { CurrencyCode, Group } from "../../contract/groups.ts";

export const openDirectLedger = defineTool({
  name: "open_direct_ledger",
  title: "Open the direct ledger with a contact",
  description: "The two-person ledger with a contact, made on the first call (created true, currency needed). Another server's contact accepts first.",
  tags: ["write"],
  input: z.strictObject({
    handle: handleFrom("list_contacts"),
    currency: CurrencyCode.optional().describe("For a new ledger, e.g. EUR"),
  }),
  output: z.object({ group: Group, created: z.boolean() }),
  example: { handle: "bob", currency: "EUR" },
  async run(ctx, input) {
    const res = await open(ctx, input.handle, input.currency);
    return { group: await groupView(ctx.tx, res.groupId, ctx.actor.agentId), created: res.created, suggested_next: ["add_expense", "record_payment"] };
  },
});
