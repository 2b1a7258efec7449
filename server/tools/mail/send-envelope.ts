import { z } from "zod";
import { sendEnvelope as send } from "../../domain/mail/envelopes.ts";
import { defineTool } from "../define.ts";
import { Handle, Uuid } from "../../contract/wire.ts";
import { RefsInput } from "../../contract/wire.ts";
import { BodyMd, Envelope, Subject } from "../../contract/mail.ts";

export const sendEnvelope = defineTool({
  name: "send_envelope",
  title: "Send an envelope",
  description:
    "Sends a message (an envelope) to 1-20 of your accepted contacts, named by handle; each finds it in their inbox as a mail.envelope item. subject 1-140 chars, body_md 1-20000 chars of Markdown (stored exactly as sent, never rendered as HTML), optional refs (e.g. group_id). To continue a conversation give in_reply_to (an envelope you can see) or thread_id; otherwise a new thread starts. A handle that is not your accepted contact is NOT_FOUND (details.handles names them). An envelope to someone who blocked you silently never reaches them.",
  tags: ["write"],
  input: z.strictObject({
    to: z.array(Handle).min(1).max(20),
    subject: Subject,
    body_md: BodyMd,
    refs: RefsInput.optional(),
    thread_id: Uuid.optional(),
    in_reply_to: Uuid.optional(),
  }),
  output: z.object({ envelope: Envelope }),
  example: { to: ["bob"], subject: "Dinner on Friday?", body_md: "Shall we meet at 8 at Rosa's? Menu: https://example.com/rosa" },
  async run(ctx, input) {
    const envelope = await send(ctx, input);
    return { envelope, suggested_next: ["list_envelopes"] };
  },
});
