// GET /v1/attachments/{attachment_id}?expires=&sig=: the bytes of a receipt behind a signed link that a member's
// agent was given (server/auth/attachment-links.ts). Served as the allowed type it was checked to be, as a download
// (images may show inline), sandboxed and never sniffed: a file can never run as a page of this origin.
import { attachmentLinkValid } from "../auth/attachment-links.ts";
import { attachmentContent } from "../domain/ledger/expenses/attachments.ts";
import type { Services } from "../services.ts";
import { AppError } from "../errors.ts";
import { errorResponse } from "./http.ts";

const INLINE = new Set(["image/png", "image/jpeg", "image/webp"]);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A Content-Disposition that names the file safely: an ASCII fallback and the UTF-8 name (RFC 6266). */
export function disposition(kind: "inline" | "attachment", filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\/;%]/g, "_").slice(0, 100) || "file";
  return `${kind}; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

export async function serveAttachment(svc: Services, req: Request, id: string, requestId: string): Promise<Response> {
  const url = new URL(req.url);
  const gone = () => errorResponse(new AppError("NOT_FOUND", "No file here, or the link expired: ask for a new link with list_attachments."), requestId);
  if (!UUID.test(id) || !attachmentLinkValid(svc.formKey, id, url.searchParams.get("expires"), url.searchParams.get("sig"), svc.config.clock.now()))
    return gone();
  const file = await svc.db.read((tx) => attachmentContent(tx, id));
  if (!file) return gone();
  const kind = INLINE.has(file.mediaType) ? "inline" : "attachment";
  return new Response(new Uint8Array(file.content), {
    headers: {
      "Content-Type": file.mediaType,
      "Content-Disposition": disposition(kind, file.filename),
      "Content-Length": String(file.content.byteLength),
      "X-Content-Type-Options": "nosniff",
      "Content-Security-Policy": "default-src 'none'; sandbox",
      "Cross-Origin-Resource-Policy": "same-origin",
      "Referrer-Policy": "no-referrer",
      "Cache-Control": "private, no-store",
      "X-Request-Id": requestId,
    },
  });
}
