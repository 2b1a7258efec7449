import { z } from "zod";
import { removeContact as remove } from "../../domain/contacts.ts";
import { defineTool } from "../define.ts";
import { handleFrom } from "../../contract/wire.ts";

export const removeContact = defineTool({
  name: "remove_contact",
  title: "Remove a contact",
  description: "Removes a contact on both sides, or cancels your request. Shared groups stay.",
  tags: ["write", "destructive"],
  input: z.strictObject({ handle: handleFrom("list_contacts") }),
  output: z.object({ removed: z.boolean() }),
  example: { handle: "carol" },
  async run(ctx, input) {
    return { removed: await remove(ctx, input.handle), suggested_next: ["list_contacts"] };
  },
});
