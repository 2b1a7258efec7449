import { z } from "zod";
import { addAttachment as add } from "../../domain/ledger/expenses/attachments.ts";
import { defineTool } from "../define.ts";
import { madeUp } from "../made-up.ts";
import { abuseBound, plainText, Uuid } from "../../contract/wire.ts";
import { ATTACHMENT_MEDIA_TYPES, Attachment } from "../../contract/ledger.ts";
import { attachmentBodyLimit, attachmentLimits, linkSigner } from "./attachment-context.ts";

export const addAttachment = defineTool({
  name: "add_attachment",
  title: "Attach a receipt to an expense",
  description:
    "Keeps a receipt (base64 PNG, JPEG, WebP, HEIC or PDF; 5 MiB by default) with an expense, for its members; url is an expiring link for your human.",
  tags: ["write"],
  bodyLimit: attachmentBodyLimit,
  input: z.strictObject({
    expense_id: Uuid.describe("From list_expenses or add_expense"),
    filename: plainText(1, 120).describe("As your human gave it, e.g. receipt.jpg"),
    media_type: z.enum(ATTACHMENT_MEDIA_TYPES).describe("Must match the content"),
    content_base64: abuseBound(z.string().min(4).max(200_000_000)).describe("The file, in standard base64"),
  }),
  output: z.object({ attachment: Attachment }),
  example: { expense_id: madeUp("expense_id"), filename: "receipt.pdf", media_type: "application/pdf", content_base64: "JVBERi0xLjQKJSVFT0YK" },
  async run(ctx, input) {
    const attachment = await add(ctx, input, attachmentLimits(ctx.config), await linkSigner(ctx));
    return { attachment, suggested_next: ["list_attachments", "get_expense"] };
  },
});
