import { z } from "zod";
import { listEnvelopes as list } from "../../domain/mail/envelopes.ts";
import { defineTool } from "../define.ts";
import { Cursor, Limit, idFrom } from "../../contract/wire.ts";
import { EnvelopeSummary } from "../../contract/mail.ts";

export const listEnvelopes = defineTool({
  name: "list_envelopes",
  title: "List envelopes",
  description: "Envelopes you sent and received, newest first, without bodies (get_envelope).",
  tags: ["read"],
  input: z.strictObject({
    thread_id: idFrom("an envelope's thread_id").optional(),
    direction: z.enum(["sent", "received"]).optional().describe("Only sent or only received"),
    limit: Limit.optional(),
    cursor: Cursor.optional(),
  }),
  output: z.object({ envelopes: z.array(EnvelopeSummary), next_cursor: z.string().nullable() }),
  example: { direction: "received", limit: 10 },
  async run(ctx, input) {
    const res = await list(ctx, input);
    return { ...res, suggested_next: res.envelopes.length ? ["get_envelope", "send_envelope"] : ["send_envelope"] };
  },
});
