// A group's whole history on the web pages, through real HTTP with a cookie jar: every expense reached a page at a
// time (list_expenses' cursor), searched by words of the description or notes, filtered by person and by date; the
// group's activity page; and amounts typed the way a person writes them ("12,50" as well as "12.50") in every
// amount field of the pages, read before the tool call.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../harness.ts";
import { groupWith, type TestGroup } from "../ledger/ledger-fixtures.ts";
import { PageClient, signInWithCode, type PageResponse } from "./page-client.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
}, 60_000);
afterAll(() => s.stop());

async function browserOf(g: TestGroup, handle: string): Promise<PageClient> {
  const b = new PageClient(s.url);
  await b.get("/groups");
  await signInWithCode(s, b, "groups", handle, g.by[handle]!.key);
  // The group's page, as a browser opens it before sending one of its forms (its CSRF token).
  await b.get(`/groups/${g.group_id}`);
  return b;
}

/** The expenses the page lists, in its order: their ids. */
function listed(page: PageResponse): string[] {
  const table = page.html.match(/<table aria-label="Expenses">([\s\S]*?)<\/table>/)?.[1] ?? "";
  return [...table.matchAll(/<a href="\/groups\/[0-9a-f-]+\/expenses\/([0-9a-f-]+)">/g)].map((m) => m[1]!);
}

/** The link to the next page of the list, as the page gives it (its &amp; read back). */
const olderLink = (page: PageResponse, text = "Older expenses") => page.html.match(new RegExp(`<a href="([^"]+)">${text}</a>`))?.[1]?.replaceAll("&amp;", "&");

/** A form post with a fresh key, as a page's form sends it. */
const post = (b: PageClient, path: string, fields: Record<string, string>) => b.post(path, { idempotency_key: crypto.randomUUID(), ...fields });

