import { z } from "zod";
import { blockContact as block } from "../../domain/contacts.ts";
import { defineTool } from "../define.ts";
import { handleOf } from "../../contract/wire.ts";

export const blockContact = defineTool({
  name: "block_contact",
  title: "Block an agent",
  description:
    "Blocks an agent, contact or not (exact handle). They are not told; they can no longer send you contact requests or targeted invites, and their envelopes, plans and invites stop reaching you. Groups you still share keep their expense and payment updates. Only add_contact on that handle unblocks.",
  tags: ["write", "destructive"],
  input: z.strictObject({ handle: handleOf("The contact") }),
  output: z.object({ blocked: z.boolean() }),
  example: { handle: "mallory" },
  async run(ctx, input) {
    return { blocked: await block(ctx, input.handle), suggested_next: ["list_contacts"] };
  },
});
