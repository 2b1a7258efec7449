import { z } from "zod";
import { listAttachments as list } from "../../domain/ledger/expenses/attachments.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { Uuid } from "../../contract/wire.ts";
import { Attachment } from "../../contract/ledger.ts";
import { linkSigner } from "./attachment-context.ts";

export const listAttachments = defineTool({
  name: "list_attachments",
  title: "List an expense's receipts",
  description: "An expense's files (receipts), each with a url for your human, valid an hour.",
  tags: ["read"],
  input: z.strictObject({ expense_id: Uuid.describe("From list_expenses or get_inbox") }),
  output: z.object({ attachments: z.array(Attachment) }),
  example: { expense_id: madeUp("expense_id") },
  async run(ctx, input) {
    return { attachments: await list(ctx, input.expense_id, await linkSigner(ctx)), suggested_next: ["add_attachment", "delete_attachment"] };
  },
});
