// What the attachment tools share: the limits from the settings and the signer of the links they answer with.
import { attachmentLinkSigner } from "../../auth/attachment-links.ts";
import { DEFAULTS, type ServerConfig } from "../../config.ts";
import type { AttachmentLimits } from "../../domain/ledger/expenses/attachments.ts";
import type { AuthedContext } from "../define.ts";

export const attachmentLimits = (config: ServerConfig): AttachmentLimits => ({
  fileBytes: config.attachmentMaxBytes ?? DEFAULTS.attachmentMaxBytes,
  groupBytes: config.groupAttachmentBytes ?? DEFAULTS.groupAttachmentBytes,
});

/** A body that carries the largest file as base64 (4 characters per 3 bytes) and the call's other fields. */
export const attachmentBodyLimit = (config: ServerConfig) => Math.ceil((attachmentLimits(config).fileBytes * 4) / 3) + 64 * 1024;

export const linkSigner = (ctx: AuthedContext) => attachmentLinkSigner(ctx.tx, ctx.config.baseUrl, ctx.now);
