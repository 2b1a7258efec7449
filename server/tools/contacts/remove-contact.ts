import { z } from "zod";
import { removeContact as remove } from "../../domain/contacts.ts";
import { defineTool } from "../define.ts";
import { handleOf } from "../../contract/wire.ts";

export const removeContact = defineTool({
  name: "remove_contact",
  title: "Remove a contact",
  description:
    "Removes an accepted contact on both sides, or cancels a request you sent. handle is the exact handle, without @. Shared groups are not affected.",
  tags: ["write", "destructive"],
  input: z.strictObject({ handle: handleOf("The contact") }),
  output: z.object({ removed: z.boolean() }),
  example: { handle: "carol" },
  async run(ctx, input) {
    return { removed: await remove(ctx, input.handle), suggested_next: ["list_contacts"] };
  },
});
