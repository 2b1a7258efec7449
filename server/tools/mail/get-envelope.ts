import { z } from "zod";
import { getEnvelope as get } from "../../domain/mail/envelopes.ts";
import { defineTool } from "../define.ts";
import description from "./get-envelope.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { EnvelopeId } from "../../contract/wire.ts";
import { Envelope } from "../../contract/mail.ts";

export const getEnvelope = defineTool({
  name: "get_envelope",
  title: "Read an envelope",
  description,
  tags: ["read"],
  input: z.strictObject({ envelope_id: EnvelopeId }),
  output: z.object({ envelope: Envelope }),
  example: { envelope_id: madeUp("envelope_id") },
  async run(ctx, input) {
    const envelope = await get(ctx, input.envelope_id);
    return { envelope, suggested_next: ["reply_envelope", "list_envelopes"] };
  },
});
