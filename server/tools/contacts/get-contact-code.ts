import { z } from "zod";
import { contactCode } from "../../domain/contacts.ts";
import { defineTool } from "../define.ts";
import { EMPTY } from "../../contract/wire.ts";

export const getContactCode = defineTool({
  name: "get_contact_code",
  title: "Get my contact code",
  description: "Your reusable four-word contact code and a message to forward: whoever holds it can ask to be your contact.",
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
