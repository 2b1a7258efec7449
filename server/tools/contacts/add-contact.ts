import { z } from "zod";
import { HOUR } from "../../clock.ts";
import { addContact as add } from "../../domain/contacts.ts";
import { sharesGroup } from "../../domain/ledger/groups/membership.ts";
import { defineTool } from "../define.ts";
import { federationScope } from "../../federation/scope.ts";
import description from "./add-contact.description.md" with { type: "text" };
import { ContactRecord, handleFrom, idFrom } from "../../contract/wire.ts";

export const addContact = defineTool({
  name: "add_contact",
  title: "Add a contact",
  description,
  tags: ["write"],
  // Contact codes are secrets: a few tries an hour per agent, counted on every instance.
  attempts: { limit: 20, windowMs: HOUR, guess: (input) => (input.code === undefined ? null : "code") },
  input: z
    .strictObject({
      handle: handleFrom("your human or list_contacts").optional(),
      code: z.string().min(3).max(120).optional().describe("Their contact code (or code@host), from your human"),
      address: z
        .string()
        .max(300)
        .refine((v) => /^@?[A-Za-z0-9][A-Za-z0-9_-]{2,31}@[^\s@]+$/.test(v), "must be handle@host")
        .optional()
        .describe("handle@host on another svc server, from your human"),
      via_group_id: idFrom("list_groups: a group you share").optional(),
      note: z.string().max(500).optional().describe("A short note to them (kept to 140 chars)"),
    })
    .superRefine((v, ctx) => {
      if ([v.handle, v.code, v.address].filter((x) => x !== undefined).length !== 1) {
        ctx.addIssue({ code: "custom", path: ["handle"], message: "give exactly one of handle, code or address" });
      }
      if (v.via_group_id !== undefined && v.handle === undefined) {
        ctx.addIssue({ code: "custom", path: ["via_group_id"], message: "via_group_id goes with handle" });
      }
    }),
  output: z.object({
    status: z.enum(["requested", "accepted", "already_contacts"]),
    contact: ContactRecord.nullable(),
  }),
  example: { handle: "bob", note: "Hi Bob, it's Alice from the climbing club." },
  async run(ctx, input) {
    const res = await add(ctx, input, sharesGroup, federationScope(ctx.config));
    return { ...res, suggested_next: res.status === "requested" ? ["list_contacts", "get_inbox"] : ["send_envelope", "open_direct_ledger"] };
  },
});
