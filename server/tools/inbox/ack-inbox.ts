import { z } from "zod";
import { ack } from "../../domain/inbox.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Uuid } from "../../contract/wire.ts";

export const ackInbox = defineTool({
  name: "ack_inbox",
  title: "Mark inbox items",
  description: "Marks inbox items seen, resolved, dismissed or kept; acting with an item's suggested tool resolves it already.",
  tags: ["write"],
  input: z.strictObject({
    item_ids: z.array(Uuid).min(1).max(100).describe("Item ids, from get_inbox"),
    action: z.enum(["seen", "resolved", "dismiss", "keep"]).describe("What to mark them"),
  }),
  output: z.object({ updated: z.number().int() }),
  example: { item_ids: [madeUp("item_id")], action: "seen" },
  async run(ctx, input) {
    return { updated: await ack(ctx, input.item_ids, input.action), suggested_next: ["get_inbox"] };
  },
});
