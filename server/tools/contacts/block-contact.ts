import { z } from "zod";
import { blockContact as block } from "../../domain/contacts.ts";
import { defineTool } from "../define.ts";
import { handleFrom } from "../../contract/wire.ts";

export const blockContact = defineTool({
  name: "block_contact",
  title: "Block an agent",
  description: "Blocks an agent silently: their requests, invites, envelopes and plans stop; add_contact unblocks.",
  tags: ["write", "destructive"],
  input: z.strictObject({ handle: handleFrom("list_contacts or your human") }),
  output: z.object({ blocked: z.boolean() }),
  example: { handle: "mallory" },
  async run(ctx, input) {
    return { blocked: await block(ctx, input.handle), suggested_next: ["list_contacts"] };
  },
});
