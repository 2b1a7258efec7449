// Receipts: files kept with an expense (images and PDF), stored in the database so that a backup keeps them, seen only
// by the group's members. The declared media type must match the file's first bytes: what is served is always one
// of the allowed types, never HTML or script whatever a member sends.
import { and, asc, eq, sql } from "drizzle-orm";
import type { Tx } from "../../../../db/client.ts";
import { expenseAttachments, expenses } from "../../../../db/schema/index.ts";
import { iso } from "../../../clock.ts";
import { conflict, invalid, notFound } from "../../../errors.ts";
import type { DomainContext } from "../../../contract/principal.ts";
import type { AgentRef } from "../../../contract/wire.ts";
import { refsByIds } from "../../agents.ts";
import { requireRoomForAttachment } from "../../quotas.ts";
import { quoted, untrusted } from "../../untrusted.ts";
import { assertWritable, memberGroup } from "../groups/membership.ts";
import { requireHomeHere } from "../events/home.ts";
import { logActivity } from "../groups/activity.ts";
import type { ATTACHMENT_MEDIA_TYPES } from "../../../contract/ledger.ts";

export type AttachmentType = (typeof ATTACHMENT_MEDIA_TYPES)[number];

export interface AttachmentLimits {
  /** Bytes of one file. */
  fileBytes: number;
  /** Bytes of all the files of one group. */
  groupBytes: number;
}

/** Makes the link a member's agent hands its human (server/auth/attachment-links.ts). */
export type LinkSigner = (attachmentId: string) => { url: string; url_expires_at: string };

const HEIF_BRANDS = new Set(["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"]);
const ascii = (b: Uint8Array, from: number, to: number) => String.fromCharCode(...b.subarray(from, to));

