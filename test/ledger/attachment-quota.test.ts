// The attachment bytes one agent may keep (--quota attachment_bytes): counted over the files it uploaded that are still
// stored, in every group; past it CONFLICT naming the limit, nothing stored; deleting a file makes room
// (docs/limits.md, "Quotas per agent").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DEFAULTS, parseQuota, parseQuotas } from "../../server/config.ts";
import { key, startTestServer, type TestServer } from "../harness.ts";
import { groupWith } from "./ledger-fixtures.ts";

/** A PNG of exactly `bytes` bytes: the signature, then filler. */
const png = (bytes: number) => Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(bytes - 8, 7)]).toString("base64");

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ quotas: { ...DEFAULTS.quotas, attachmentBytes: 3000 } });
});
afterAll(() => s.stop());

describe("attachment bytes per agent", () => {
  test("--quota attachment_bytes sets it; the default is 1 GiB", () => {
    expect(DEFAULTS.quotas.attachmentBytes).toBe(1024 * 1024 * 1024);
    expect(parseQuota("attachment_bytes=5000")).toEqual({ attachmentBytes: 5000 });
    expect(parseQuotas("keys=5,attachment_bytes=7")).toEqual({ keys: 5, attachmentBytes: 7 });
  });

  test("refused past the quota across groups, with the limit named and nothing stored; others still upload; deleting makes room", async () => {
    const one = await groupWith(s, ["aq-ann", "aq-ben"]);
    const [ann, ben] = one.members;
    const { group: two } = await s.ok("create_group", { name: "Second", currency: "EUR" }, ann!.key);
    const expenseIn = async (groupId: string, who: string) =>
      (await s.ok("add_expense", { group_id: groupId, description: "Hotel", amount: "10.00" }, who)).expense.expense_id as string;
    const first = await expenseIn(one.group_id, ann!.key);
    const second = await expenseIn(two.group_id, ann!.key);
    const attach = (expenseId: string, bytes: number, who: string) =>
      s.call("add_attachment", { expense_id: expenseId, filename: "r.png", media_type: "image/png", content_base64: png(bytes), idempotency_key: key() }, who);

    const kept = await attach(first, 1000, ann!.key);
    expect(kept.status).toBe(200);
    expect((await attach(second, 1500, ann!.key)).status).toBe(200);
    // 2500 of 3000 are used, over two groups: 600 more do not fit in either.
    for (const expenseId of [first, second]) {
      const over = await attach(expenseId, 600, ann!.key);
      expect(over.status).toBe(409);
      expect(over.body.error).toMatchObject({ code: "CONFLICT", details: { limit_bytes: 3000, used_bytes: 2500, attachment_bytes: 600 } });
      expect(over.body.error.message).toContain("3000 bytes of files one handle may keep");
    }
    expect((await s.ok("list_attachments", { expense_id: first }, ann!.key)).attachments).toHaveLength(1);
    // Exactly up to the quota fits; another member's files are their own.
    expect((await attach(first, 500, ann!.key)).status).toBe(200);
    expect((await attach(first, 2000, ben!.key)).status).toBe(200);
    expect((await attach(first, 8, ann!.key)).status).toBe(409);
    await s.ok("delete_attachment", { attachment_id: kept.body.data.attachment.attachment_id }, ann!.key);
    expect((await attach(second, 1000, ann!.key)).status).toBe(200);
  });
});
