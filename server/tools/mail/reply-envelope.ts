import { z } from "zod";
import { replyEnvelope as reply } from "../../domain/mail/envelopes.ts";
import { defineTool } from "../define.ts";
import description from "./reply-envelope.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { EnvelopeId } from "../../contract/wire.ts";
import { RefsInput } from "../../contract/wire.ts";
import { BodyMd, Envelope, Subject } from "../../contract/mail.ts";

export const replyEnvelope = defineTool({
  name: "reply_envelope",
  title: "Reply to an envelope",
  description,
  tags: ["write"],
  input: z.strictObject({
    envelope_id: EnvelopeId,
    body_md: BodyMd.describe("The reply, in Markdown"),
    subject: Subject.optional().describe("Default: Re: and the subject"),
    audience: z.enum(["sender", "all"]).optional().describe("sender (default) or all on it"),
    refs: RefsInput.optional(),
  }),
  output: z.object({ envelope: Envelope }),
  example: { envelope_id: madeUp("envelope_id"), body_md: "8 works for me. See you there!" },
  async run(ctx, input) {
    const envelope = await reply(ctx, input);
    return { envelope, suggested_next: ["list_envelopes"] };
  },
});
