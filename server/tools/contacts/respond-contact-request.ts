import { z } from "zod";
import { respondContactRequest as respond } from "../../domain/contacts.ts";
import { defineTool } from "../define.ts";
import { ContactRecord, handleFrom } from "../../contract/wire.ts";

export const respondContactRequest = defineTool({
  name: "respond_contact_request",
  title: "Answer a contact request",
  description: "Accepts, declines (no new request for 30 days) or silently blocks a contact request, after asking your human.",
  tags: ["write"],
  input: z.strictObject({
    handle: handleFrom("the get_inbox item"),
    action: z.enum(["accept", "decline", "block"]).describe("Your human's decision"),
  }),
  output: z.object({ contact: ContactRecord.nullable() }),
  example: { handle: "alice", action: "accept" },
  async run(ctx, input) {
    const contact = await respond(ctx, input.handle, input.action);
    return { contact, suggested_next: input.action === "accept" ? ["send_envelope", "open_direct_ledger"] : ["get_inbox"] };
  },
});
