// Every released database opens in this build: each test/fixtures/releases/<version>.db (written by that release
// through its tools, see make.ts there) is copied, this build starts on the copy and applies its migrations, and
// the tools answer what that release answered (<version>.facts.json); old keys, idempotency keys, pending
// requests and invite codes keep working.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../server/clock.ts";
import { EXPENSE_SNAPSHOT_VERSION } from "../../server/contract/expense-snapshot.ts";
import { tokenCall } from "../auth/oauth-helpers.ts";
import { withoutProse } from "../fixtures/releases/prose.ts";
import { startTestServer, type TestServer } from "../harness.ts";

const DIR = join(import.meta.dir, "../fixtures/releases");
const releases = readdirSync(DIR)
  .filter((f) => f.endsWith(".db"))
  .map((f) => f.slice(0, -3));

test("there is a fixture of at least release 0.9.0", () => {
  expect(releases).toContain("0.9.0");
});

for (const release of releases) {
  describe(`release ${release} fixture`, () => {
    const facts = JSON.parse(readFileSync(join(DIR, `${release}.facts.json`), "utf8"));
    const dir = mkdtempSync(join(tmpdir(), `svc-release-${release}-`));
    const keyOf = (handle: string): string => facts.agents[handle].key;
    let s: TestServer;

    beforeAll(async () => {
      const copy = join(dir, "svc.db");
      copyFileSync(join(DIR, `${release}.db`), copy);
      // A local file whatever database the rest of the suite runs on; the clock shortly after the fixture's last write.
      s = await startTestServer({
        dbUrl: `file:${copy}`,
        syncUrl: undefined,
        authToken: undefined,
        clock: new ManualClock(Date.parse(facts.now)),
        inviteOnly: true,
      });
    });
    afterAll(async () => {
      await s?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test("starts, applies its migrations and is ready", async () => {
      const ready = await s.raw("/readyz");
      expect(ready.status).toBe(200);
    });

    // First, in the order they were recorded: get_inbox marks items seen, as it did when the facts were taken.
    test("every read answers the ids, amounts, shares, states, memberships and balances it answered", async () => {
      for (const r of facts.reads) {
        const res = await s.call(r.tool, r.args, keyOf(r.handle));
        const asked = `${r.handle} ${r.tool} ${JSON.stringify(r.args)}`;
        const expected = withoutProse(r.data);
        // The one answer changed on purpose since: a group's settle-up counts its pending payments as if confirmed
        // (so following it never pays a debt twice). There it must name them, and with them settle every balance.
        const pending = r.tool === "get_balances" && r.args.group_id && r.data.pending_payments?.length ? r.data.pending_payments : null;
        if (pending) {
          delete expected.settle_up;
          expect(res.body.data.settle_up_counts_pending.sort()).toEqual(pending.map((p: any) => p.payment_id).sort());
          expect(settledBy(res.body.data.members, [...pending, ...res.body.data.settle_up])).toEqual(true);
        }
        // Fields added since the release are allowed; every fact it gave must still be there, the same.
        expect({ asked, status: res.status, data: res.body.data }).toMatchObject({ asked, status: 200, data: expected });
      }
    });

    test("balances of every group still sum to zero", async () => {
      for (const group_id of Object.values(facts.groups)) {
        const g = facts.reads.find((r: any) => r.tool === "get_group" && r.args.group_id === group_id);
        const b = await s.ok("get_balances", { group_id }, keyOf(g.handle));
        expect(b.members.reduce((sum: number, m: any) => sum + m.balance_minor, 0)).toBe(0);
      }
    });

    test("get_spending's totals, filled by the migration from the expenses the release wrote, add up those expenses", async () => {
      let counted = 0;
      for (const group_id of Object.values(facts.groups)) {
        const g = facts.reads.find((r: any) => r.tool === "get_group" && r.args.group_id === group_id);
        const key = keyOf(g.handle);
        const { expenses } = await s.ok("list_expenses", { group_id, limit: 100 }, key);
        const spent = await s.ok("get_spending", { group_id, by: "member" }, key);
        const [totals] = spent.currencies;
        // A refund (0.11.0) counts against the spending; releases before it had no kind.
        const sign = (e: any) => (e.kind === "refund" ? -1 : 1);
        expect([totals.total_minor, totals.count]).toEqual([expenses.reduce((t: number, e: any) => t + sign(e) * e.amount_minor, 0), expenses.length]);
        counted += totals.count;
        const signed = (list: "paid_by" | "shares") =>
          expenses.flatMap((e: any) => e[list].map((p: any) => ({ ...p, amount_minor: sign(e) * p.amount_minor })));
        for (const row of totals.rows) {
          const paid = signed("paid_by").filter((p: any) => p.handle === row.key);
          const shares = signed("shares").filter((p: any) => p.handle === row.key);
          expect([row.paid_minor, row.amount_minor]).toEqual([
            paid.reduce((t: number, p: any) => t + p.amount_minor, 0),
            shares.reduce((t: number, p: any) => t + p.amount_minor, 0),
          ]);
        }
      }
      expect(counted).toBeGreaterThan(0);
    });

    test("old API keys sign in; a key rotated out before the upgrade stays out", async () => {
      for (const [handle, a] of Object.entries<any>(facts.agents)) {
        const me = await s.ok("get_me", {}, a.key);
        expect(me.agent.agent_id).toBe(a.agent_id);
        expect(me.agent.handle).toBe(handle);
      }
      const old = await s.call("get_me", {}, facts.rotated_out.key);
      expect(old.status).toBe(401);
      expect(old.body.error.code).toBe("UNAUTHENTICATED");
    });

    test("the OAuth client's access token still works, and its refresh token gives new ones", async () => {
      const o = facts.oauth;
      const me = await s.ok("get_me", {}, o.access_token);
      expect(me.agent.agent_id).toBe(facts.agents[o.handle].agent_id);
      const t = await tokenCall(s, { grant_type: "refresh_token", refresh_token: o.refresh_token, client_id: o.client_id });
      expect(t.status).toBe(200);
      expect(t.body.scope).toBe(o.scope);
      const again = await s.ok("get_me", {}, t.body.access_token);
      expect(again.agent.handle).toBe(o.handle);
    });

    test("an old idempotency key replays the stored answer and writes nothing", async () => {
      for (const i of facts.idempotent) {
        const count = async () => (await s.ok(i.count.tool, i.count.args, keyOf(i.handle)))[i.count.list].length;
        const before = await count();
        const res = await s.call(i.tool, i.args, keyOf(i.handle));
        expect(res.status).toBe(200);
        expect(res.headers.get("idempotent-replayed")).toBe("true");
        expect({ tool: i.tool, data: res.body.data }).toMatchObject({ tool: i.tool, data: i.data });
        expect(await count()).toBe(before);
      }
    });

    test("a pending payment, contact request, group invitation and plan invitation can still be answered", async () => {
      const p = facts.pending;
      const paid = await s.ok("respond_payment", { payment_id: p.payment.payment_id, action: "confirm" }, keyOf(p.payment.payee));
      expect(paid.payment.state).toBe("confirmed");
      const b = await s.ok("get_balances", { group_id: p.payment.group_id }, keyOf(p.payment.payee));
      expect(b.members.reduce((sum: number, m: any) => sum + m.balance_minor, 0)).toBe(0);

      await s.ok("respond_contact_request", { handle: p.contact_request.from, action: "accept" }, keyOf(p.contact_request.to));
      const contacts = await s.ok("list_contacts", { state: "accepted", limit: 100 }, keyOf(p.contact_request.to));
      expect(contacts.contacts.map((c: any) => c.agent.handle)).toContain(p.contact_request.from);

      await s.ok("respond_group_invite", { invite_id: p.group_invitation.invite_id, action: "accept" }, keyOf(p.group_invitation.handle));
      const g = await s.ok("get_group", { group_id: p.group_invitation.group_id }, keyOf(p.group_invitation.handle));
      expect(g.group.members.map((m: any) => m.agent.handle)).toContain(p.group_invitation.handle);

      const plan = await s.ok("respond_plan", { plan_id: p.plan_invitation.plan_id, response: "no" }, keyOf(p.plan_invitation.handle));
      expect(plan.plan.invitees.find((i: any) => i.agent.handle === p.plan_invitation.handle).response).toBe("no");
    });

    // During a rolling upgrade 0.9 instances serve beside this build on the migrated database. Their inbox counts
    // name two indexes with INDEXED BY, which fails outright once an index can no longer serve the query.
    test("the inbox counts 0.9 instances run still run, and count what a scan counts", async () => {
      const count0_9 = (index: string) => `
        SELECT agent_id,
          (SELECT count(*) FROM inbox_items ${index === "" ? "NOT INDEXED" : "INDEXED BY inbox_unseen"}
            WHERE agent_id = a.agent_id AND seen = 0 AND dismissed = 0 AND expires_at > ?) AS unread,
          (SELECT count(*) FROM inbox_items ${index === "" ? "NOT INDEXED" : "INDEXED BY inbox_pending_action"}
            WHERE agent_id = a.agent_id AND requires_action = 1 AND resolved = 0 AND dismissed = 0 AND expires_at > ?) AS requires_action
        FROM agents a ORDER BY agent_id`;
      const at = new Date(facts.now).toISOString();
      const counts = async (index: string) =>
        (await s.server.db.raw.execute(count0_9(index), [at, at])).rows.map((r) => [r.agent_id, r.unread, r.requires_action]);
      const indexed = await counts("indexed");
      expect(indexed).toEqual(await counts(""));
      expect(indexed.some(([, , pending]) => Number(pending) > 0)).toBe(true);
    });

    // expense_history keeps each version's snapshot for ever, in the shape of the release that wrote it (0.9: the
    // domain's state of then, without a version number): get_expense reads every one, beside those written now.
    test("expense history the release wrote (created, updated, deleted, restored) reads as it did, beside a version written now", async () => {
      const stored = await s.server.db.raw.execute("SELECT action, snapshot FROM expense_history");
      expect(new Set(stored.rows.map((r) => r.action))).toEqual(new Set(["created", "updated", "deleted", "restored"]));
      if (release === "0.9.0") expect(stored.rows.every((r) => JSON.parse(String(r.snapshot)).v === undefined)).toBe(true);
      const reads = facts.reads.filter((r: any) => r.tool === "get_expense" && r.data.history.length > 1);
      expect(reads.length).toBeGreaterThan(0);
      for (const r of reads) {
        const then = withoutProse(r.data);
        const now = await s.ok("get_expense", r.args, keyOf(r.handle));
        expect(now.history).toMatchObject(then.history);
        if (now.expense.deleted) continue;
        const changed = await s.ok(
          "update_expense",
          { expense_id: r.args.expense_id, expected_version: now.expense.version, notes: "read after the upgrade" },
          keyOf(r.handle),
        );
        expect(changed.changed_fields).toEqual(["notes"]);
        const after = await s.ok("get_expense", r.args, keyOf(r.handle));
        expect(after.history.slice(0, -1)).toMatchObject(then.history);
        expect(after.history.at(-1)).toMatchObject({ version: now.expense.version + 1, action: "updated", changed_fields: ["notes"] });
      }
      const written = await s.server.db.raw.execute("SELECT snapshot FROM expense_history");
      expect(written.rows.some((r) => JSON.parse(String(r.snapshot)).v === EXPENSE_SNAPSHOT_VERSION)).toBe(true);
    });

    // Since 0.11.0 (migrations 0021-0025); the reads above already compare each answer about them.
    if (facts.placeholders)
      test("a placeholder left unclaimed stays one and its claim code still claims it; a claimed one stays its agent's", async () => {
        const p = facts.placeholders;
        const members = async (handle: string) => (await s.ok("get_group", { group_id: p.group_id }, keyOf(handle))).group.members;
        const before = await members(p.claimed.handle);
        expect(before.find((m: any) => m.member_id === p.unclaimed.member_id)).toMatchObject({ agent: null, name: p.unclaimed.name });
        expect(before.find((m: any) => m.agent?.handle === p.claimed.handle).member_id).toBe(facts.agents[p.claimed.handle].agent_id);
        expect(before.some((m: any) => m.member_id === p.claimed.member_id)).toBe(false);
        const owed = (await s.ok("get_balances", { group_id: p.group_id }, keyOf(p.claimed.handle))).members.find(
          (m: any) => m.member_id === p.unclaimed.member_id,
        ).balance_minor;

        const joined = await s.ok("join_group", { invite_code: p.unclaimed.code }, keyOf(p.unclaimed.claimer));
        expect(joined.group.group_id).toBe(p.group_id);
        const claimer = facts.agents[p.unclaimed.claimer].agent_id;
        const after = await members(p.unclaimed.claimer);
        expect(after.some((m: any) => m.member_id === p.unclaimed.member_id)).toBe(false);
        const b = await s.ok("get_balances", { group_id: p.group_id }, keyOf(p.unclaimed.claimer));
        expect(b.members.find((m: any) => m.member_id === claimer).balance_minor).toBe(owed);
        expect(b.members.reduce((sum: number, m: any) => sum + m.balance_minor, 0)).toBe(0);
      });

    if (facts.attachments)
      test("a receipt's fresh link still serves the bytes the release stored", async () => {
        for (const a of facts.attachments) {
          const { attachments } = await s.ok("list_attachments", { expense_id: a.expense_id }, keyOf(a.handle));
          const live = attachments.find((x: any) => x.attachment_id === a.attachment_id);
          const file = await fetch(live.url);
          expect(file.status).toBe(200);
          expect(new Bun.CryptoHasher("sha256").update(new Uint8Array(await file.arrayBuffer())).digest("hex")).toBe(a.sha256);
        }
      });

    if (facts.across_groups)
      test("a payment across groups is still one payment: each group's part carries its batch", async () => {
        const x = facts.across_groups;
        expect(x.groups.length).toBeGreaterThan(0);
        for (const group_id of x.groups) {
          const g = facts.reads.find((r: any) => r.tool === "get_group" && r.args.group_id === group_id);
          const { payments } = await s.ok("list_payments", { group_id, limit: 100 }, keyOf(g.handle));
          expect(payments.filter((p: any) => p.batch_id === x.batch_id)).toHaveLength(1);
        }
      });

    test("the old group invite code and platform invite code still join", async () => {
      const c = facts.invite_codes;
      const joined = await s.ok("join_group", { invite_code: c.group.code }, keyOf(c.group.joiner));
      expect(joined.group.group_id).toBe(c.group.group_id);

      // The server runs invite-only: registering needs the platform code, a revoked one is refused.
      const refused = await s.call("register_agent", { handle: "late-revoked", display_name: "Late", platform_invite_code: c.platform_revoked });
      expect(refused.status).toBe(403);
      const late = await s.ok("register_agent", {
        handle: "late-joiner",
        display_name: "Late",
        platform_invite_code: c.platform.code,
        invite_code: c.group.code,
      });
      expect(late.joined_group.group_id).toBe(c.group.group_id);
      const g = await s.ok("get_group", { group_id: c.group.group_id }, late.api_key);
      expect(g.group.members.map((m: any) => m.agent.handle)).toEqual(expect.arrayContaining([c.group.joiner, "late-joiner"]));
    });
  });
}

/** Whether the transfers (payments or a plan's, each from, to and amount_minor) bring every member's balance to zero. */
function settledBy(members: any[], transfers: any[]): boolean {
  const left = new Map<string, number>(members.map((m) => [m.agent.agent_id, m.balance_minor]));
  for (const t of transfers) {
    left.set(t.from.agent_id, (left.get(t.from.agent_id) ?? 0) + t.amount_minor);
    left.set(t.to.agent_id, (left.get(t.to.agent_id) ?? 0) - t.amount_minor);
  }
  return [...left.values()].every((v) => v === 0);
}