describe("every expense of a group, a page at a time, searched and filtered", () => {
  let g: TestGroup;
  let at: string;
  let dana: string;
  /** Expense ids by their number 1..30 (dated 2026-10-01 .. 2026-10-30). */
  const ids: Record<number, string> = {};
  let alice: PageClient;

  beforeAll(async () => {
    g = await groupWith(s, ["hx-alice", "hx-bob", "hx-carol"], "EUR", "Long trip");
    at = `/groups/${g.group_id}`;
    const key = g.by["hx-alice"]!.key;
    dana = (await s.ok("create_group_invite", { group_id: g.group_id, name: "Dana" }, key)).invite.placeholder.member_id;
    // 30 expenses: every third a taxi, the rest dinners; even ones shared with bob, odd ones with carol, every fifth
    // with Dana too; the 7th's notes speak of a taxi.
    for (let i = 1; i <= 30; i++) {
      const among = [{ handle: "hx-alice" }, { handle: i % 2 === 0 ? "hx-bob" : "hx-carol" }, ...(i % 5 === 0 ? [{ member_id: dana }] : [])];
      const { expense } = await s.ok(
        "add_expense",
        {
          group_id: g.group_id,
          description: i % 3 === 0 ? `Taxi ${i}` : `Dinner ${i}`,
          amount: `${i}.00`,
          date: `2026-10-${String(i).padStart(2, "0")}`,
          split: { mode: "equal", among },
          ...(i === 7 ? { notes: "Shared a TAXI home afterwards" } : {}),
        },
        key,
      );
      ids[i] = expense.expense_id;
    }
    alice = await browserOf(g, "hx-alice");
  }, 120_000);

  const newestFirst = (numbers: number[]) => [...numbers].sort((a, b) => b - a).map((i) => ids[i]!);
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => from + k);

  test("30 expenses: the group page lists 20, and its Older link the other 10; each one opens", async () => {
    const first = await alice.get(at);
    expect(listed(first)).toEqual(newestFirst(range(11, 30)));
    const older = olderLink(first);
    expect(older).toBeDefined();
    const second = await alice.get(older!);
    expect(listed(second)).toEqual(newestFirst(range(1, 10)));
    expect(olderLink(second)).toBeUndefined();
    expect(second.html).toContain(`<a href="${at}#expenses">Back to the newest</a>`);
    // The oldest, out of reach on the first page, opens from the second.
    const oldest = await alice.get(`${at}/expenses/${ids[1]}`);
    expect(oldest.status).toBe(200);
    expect(oldest.html).toContain("“Dinner 1”");
  });

  test("a search finds words of the description or the notes, in any case, newest first", async () => {
    const taxis = [3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 7];
    for (const q of ["taxi", "TAXI", "Taxi"]) {
      const found = await alice.get(`${at}?q=${q}#expenses`);
      expect(listed(found)).toEqual(newestFirst(taxis));
      expect(found.html).toContain(`value="${q}"`);
    }
    expect(listed(await alice.get(`${at}?q=nothing-like-it`))).toEqual([]);
    expect((await alice.get(`${at}?q=nothing-like-it`)).html).toContain("No expense matches.");
  });

  test("a filter by person (a member or a friend without an account) and by dates; filters combine and page together", async () => {
    expect(listed(await alice.get(`${at}?who=hx-bob`))).toEqual(newestFirst(range(1, 30).filter((i) => i % 2 === 0)));
    expect(listed(await alice.get(`${at}?who=${dana}`))).toEqual(newestFirst([5, 10, 15, 20, 25, 30]));
    expect(listed(await alice.get(`${at}?from=2026-10-05&to=2026-10-09`))).toEqual(newestFirst(range(5, 9)));
    const combined = await alice.get(`${at}?q=dinner&who=hx-carol&from=2026-10-01&to=2026-10-15`);
    expect(listed(combined)).toEqual(newestFirst([1, 5, 7, 11, 13]));
    expect(combined.html).toContain('<option value="hx-carol" selected>');
    // Paged within a filter: the Older link keeps it.
    const mine = await alice.get(`${at}?who=hx-alice`);
    expect(listed(mine)).toEqual(newestFirst(range(11, 30)));
    const older = olderLink(mine)!;
    expect(older).toContain("who=hx-alice");
    expect(listed(await alice.get(older))).toEqual(newestFirst(range(1, 10)));
    // Someone not in the group, or a date that is none, filters nothing out.
    expect(listed(await alice.get(`${at}?who=nobody-here&from=yesterday`))).toEqual(newestFirst(range(11, 30)));
  });

  test("a page of the list from an old link starts again from the newest, and says so", async () => {
    const stale = await alice.get(`${at}?cursor=not-a-cursor`);
    expect(stale.status).toBe(200);
    expect(stale.html).toContain("That page of the list is out of date");
    expect(listed(stale)).toEqual(newestFirst(range(11, 30)));
  });

  test("the group's activity page: every entry, a page at a time, in a person's words", async () => {
    const texts: string[] = [];
    let page = await alice.get(`${at}/activity`);
    expect(page.status).toBe(200);
    for (let n = 0; n < 5; n++) {
      const list = page.html.match(/<ul class="cards" aria-label="Activity">([\s\S]*?)<\/ul>/)?.[1] ?? "";
      texts.push(
        ...[...list.matchAll(/<li>([\s\S]*?)<\/li>/g)].map((m) =>
          m[1]!
            .replace(/<[^>]+>/g, "")
            .replace(/\s+/g, " ")
            .trim(),
        ),
      );
      const older = olderLink(page, "Older activity");
      if (!older) break;
      page = await alice.get(older);
    }
    const { entries } = await s.ok("get_activity", { group_id: g.group_id, limit: 100 }, g.by["hx-alice"]!.key);
    expect(texts).toHaveLength(entries.length);
    expect(texts.some((t) => t.includes("HX-ALICE added “Dinner 1”: 1.00 EUR, paid by HX-ALICE, split equally among 2 people"))).toBe(true);
    expect(texts.some((t) => t.includes("HX-ALICE added Dana, who has no account yet") || t.includes("HX-ALICE added “Dana”, who has no account yet"))).toBe(
      true,
    );
    for (const t of texts) {
      expect(t).not.toContain("(quoted)");
      expect(t).not.toMatch(/@hx-/);
    }
  });
});

