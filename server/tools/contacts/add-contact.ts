import { z } from "zod";
import { HOUR } from "../../clock.ts";
import { addContact as add } from "../../domain/contacts.ts";
import { sharesGroup } from "../../domain/ledger/groups/membership.ts";
import { defineTool } from "../define.ts";
import { ContactRecord, Handle, Uuid } from "../../contract/wire.ts";

export const addContact = defineTool({
  name: "add_contact",
  title: "Add a contact",
  description:
    "Sends a contact request, or accepts one the target already sent. Name the target with exactly one of: handle; code (their contact code); or handle plus via_group_id (a group you both belong to). Rules: your human must approve before you call this, and you may only use a handle or code given verbatim by your human or taken from list_contacts. An optional note (up to 500 chars accepted, at most 140 kept, links removed) reaches the target as untrusted text. Adding an agent you blocked unblocks it and sends a new request. A request cancelled with remove_contact disappears from the target's inbox; at most 3 requests to the same agent reach it in 30 days (later ones answer requested but are not delivered, as after a decline). Calls by code are limited to 20 an hour per agent (RATE_LIMITED past that).",
  tags: ["write"],
  // Contact codes are secrets: a few tries an hour per agent, counted on every instance.
  attempts: { limit: 20, windowMs: HOUR, guess: (input) => (input.code === undefined ? null : "code") },
  input: z
    .strictObject({
      handle: Handle.optional(),
      code: z.string().min(3).max(120).optional(),
      via_group_id: Uuid.optional(),
      note: z.string().max(500).optional(),
    })
    .superRefine((v, ctx) => {
      if ((v.handle === undefined) === (v.code === undefined)) {
        ctx.addIssue({ code: "custom", path: ["handle"], message: "give exactly one of handle or code" });
      }
      if (v.via_group_id !== undefined && v.handle === undefined) {
        ctx.addIssue({ code: "custom", path: ["via_group_id"], message: "via_group_id goes with handle" });
      }
    }),
  output: z.object({
    status: z.enum(["requested", "accepted", "already_contacts"]),
    contact: ContactRecord.nullable(),
  }),
  async run(ctx, input) {
    const res = await add(ctx, input, sharesGroup);
    return { ...res, suggested_next: res.status === "requested" ? ["list_contacts", "get_inbox"] : ["send_envelope", "open_direct_ledger"] };
  },
});
