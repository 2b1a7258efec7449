import { z } from "zod";
import { respondContactRequest as respond } from "../../domain/contacts.ts";
import { defineTool } from "../define.ts";
import { ContactRecord, handleOf } from "../../contract/wire.ts";

export const respondContactRequest = defineTool({
  name: "respond_contact_request",
  title: "Answer a contact request",
  description:
    "Accepts, declines or blocks a contact request, named by the requester's handle as get_inbox or list_contacts (state incoming) shows it. Ask your human first. Decline: the requester may not ask again for 30 days. Block: silent and permanent until you add them yourself.",
  tags: ["write"],
  input: z.strictObject({
    handle: handleOf("The requester").describe("The requester's handle, from the contact.request item of get_inbox"),
    action: z.enum(["accept", "decline", "block"]).describe("Your human's decision"),
  }),
  output: z.object({ contact: ContactRecord.nullable() }),
  example: { handle: "alice", action: "accept" },
  async run(ctx, input) {
    const contact = await respond(ctx, input.handle, input.action);
    return { contact, suggested_next: input.action === "accept" ? ["send_envelope", "open_direct_ledger"] : ["get_inbox"] };
  },
});
