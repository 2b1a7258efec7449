// Names that lie: labels (display names, group names, client names, titles, places, subjects, descriptions) refuse
// control characters and invisible ones, must show something, and are stored in NFC; a body that is not UTF-8 is
// refused rather than repaired.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type Agent, type TestServer } from "../harness.ts";

let s: TestServer;
let a: Agent;
let b: Agent;
let groupId: string;
beforeAll(async () => {
  s = await startTestServer();
  [a, b] = (await s.contacts("lab-a", "lab-b")) as [Agent, Agent];
  groupId = (await s.ok("create_group", { name: "Trip", currency: "EUR" }, a.key)).group.group_id;
});
afterAll(() => s.stop());

const LIARS: [string, string][] = [
  ["a right-to-left override", "evil\u202egnp.exe"],
  ["a bidi isolate", "a\u2066b\u2069"],
  ["a left-to-right mark", "name\u200e"],
  ["a zero-width space", "ali\u200bce"],
  ["a zero-width joiner", "ali\u200dce"],
  ["a word joiner", "ali\u2060ce"],
  ["a byte-order mark", "\ufeffalice"],
  ["a soft hyphen", "ali\u00adce"],
  ["a line separator", "one\u2028two"],
  ["a tag character (invisible ASCII)", "hi\udb40\udc41\udb40\udc42"],
  ["nothing but zero-width spaces", "\u200b\u200b\u200b"],
  ["nothing but spaces", "   "],
  ["nothing but no-break spaces", "\u00a0\u3000"],
  ["a Hangul filler", "\u3164"],
  ["a braille blank", "\u2800\u2800"],
  ["nothing but combining marks", "\u0301\u0308"],
];

/** Every plain label of the catalogue, as [tool, arguments with the label set to `v`, the label's path]. */
function labels(v: string): [string, Record<string, unknown>, string, "a" | null][] {
  const soon = new Date(Date.parse("2026-12-01T18:00:00Z")).toISOString();
  return [
    ["register_agent", { handle: "lab-new", display_name: v }, "display_name", null],
    ["update_me", { display_name: v }, "display_name", "a"],
    ["join_network", { client_name: v }, "client_name", null],
    ["create_group", { name: v, currency: "EUR" }, "name", "a"],
    ["update_group", { group_id: groupId, name: v }, "name", "a"],
    ["add_expense", { group_id: groupId, description: v, amount: "1.00" }, "description", "a"],
    ["send_envelope", { to: ["lab-b"], subject: v, body_md: "hello" }, "subject", "a"],
    ["create_plan", { title: v, options: [{ starts_at: soon }], invitees: ["lab-b"] }, "title", "a"],
    ["create_plan", { title: "Dinner", options: [{ starts_at: soon, place: v }], invitees: ["lab-b"] }, "options[0].place", "a"],
  ];
}

describe("labels", () => {
  test.each(LIARS)("%s is refused in every label with VALIDATION_ERROR naming the field", async (_name, liar) => {
    for (const [tool, args, path, who] of labels(liar)) {
      const r = await s.call(tool, { idempotency_key: crypto.randomUUID(), ...args }, who ? a.key : null);
      expect([tool, r.status, r.body.error?.code]).toEqual([tool, 400, "VALIDATION_ERROR"]);
      expect(r.body.error.details.issues.map((i: any) => i.path)).toContain(path);
    }
  });

  test("a description may be empty, but not carry invisible characters", async () => {
    expect((await s.call("update_me", { description: "", idempotency_key: crypto.randomUUID() }, a.key)).status).toBe(200);
    const r = await s.call("update_me", { description: "about\u202eme", idempotency_key: crypto.randomUUID() }, a.key);
    expect(r.body.error.details.issues[0].path).toBe("description");
  });

  test("labels are stored in NFC; real names of every script, emoji and their variation selectors are fine", async () => {
    const decomposed = "Zoe\u0301 Ma\u0308dchen";
    const me = await s.ok("update_me", { display_name: decomposed }, a.key);
    expect(me.agent.display_name).toBe("Zo\u00e9 M\u00e4dchen");
    expect((await s.ok("get_me", {}, b.key)).agent.display_name).toBe("LAB-B");
    const group = (await s.ok("create_group", { name: "Cafe\u0301 \u2764\ufe0f", currency: "EUR" }, a.key)).group;
    expect(group.name).toBe("Caf\u00e9 \u2764\ufe0f");
    // a label at the limit after NFC is within it, even when the decomposed form is longer
    expect((await s.ok("update_me", { display_name: "e\u0301".repeat(80) }, a.key)).agent.display_name).toBe("\u00e9".repeat(80));
    for (const name of ["山田 太郎", "محمد", "Ελένη", "Ñandú", "José 👩‍💻"]) {
      if (name.includes("\u200d")) {
        // an emoji sequence joined by a zero-width joiner is refused with the joiner: a deliberate trade for safety
        expect((await s.call("update_me", { display_name: name, idempotency_key: crypto.randomUUID() }, a.key)).status).toBe(400);
      } else {
        expect((await s.ok("update_me", { display_name: name }, a.key)).agent.display_name).toBe(name);
      }
    }
  });

  test("notes lose invisible characters on the way", async () => {
    const c = await s.register("lab-c");
    await s.ok("add_contact", { handle: "lab-c", note: "hi\u202eevil\u200bthere\udb40\udc41" }, a.key);
    const [item] = (await s.ok("get_inbox", {}, c.key)).items;
    expect(item.note.untrusted_content).toBe("hi evil there");
    expect(item.note.untrusted_content.isWellFormed()).toBe(true);
  });
});

describe("request bodies", () => {
  test("a body that is not valid UTF-8 is refused with VALIDATION_ERROR, never repaired into U+FFFD", async () => {
    const bytes = new Uint8Array([...new TextEncoder().encode('{"display_name":"ab'), 0xff, 0xfe, ...new TextEncoder().encode('c"}')]);
    const res = await s.raw("/v1/tools/update_me", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${a.key}`, "idempotency-key": crypto.randomUUID() },
      body: bytes,
    });
    expect(res.status).toBe(400);
    const body: any = await res.json();
    expect(body.error.code).toBe("VALIDATION_ERROR");
    expect(body.error.details.issues).toEqual([{ path: "body", message: "not valid UTF-8" }]);
    expect((await s.ok("get_me", {}, a.key)).agent.display_name).not.toContain("\ufffd");
  });
});
