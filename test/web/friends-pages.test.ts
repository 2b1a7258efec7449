// The pages of issue 30's ledger for friends, through real HTTP with a cookie jar: a receipt uploaded on the expense's
// page (multipart, through invoke()), the recurring series listed on the group's page with a Stop button, and the
// inbox's one line per group with "Confirm all".
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { groupWith, type TestGroup } from "../ledger/ledger-fixtures.ts";
import { PageClient, signInWithCode, type PageResponse } from "./page-client.ts";

let s: TestServer;
let g: TestGroup;
beforeAll(async () => {
  s = await startTestServer();
  g = await groupWith(s, ["fp-alice", "fp-bob"], "EUR", "Lisbon trip");
}, 60_000);
afterAll(() => s.stop());

async function browserOf(handle: string): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/groups");
  await signInWithCode(s, b, "groups", handle, g.by[handle]!.key);
  return b;
}

function formOf(page: PageResponse, label: string): { action: string; fields: Record<string, string> } {
  const forms = [...page.html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)];
  const found = forms.find((f) => f[2]!.includes(`aria-label="${label}"`));
  if (!found) throw new Error(`no form with the button "${label}"`);
  const fields = Object.fromEntries([...found[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]));
  return { action: found[1]!, fields };
}

test("the expense page lists receipts and uploads one (multipart) through add_attachment", async () => {
  const { expense } = await s.ok("add_expense", { group_id: g.group_id, description: "Hotel", amount: "90.00" }, g.by["fp-alice"]!.key);
  const bob = await browserOf("fp-bob");
  const at = `/groups/${g.group_id}/expenses/${expense.expense_id}`;
  const page = await bob.get(at);
  expect(page.html).toContain("No receipt yet.");
  const form = /<form method="post" action="([^"]+)" enctype="multipart\/form-data">([\s\S]*?)<\/form>/.exec(page.html)!;
  expect(form[1]).toBe(`${at}/attachments`);
  const hidden = Object.fromEntries([...form[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]));
  const body = new FormData();
  for (const [k, v] of Object.entries(hidden)) body.set(k, v);
  const pdf = new TextEncoder().encode("%PDF-1.4\n%%EOF\n");
  body.set("file", new File([pdf], "hotel <invoice>.pdf", { type: "" }));
  const cookie = [...bob.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  const sent = await fetch(`${s.url}${form[1]}`, { method: "POST", redirect: "manual", headers: { cookie }, body });
  expect(sent.status).toBe(303);
  const after = await bob.get(`${at}?done=attached`);
  expect(after.html).toContain("The file is kept with the expense.");
  expect(after.html).toContain("“hotel &lt;invoice&gt;.pdf”");
  const { attachments } = await s.ok("list_attachments", { expense_id: expense.expense_id }, g.by["fp-alice"]!.key);
  expect(attachments).toHaveLength(1);
  expect(attachments[0].uploaded_by.handle).toBe("fp-bob");
  const link = /<a href="([^"]+)" rel="noopener noreferrer">/.exec(after.html)![1]!.replaceAll("&amp;", "&");
  expect(Buffer.from(await (await fetch(link)).arrayBuffer())).toEqual(Buffer.from(pdf));
  // not a PDF after all: the page again with the tool's refusal
  const bad = new FormData();
  for (const [k, v] of Object.entries(hidden)) bad.set(k, k === "idempotency_key" ? crypto.randomUUID() : v);
  bad.set("file", new File([new TextEncoder().encode("<html></html>")], "x.pdf", { type: "application/pdf" }));
  const refused = await fetch(`${s.url}${form[1]}`, { method: "POST", redirect: "manual", headers: { cookie }, body: bad });
  expect(refused.status).toBe(400);
  expect(await refused.text()).toContain("is not application/pdf");
  // the uploader deletes it from the page
  const del = formOf(after, "Delete the file hotel &lt;invoice&gt;.pdf");
  expect((await bob.post(del.action, del.fields, del.fields.csrf)).status).toBe(303);
  expect((await s.ok("list_attachments", { expense_id: expense.expense_id }, g.by["fp-alice"]!.key)).attachments).toEqual([]);
});

test("the group page lists the active recurring expenses with a Stop button", async () => {
  const { expense } = await s.ok("add_expense", { group_id: g.group_id, description: "Flat", amount: "800.00", repeat: "monthly" }, g.by["fp-alice"]!.key);
  const alice = await browserOf("fp-alice");
  const page = await alice.get(`/groups/${g.group_id}`);
  expect(page.html).toContain("Recurring expenses");
  const stop = formOf(page, "Stop repeating “Flat”");
  expect((await alice.post(stop.action, stop.fields, stop.fields.csrf)).status).toBe(303);
  expect((await s.ok("get_expense", { expense_id: expense.expense_id }, g.by["fp-alice"]!.key)).expense.next_occurrence).toBeNull();
  expect((await alice.get(`/groups/${g.group_id}`)).html).not.toContain("Stop repeating “Flat”");
});

test("the web inbox shows one line per group for the expenses to confirm, and confirms them all at once", async () => {
  for (const d of ["Coffee 1", "Coffee 2", "Coffee 3"])
    await s.ok("add_expense", { group_id: g.group_id, description: d, amount: "3.00" }, g.by["fp-alice"]!.key);
  const bob = await browserOf("fp-bob");
  const page = await bob.get("/inbox");
  const waiting = (await s.ok("get_inbox", { requires_action: true }, g.by["fp-bob"]!.key)).items.length;
  expect(page.html).toContain(`${waiting} expenses in “Lisbon trip” to confirm.`);
  expect(page.html).not.toContain("Coffee 1");
  const all = formOf(page, `Confirm all ${waiting} expenses of the group`);
  expect((await bob.post(all.action, all.fields, all.fields.csrf)).status).toBe(303);
  expect((await s.ok("get_inbox", { requires_action: true }, g.by["fp-bob"]!.key)).items).toEqual([]);
  expect((await bob.get("/inbox?done=confirmed")).html).toContain("Nothing waits for you.");
});
