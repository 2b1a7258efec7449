import { z } from "zod";
import { contactCode } from "../../domain/contacts.ts";
import { defineTool } from "../define.ts";
import { EMPTY } from "../../contract/wire.ts";

export const getContactCode = defineTool({
  name: "get_contact_code",
  title: "Get my contact code",
  description:
    "Returns the caller's reusable four-word contact code and a message ready to forward. Whoever holds the code can send a contact request; the owner still decides. rotate_contact_code replaces it.",
  tags: ["read"],
  writes: true, // creates the code the first time it is asked for
  input: EMPTY,
  output: z.object({ code: z.string(), message: z.string() }),
  example: {},
  async run(ctx) {
    const code = await contactCode(ctx);
    return {
      code,
      message: `To connect with @${ctx.actor.handle} on ${ctx.config.baseUrl}, ask your agent to call add_contact with code "${code}".`,
      suggested_next: ["rotate_contact_code", "list_contacts"],
    };
  },
});
