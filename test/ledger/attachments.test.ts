// Receipts: files kept with an expense, checked by their first bytes, within a size per file and a quota per group,
// seen only by the group's members, and served through an expiring signed link as a download that never runs as a page.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { MINUTE } from "../../server/clock.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { failure, groupWith } from "./ledger-fixtures.ts";

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("IHDR pixels")]);
const PDF = Buffer.from("%PDF-1.4\n1 0 obj <<>> endobj\n%%EOF\n");
const HTML = Buffer.from("<html><script>alert(1)</script></html>");
const b64 = (b: Buffer) => b.toString("base64");

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ attachmentMaxBytes: 64 * 1024, groupAttachmentBytes: 100 * 1024 });
});
afterAll(() => s.stop());

async function setup(prefix: string) {
  const g = await groupWith(s, [`${prefix}-a`, `${prefix}-b`]);
  const [a, b] = g.members;
  const { expense } = await s.ok("add_expense", { group_id: g.group_id, description: "Hotel", amount: "120.00" }, a!.key);
  return { g, a: a!, b: b!, expenseId: expense.expense_id as string };
}

test("a member attaches a receipt; members list it and fetch it through the link, with safe headers", async () => {
  const { a, b, expenseId } = await setup("rc");
  const { attachment } = await s.ok(
    "add_attachment",
    { expense_id: expenseId, filename: "reçu hôtel.png", media_type: "image/png", content_base64: b64(PNG) },
    a.key,
  );
  expect(attachment).toMatchObject({
    expense_id: expenseId,
    filename: { untrusted_content: "reçu hôtel.png" },
    media_type: "image/png",
    size_bytes: PNG.length,
    uploaded_by: { handle: "rc-a" },
  });
  expect(attachment.sha256).toBe(new Bun.CryptoHasher("sha256").update(PNG).digest("hex"));

  const { attachments } = await s.ok("list_attachments", { expense_id: expenseId }, b.key);
  expect(attachments.map((x: any) => x.attachment_id)).toEqual([attachment.attachment_id]);
  expect((await s.ok("get_expense", { expense_id: expenseId }, b.key)).attachments).toHaveLength(1);

  const res = await fetch(attachments[0].url);
  expect(res.status).toBe(200);
  expect(Buffer.from(await res.arrayBuffer())).toEqual(PNG);
  expect(res.headers.get("content-type")).toBe("image/png");
  expect(res.headers.get("content-disposition")).toBe(`inline; filename="re_u h_tel.png"; filename*=UTF-8''${encodeURIComponent("reçu hôtel.png")}`);
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");

  // a PDF is a download
  const pdf = await s.ok("add_attachment", { expense_id: expenseId, filename: "invoice.pdf", media_type: "application/pdf", content_base64: b64(PDF) }, b.key);
  const got = await fetch(pdf.attachment.url);
  expect(got.headers.get("content-type")).toBe("application/pdf");
  expect(got.headers.get("content-disposition")).toStartWith("attachment;");

  // a tampered or expired link, or another file's signature, serves nothing
  const u = new URL(attachments[0].url);
  expect((await s.raw(`${u.pathname}?expires=${u.searchParams.get("expires")}&sig=${"A".repeat(43)}`)).status).toBe(404);
  expect((await s.raw(`/v1/attachments/${pdf.attachment.attachment_id}${u.search}`)).status).toBe(404);
  s.clock.advance(61 * MINUTE);
  expect((await fetch(attachments[0].url)).status).toBe(404);
  // a new list gives a new link
  const fresh = (await s.ok("list_attachments", { expense_id: expenseId }, a.key)).attachments.find((x: any) => x.uploaded_by.handle === "rc-a");
  expect((await s.ok("list_attachments", { expense_id: expenseId }, a.key)).attachments.map((x: any) => x.media_type)).toEqual([
    "image/png",
    "application/pdf",
  ]);
  expect((await fetch(fresh.url)).status).toBe(200);

  // deleted by its uploader: gone, link included
  // b neither added a's file nor the expense: refused
  expect((await failure(s, "delete_attachment", { attachment_id: fresh.attachment_id }, b.key)).code).toBe("CONFLICT");
  expect((await s.ok("delete_attachment", { attachment_id: fresh.attachment_id }, a.key)).deleted).toBe(true);
  expect((await fetch(fresh.url)).status).toBe(404);
  expect((await s.ok("list_attachments", { expense_id: expenseId }, a.key)).attachments).toHaveLength(1);
});

