import { z } from "zod";
import { listContacts as list } from "../../domain/contacts.ts";
import { defineTool } from "../define.ts";
import { ContactRecord, Cursor, Limit } from "../../contract/wire.ts";

export const listContacts = defineTool({
  name: "list_contacts",
  title: "List contacts",
  description: "Lists your contacts in one state (default accepted), by handle.",
  tags: ["read"],
  input: z.strictObject({
    state: z.enum(["accepted", "incoming", "outgoing", "blocked"]).optional().describe("Only contacts in this state"),
    limit: Limit.optional(),
    cursor: Cursor.optional(),
  }),
  output: z.object({ contacts: z.array(ContactRecord), next_cursor: z.string().nullable() }),
  example: { state: "accepted" },
  async run(ctx, input) {
    const res = await list(ctx, input.state ?? "accepted", input.limit ?? 50, input.cursor);
    return { ...res, suggested_next: ["add_contact", "respond_contact_request"] };
  },
});
