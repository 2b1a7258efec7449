// Short-lived signed links to an expense's attachment, for a member's agent to hand its human: whoever holds one may
// fetch that file until it expires, nothing else. Signed with a key derived from the server's form key (server_secrets
// web_forms), so no new secret is kept; the domain separation string keeps its signatures apart from the CSRF tokens'.
import { createHmac } from "node:crypto";
import { eq } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { serverSecrets } from "../../db/schema/index.ts";
import { MINUTE } from "../clock.ts";
import { constantTimeEqual } from "./secrets.ts";

export const ATTACHMENT_LINK_TTL_MS = 60 * MINUTE;

const linkKey = (formKey: string) => createHmac("sha256", formKey).update("svc attachment links v1").digest();
const signature = (formKey: string, attachmentId: string, expires: number) =>
  createHmac("sha256", linkKey(formKey)).update(`${attachmentId}.${expires}`).digest("base64url");

/** Makes links to attachments for now; reads the form key once. */
export async function attachmentLinkSigner(tx: Tx, baseUrl: string, now: Date) {
  const row = await tx.select({ secret: serverSecrets.secret }).from(serverSecrets).where(eq(serverSecrets.name, "web_forms")).get();
  if (!row) throw new Error("The server's form key is missing: the database was not prepared by svc serve.");
  const expires = Math.floor((now.getTime() + ATTACHMENT_LINK_TTL_MS) / 1000);
  return (attachmentId: string) => ({
    url: `${baseUrl}/v1/attachments/${attachmentId}?expires=${expires}&sig=${signature(row.secret, attachmentId, expires)}`,
    url_expires_at: new Date(expires * 1000).toISOString(),
  });
}

/** Whether a link's expires and sig are this server's, for this attachment, and not expired. */
export function attachmentLinkValid(formKey: string, attachmentId: string, expires: string | null, sig: string | null, now: Date): boolean {
  if (!expires || !sig || !/^\d{1,12}$/.test(expires)) return false;
  if (Number(expires) * 1000 <= now.getTime()) return false;
  return constantTimeEqual(sig, signature(formKey, attachmentId, Number(expires)));
}
