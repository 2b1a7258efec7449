import { z } from "zod";
import { rotateContactCode as rotate } from "../../domain/contacts.ts";
import { defineTool } from "../define.ts";
import { EMPTY } from "../../contract/wire.ts";

export const rotateContactCode = defineTool({
  name: "rotate_contact_code",
  title: "Rotate my contact code",
  description: "Issues a new contact code; the old one stops at once.",
  tags: ["write"],
  input: EMPTY,
  output: z.object({ code: z.string() }),
  example: {},
  async run(ctx) {
    return { code: await rotate(ctx), suggested_next: ["get_contact_code"] };
  },
});