test("the content must be the declared type (an allowed one), within the size per file and the group's quota", async () => {
  const { a, expenseId } = await setup("rv");
  const add = (over: Record<string, unknown>) =>
    failure(s, "add_attachment", { expense_id: expenseId, filename: "x.png", media_type: "image/png", content_base64: b64(PNG), ...over }, a.key);
  expect(await add({ content_base64: b64(HTML) })).toMatchObject({ code: "VALIDATION_ERROR", path: "media_type" });
  expect(await add({ content_base64: b64(PDF) })).toMatchObject({ code: "VALIDATION_ERROR", path: "media_type" });
  expect(await add({ media_type: "text/html", content_base64: b64(HTML) })).toMatchObject({ code: "VALIDATION_ERROR", path: "media_type" });
  expect(await add({ content_base64: "not base64!" })).toMatchObject({ code: "VALIDATION_ERROR", path: "content_base64" });
  const big = Buffer.concat([PNG, Buffer.alloc(64 * 1024)]);
  expect(await add({ content_base64: b64(big) })).toMatchObject({ code: "VALIDATION_ERROR", path: "content_base64" });
  // 100 KiB a group: a second 60 KiB file does not fit
  const sixty = b64(Buffer.concat([PNG, Buffer.alloc(60 * 1024)]));
  await s.ok("add_attachment", { expense_id: expenseId, filename: "1.png", media_type: "image/png", content_base64: sixty }, a.key);
  const over = await add({ content_base64: sixty });
  expect(over.code).toBe("CONFLICT");
  expect(over.details).toMatchObject({ limit: 100 * 1024 });
});

test("only the group's members see or add files; the body limit is larger for add_attachment alone", async () => {
  const { a, expenseId } = await setup("rm");
  const stranger = await s.register("rm-x");
  const args = { expense_id: expenseId, filename: "x.png", media_type: "image/png", content_base64: b64(PNG) };
  expect((await failure(s, "add_attachment", args, stranger.key)).code).toBe("NOT_FOUND");
  expect((await failure(s, "list_attachments", { expense_id: expenseId }, stranger.key)).code).toBe("NOT_FOUND");
  const { attachment } = await s.ok("add_attachment", args, a.key);
  expect((await failure(s, "delete_attachment", { attachment_id: attachment.attachment_id }, stranger.key)).code).toBe("NOT_FOUND");

  // past 1 MiB: refused for another tool, read (then judged) for add_attachment
  const small = await startTestServer();
  try {
    const r = await small.call("get_me", { pad: "x".repeat(1024 * 1024 + 10) }, null);
    expect(r.body.error.message).toContain("larger than");
    const taken = await small.call("add_attachment", { ...args, content_base64: "x".repeat(1024 * 1024 + 10), idempotency_key: "k-large-body-1" }, null);
    expect(taken.body.error.code).toBe("UNAUTHENTICATED");
  } finally {
    await small.stop();
  }
});

test("export_group's JSON names the group's files (without their bytes)", async () => {
  const { g, a, expenseId } = await setup("rx");
  const { attachment } = await s.ok(
    "add_attachment",
    { expense_id: expenseId, filename: "r.pdf", media_type: "application/pdf", content_base64: b64(PDF) },
    a.key,
  );
  const doc = JSON.parse((await s.ok("export_group", { group_id: g.group_id, format: "json" }, a.key)).content.untrusted_content);
  expect(doc.attachments).toEqual([
    {
      attachment_id: attachment.attachment_id,
      expense_id: expenseId,
      filename: "r.pdf",
      media_type: "application/pdf",
      size_bytes: PDF.length,
      sha256: attachment.sha256,
      uploaded_by: "rx-a",
      created_at: attachment.created_at,
    },
  ]);
});