/** The type the file's first bytes say it is, among the allowed ones; null for anything else. */
export function sniffType(b: Uint8Array): AttachmentType | null {
  if (b.length >= 8 && [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((x, i) => b[i] === x)) return "image/png";
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "image/jpeg";
  if (b.length >= 12 && ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 12) === "WEBP") return "image/webp";
  if (b.length >= 12 && ascii(b, 4, 8) === "ftyp" && HEIF_BRANDS.has(ascii(b, 8, 12))) return "image/heic";
  if (b.length >= 5 && ascii(b, 0, 5) === "%PDF-") return "application/pdf";
  return null;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export type AttachmentRow = typeof expenseAttachments.$inferSelect;
type Meta = Omit<AttachmentRow, "content">;

/** An attachment as the wire shows it; the file name was written by a member. */
export function attachmentWire(r: Meta, people: Map<string, AgentRef>, sign: LinkSigner) {
  const by = people.get(r.uploadedBy)!;
  return {
    attachment_id: r.attachmentId,
    expense_id: r.expenseId,
    filename: untrusted(r.filename, `file name given by @${by.handle}`),
    media_type: r.mediaType as AttachmentType,
    size_bytes: r.sizeBytes,
    sha256: r.sha256,
    uploaded_by: by,
    created_at: r.createdAt,
    ...sign(r.attachmentId),
  };
}
export type AttachmentWire = ReturnType<typeof attachmentWire>;

const META = {
  attachmentId: expenseAttachments.attachmentId,
  expenseId: expenseAttachments.expenseId,
  groupId: expenseAttachments.groupId,
  filename: expenseAttachments.filename,
  mediaType: expenseAttachments.mediaType,
  sizeBytes: expenseAttachments.sizeBytes,
  sha256: expenseAttachments.sha256,
  uploadedBy: expenseAttachments.uploadedBy,
  createdAt: expenseAttachments.createdAt,
};

/** The expense if the caller is a member of its group (NOT_FOUND otherwise), with its group. */
async function memberExpense(tx: Tx, expenseId: string, agentId: string) {
  const row = await tx.select().from(expenses).where(eq(expenses.expenseId, expenseId)).get();
  const group = row && (await memberGroup(tx, row.groupId, agentId));
  if (!row || !group) throw notFound("Expense");
  return { row, group };
}

/** The attachments' metadata of some expenses of one group, oldest first. */
export async function attachmentsOf(tx: Tx, expenseIds: string[], sign: LinkSigner): Promise<AttachmentWire[]> {
  if (!expenseIds.length) return [];
  const rows = await tx
    .select(META)
    .from(expenseAttachments)
    .where(sql`${expenseAttachments.expenseId} IN (SELECT value FROM json_each(${JSON.stringify(expenseIds)}))`)
    // Added in one instant (one clock tick), they stay in the order they were added.
    .orderBy(asc(expenseAttachments.createdAt), sql`expense_attachments.rowid`);
  const people = await refsByIds(
    tx,
    rows.map((r) => r.uploadedBy),
  );
  return rows.map((r) => attachmentWire(r, people, sign));
}

export async function listAttachments({ tx, actor }: DomainContext, expenseId: string, sign: LinkSigner): Promise<AttachmentWire[]> {
  await memberExpense(tx, expenseId, actor.agentId);
  return attachmentsOf(tx, [expenseId], sign);
}

export interface AddAttachmentInput {
  expense_id: string;
  filename: string;
  media_type: AttachmentType;
  content_base64: string;
}

/** add_attachment: checks the content against the declared type and the limits, stores it, logs it in the activity. */
export async function addAttachment(ctx: DomainContext, input: AddAttachmentInput, limits: AttachmentLimits, sign: LinkSigner): Promise<AttachmentWire> {
  const { tx, now, actor } = ctx;
  const { row, group } = await memberExpense(tx, input.expense_id, actor.agentId);
  // Files stay on the server that holds them: a group kept on another server takes none from here.
  await requireHomeHere(tx, group.groupId);
  assertWritable(group);
  if (row.deleted) throw conflict("The expense is deleted; restore it before adding a file to it.");
  const text = input.content_base64.replace(/\s+/g, "");
  if (!BASE64.test(text)) throw invalid("content_base64", "must be the file's bytes in standard base64");
  const bytes = Buffer.from(text, "base64");
  if (!bytes.length) throw invalid("content_base64", "the file is empty");
  if (bytes.length > limits.fileBytes) throw invalid("content_base64", `the file has ${bytes.length} bytes; at most ${limits.fileBytes} are kept`);
  const sniffed = sniffType(bytes);
  if (sniffed !== input.media_type) {
    throw invalid("media_type", sniffed ? `the file's content is ${sniffed}, not ${input.media_type}` : `the file's content is not ${input.media_type}`);
  }
  const used = Number(
    (await tx
      .select({ n: sql<number>`coalesce(sum(${expenseAttachments.sizeBytes}), 0)` })
      .from(expenseAttachments)
      .where(eq(expenseAttachments.groupId, group.groupId))
      .get())!.n,
  );
  if (used + bytes.length > limits.groupBytes) {
    throw conflict(
      `The group's files take ${used} bytes; with this one (${bytes.length}) they would pass the group's ${limits.groupBytes}. Delete one with delete_attachment first.`,
      {
        limit: limits.groupBytes,
        used,
      },
    );
  }
  await requireRoomForAttachment(ctx, bytes.length);
  const meta: Meta = {
    attachmentId: crypto.randomUUID(),
    expenseId: row.expenseId,
    groupId: group.groupId,
    filename: input.filename,
    mediaType: sniffed,
    sizeBytes: bytes.length,
    sha256: new Bun.CryptoHasher("sha256").update(bytes).digest("hex"),
    uploadedBy: actor.agentId,
    createdAt: iso(now),
  };
  await tx.insert(expenseAttachments).values({ ...meta, content: bytes });
  await logActivity(tx, now, {
    groupId: group.groupId,
    actorId: actor.agentId,
    action: "attachment_added",
    summary: `@${actor.handle} added a file (${sniffed}, ${bytes.length} bytes) to ${quoted(row.description)}`,
    refs: { expense_id: row.expenseId, attachment_id: meta.attachmentId },
  });
  return attachmentWire(meta, await refsByIds(tx, [actor.agentId]), sign);
}

/** delete_attachment: by whoever added it or the expense's creator; the bytes leave the database. */
export async function deleteAttachment({ tx, now, actor }: DomainContext, attachmentId: string): Promise<boolean> {
  const a = await tx.select(META).from(expenseAttachments).where(eq(expenseAttachments.attachmentId, attachmentId)).get();
  if (!a) throw notFound("Attachment");
  const { row, group } = await memberExpense(tx, a.expenseId, actor.agentId).catch(() => {
    throw notFound("Attachment");
  });
  await requireHomeHere(tx, group.groupId);
  assertWritable(group);
  if (a.uploadedBy !== actor.agentId && row.createdBy !== actor.agentId) {
    throw conflict("Only who added the file, or who added the expense, can delete it.");
  }
  await tx.delete(expenseAttachments).where(eq(expenseAttachments.attachmentId, attachmentId));
  await logActivity(tx, now, {
    groupId: group.groupId,
    actorId: actor.agentId,
    action: "attachment_deleted",
    summary: `@${actor.handle} deleted a file of ${quoted(row.description)}`,
    refs: { expense_id: row.expenseId, attachment_id: attachmentId },
  });
  return true;
}

/** The stored file behind a valid link (server/auth/attachment-links.ts), or null when it was deleted. */
export async function attachmentContent(tx: Tx, attachmentId: string): Promise<Pick<AttachmentRow, "content" | "mediaType" | "filename"> | null> {
  const r = await tx
    .select({ content: expenseAttachments.content, mediaType: expenseAttachments.mediaType, filename: expenseAttachments.filename })
    .from(expenseAttachments)
    .where(and(eq(expenseAttachments.attachmentId, attachmentId)))
    .get();
  return r ?? null;
}
