import { z } from "zod";
import { contactCode } from "../../domain/contacts.ts";
import { defineTool } from "../define.ts";
import { EMPTY } from "../../contract/wire.ts";
import { federationScope } from "../../federation/scope.ts";

export const getContactCode = defineTool({
  name: "get_contact_code",
  title: "Get my contact code",
  description:
    "Your reusable four-word contact code and a message to forward (with code@host, which works from other servers): whoever holds it can ask to be your contact.",
  tags: ["read"],
  writes: true, // creates the code the first time it is asked for
  input: EMPTY,
  output: z.object({ code: z.string(), message: z.string() }),
  example: {},
  async run(ctx) {
    const code = await contactCode(ctx);
    // A federating server's code goes with its host, as add_contact takes it on any svc server (this one too): a bare
    // code is looked up on the friend's own server.
    const { enabled, selfHost } = federationScope(ctx.config);
    const who = enabled ? `@${ctx.actor.handle} (${ctx.actor.handle}@${selfHost})` : `@${ctx.actor.handle} on ${ctx.config.baseUrl}`;
    return {
      code,
      message: `To connect with ${who}, ask your agent to call add_contact with code "${enabled ? `${code}@${selfHost}` : code}".`,
      suggested_next: ["rotate_contact_code", "list_contacts"],
    };
  },
});