describe("amounts typed the way the person writes them", () => {
  let g: TestGroup;
  let at: string;
  beforeAll(async () => {
    g = await groupWith(s, ["am-alice", "am-bob"], "EUR", "Flat");
    at = `/groups/${g.group_id}`;
  }, 60_000);

  const newest = async () => (await s.ok("list_expenses", { group_id: g.group_id, limit: 1 }, g.by["am-alice"]!.key)).expenses[0];
  const base = { currency: "EUR", paid_by: "am-alice", "in_am-alice": "1", "in_am-bob": "1" };

  test("12,50 and 12.50 on the expense form: the amount, each payer's, each member's value, the rate", async () => {
    const alice = await browserOf(g, "am-alice");
    for (const [typed, description] of [
      ["12,50", "Comma"],
      ["12.50", "Dot"],
      [" 12,5 ", "Short"],
    ] as const) {
      const sent = await post(alice, `${at}/expenses/new`, { ...base, description, amount: typed, split_mode: "equal" });
      expect(sent.status).toBe(303);
      expect(await newest()).toMatchObject({ description: { untrusted_content: description }, amount: "12.50" });
    }
    // Grouped digits, either way round, for several payers.
    const several = await post(alice, `${at}/expenses/new`, {
      ...base,
      description: "Sofa",
      amount: "2.469,00",
      paid_by: "several",
      "paid_am-alice": "1.234,50",
      "paid_am-bob": "1,234.50",
      split_mode: "equal",
    });
    expect(several.status).toBe(303);
    expect((await newest()).paid_by.map((p: any) => p.amount)).toEqual(["1234.50", "1234.50"]);
    // Exact amounts and percentages with a decimal comma.
    const exact = await post(alice, `${at}/expenses/new`, {
      ...base,
      description: "Exact",
      amount: "12,50",
      split_mode: "exact",
      "value_am-alice": "6,25",
      "value_am-bob": "6,25",
    });
    expect(exact.status).toBe(303);
    expect((await newest()).shares.map((x: any) => x.amount)).toEqual(["6.25", "6.25"]);
    const percent = await post(alice, `${at}/expenses/new`, {
      ...base,
      description: "Percent",
      amount: "10,00",
      split_mode: "percent",
      "value_am-alice": "62,5",
      "value_am-bob": "37,5",
    });
    expect(percent.status).toBe(303);
    expect((await newest()).shares.map((x: any) => x.amount)).toEqual(["6.25", "3.75"]);
    // Another currency with its rate written with a comma.
    const usd = await post(alice, `${at}/expenses/new`, {
      ...base,
      description: "Dollars",
      amount: "10,00",
      currency: "USD",
      exchange_rate: "0,92",
      split_mode: "equal",
    });
    expect(usd.status).toBe(303);
    expect(await newest()).toMatchObject({ amount: "9.20", original: { currency: "USD", amount: "10.00", exchange_rate: "0.92" } });
  });

  test("one separator before three digits is read as the person's language writes numbers", async () => {
    const alice = await browserOf(g, "am-alice");
    const withLanguage = async (language: string, description: string) => {
      const res = await fetch(`${s.url}${at}/expenses/new`, {
        method: "POST",
        redirect: "manual",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "accept-language": language,
          cookie: [...alice.cookies].map(([k, v]) => `${k}=${v}`).join("; "),
        },
        body: new URLSearchParams({
          ...base,
          description,
          amount: "10,00",
          currency: "USD",
          exchange_rate: "1,085",
          split_mode: "equal",
          csrf: alice.csrf,
          idempotency_key: crypto.randomUUID(),
        }),
      });
      expect(res.status).toBe(303);
      return (await newest()).original.exchange_rate;
    };
    // German writes 1,085 for one and 85 thousandths; English for one thousand and 85.
    expect(await withLanguage("de-DE,de;q=0.9,en;q=0.5", "Rate de")).toBe("1.085");
    const english = await fetch(`${s.url}${at}/expenses/new`, {
      method: "POST",
      redirect: "manual",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "accept-language": "en-US",
        cookie: [...alice.cookies].map(([k, v]) => `${k}=${v}`).join("; "),
      },
      body: new URLSearchParams({
        ...base,
        description: "Rate en",
        amount: "1,085",
        split_mode: "equal",
        csrf: alice.csrf,
        idempotency_key: crypto.randomUUID(),
      }),
    });
    expect(english.status).toBe(303);
    expect((await newest()).amount).toBe("1085.00");
  });

  test("the payment form takes 7,25; what is no amount at all is still refused beside its field", async () => {
    const bob = await browserOf(g, "am-bob");
    const paid = await post(bob, `${at}/payments`, { form: "payment", from: "am-bob", to: "am-alice", amount: "7,25", currency: "EUR" });
    expect(paid.status).toBe(303);
    const [payment] = (await s.ok("list_payments", { group_id: g.group_id }, g.by["am-alice"]!.key)).payments;
    expect(payment).toMatchObject({ amount: "7.25", state: "pending" });
    const bad = await post(bob, `${at}/payments`, { form: "payment", from: "am-bob", to: "am-alice", amount: "7,2,5", currency: "EUR" });
    expect(bad.status).toBe(400);
    expect(bad.html).toContain('<small id="f-pay-amount-error" class="field-error">');
    expect(bad.html).toContain('value="7,2,5"');
  });
});
