import { z } from "zod";
import { deleteAttachment as remove } from "../../domain/ledger/expenses/attachments.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Uuid } from "../../contract/wire.ts";

export const deleteAttachment = defineTool({
  name: "delete_attachment",
  title: "Delete a receipt",
  description: "Deletes a file of an expense for good; only who added it or the expense may.",
  tags: ["write", "destructive"],
  input: z.strictObject({ attachment_id: Uuid.describe("From list_attachments or get_expense") }),
  output: z.object({ deleted: z.boolean() }),
  example: { attachment_id: madeUp("attachment_id") },
  async run(ctx, input) {
    return { deleted: await remove(ctx, input.attachment_id), suggested_next: ["list_attachments"] };
  },
});
