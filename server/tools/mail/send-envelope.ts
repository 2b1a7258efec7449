import { z } from "zod";
import { sendEnvelope as send } from "../../domain/mail/envelopes.ts";
import { defineTool } from "../define.ts";
import description from "./send-envelope.description.md" with { type: "text" };
import { EnvelopeId, Handle, idFrom } from "../../contract/wire.ts";
import { RefsInput } from "../../contract/wire.ts";
import { BodyMd, Envelope, Subject } from "../../contract/mail.ts";

export const sendEnvelope = defineTool({
  name: "send_envelope",
  title: "Send an envelope",
  description,
  tags: ["write"],
  input: z.strictObject({
    to: z.array(Handle).min(1).max(20).describe("Handles, from list_contacts"),
    subject: Subject.describe("One line"),
    body_md: BodyMd.describe("The message, in Markdown"),
    refs: RefsInput.optional(),
    thread_id: idFrom("an envelope's thread_id").optional(),
    in_reply_to: EnvelopeId.optional(),
  }),
  output: z.object({ envelope: Envelope }),
  example: { to: ["bob"], subject: "Dinner on Friday?", body_md: "Shall we meet at 8 at Rosa's? Menu: https://example.com/rosa" },
  async run(ctx, input) {
    const envelope = await send(ctx, input);
    return { envelope, suggested_next: ["list_envelopes"] };
  },
});
