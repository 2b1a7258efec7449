// A write call reads first, then sends its writes as one batch: the batch commits whole or not at all, a guard that
// finds what the call read changed runs the call again from its reads, a read of what the call wrote sends the batch
// first (and nothing may be written after it), and calls at the same moment through the tools keep every rule
// (one use of a last invite, one effect per idempotency key, each expense version once).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Db, guard, guardChanged, openDb, scalar, snapshotOf, WriteConflict } from "../../db/client.ts";
import { guardCredential } from "../../server/auth/credentials.ts";
import { sha256 } from "../../server/auth/secrets.ts";
import { claimPlaceholder } from "../../server/domain/ledger/groups/placeholders.ts";
import { removeMember } from "../../server/domain/ledger/groups/groups.ts";
import { respondPayment } from "../../server/domain/ledger/payments/payments.ts";
import { updatePlan } from "../../server/domain/plans/plans.ts";
import { respondContactRequest } from "../../server/domain/contacts.ts";
import { addExpense } from "../../server/domain/ledger/expenses/expenses.ts";
import { key, startTestServer, type TestServer } from "../harness.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-write-calls-"));
let db: Db;
beforeAll(async () => {
  db = await openDb({ url: `file:${join(dir, "calls.db")}` });
  await db.exclusive((raw) =>
    raw.executeMultiple("CREATE TABLE t (n INTEGER); CREATE TABLE write_conflicts (guard TEXT, CONSTRAINT write_conflict CHECK (guard IS NULL));"),
  );
});
afterAll(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});
const count = async () => (await db.read((tx) => scalar<number>(tx, sql`SELECT count(*) FROM t`)))!;

describe("a write call's batch", () => {
  test("is sent when the call returns: nothing of it is seen before, all of it after", async () => {
    const before = await count();
    await db.tx(async (tx) => {
      await tx.run(sql`INSERT INTO t VALUES (1)`);
      await tx.run(sql`INSERT INTO t VALUES (2)`);
      // Another call reads beside it: the batch is not sent yet.
      expect(await count()).toBe(before);
    });
    expect(await count()).toBe(before + 2);
  });

  test("a call that throws sends nothing", async () => {
    const before = await count();
    await expect(
      db.tx(async (tx) => {
        await tx.run(sql`INSERT INTO t VALUES (3)`);
        throw new Error("refused");
      }),
    ).rejects.toThrow("refused");
    expect(await count()).toBe(before);
  });

  test("a guard that no longer holds runs the call again from its reads, and it commits once", async () => {
    const before = await count();
    let runs = 0;
    await db.tx(async (tx) => {
      runs++;
      const seen = (await scalar<number>(tx, sql`SELECT count(*) FROM t`))!;
      // The first run's read is made stale by a write committed beside it.
      if (runs === 1) await db.tx((other) => other.run(sql`INSERT INTO t VALUES (4)`));
      await guard(tx, "count", sql`(SELECT count(*) FROM t) = ${seen}`);
      await tx.run(sql`INSERT INTO t VALUES (5)`);
    });
    // Run again after the guard failed (and, refused on a replica, judged once more after a sync).
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(await count()).toBe(before + 2);
  });

  test("an UPDATE guarded by what it read changes its row once however many calls race for it", async () => {
    await db.exclusive((raw) => raw.executeMultiple("CREATE TABLE v (id INTEGER PRIMARY KEY, version INTEGER); INSERT INTO v VALUES (1, 0);"));
    const bump = () =>
      db.tx(async (tx) => {
        const version = (await scalar<number>(tx, sql`SELECT version FROM v WHERE id = 1`))!;
        await tx.run(sql`UPDATE v SET version = ${version + 1} WHERE id = 1 AND version = ${version}`);
        await guardChanged(tx, "version");
      });
    await Promise.all(Array.from({ length: 6 }, bump));
    // Each bump read a version and wrote the next: none was lost to another that read the same one.
    expect(await db.read((tx) => scalar<number>(tx, sql`SELECT version FROM v WHERE id = 1`))).toBe(6);
  });

  test("a read of a table the call wrote sends the batch first and sees it; a write after that is refused", async () => {
    const before = await count();
    const seen = await db.tx(async (tx) => {
      await tx.run(sql`INSERT INTO t VALUES (6)`);
      // The snapshot as the call read it does not have the insert; the read of t itself does.
      const asRead = await scalar<number>(snapshotOf(tx), sql`SELECT count(*) FROM t`);
      // Named as drizzle names tables (quoted), which is how the call knows it is one it wrote.
      return [asRead, await scalar<number>(tx, sql`SELECT count(*) FROM "t"`)];
    });
    expect(seen).toEqual([before, before + 1]);
    const err = await db
      .tx(async (tx) => {
        await tx.run(sql`INSERT INTO t VALUES (7)`);
        await scalar(tx, sql`SELECT count(*) FROM "t"`);
        await tx.run(sql`INSERT INTO t VALUES (8)`);
      })
      .catch((e: unknown) => e as Error);
    expect(String((err as Error).cause ?? err)).toContain("writes after reading what it wrote");
    // What went before the read was sent; what came after was not.
    expect(await count()).toBe(before + 2);
  });
});

describe("calls at the same moment, through the tools", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  test("the last use of an invite code is taken once; the other caller is refused and joins nothing", async () => {
    const [owner, x, y] = await Promise.all([s.register("wc-owner"), s.register("wc-x"), s.register("wc-y")]);
    const { group } = await s.ok("create_group", { name: "Race", currency: "EUR", idempotency_key: key() }, owner.key);
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id, max_uses: 1, idempotency_key: key() }, owner.key);
    const answers = await Promise.all([x, y].map((a) => s.call("join_group", { invite_code: invite.code, idempotency_key: key() }, a.key)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    expect((await s.ok("get_group", { group_id: group.group_id }, owner.key)).group.member_count).toBe(2);
  });

  test("one idempotency key sent many times at once has one effect, and every answer is the same", async () => {
    const [a, b] = await Promise.all([s.register("wc-a"), s.register("wc-b")]);
    const { group } = await s.ok("create_group", { name: "Once", currency: "EUR", members: [], idempotency_key: key() }, a.key);
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id, max_uses: 5, idempotency_key: key() }, a.key);
    await s.ok("join_group", { invite_code: invite.code, idempotency_key: key() }, b.key);
    const args = { group_id: group.group_id, description: "Dinner", amount_minor: 4000, idempotency_key: key() };
    const answers = await Promise.all(Array.from({ length: 6 }, () => s.call("add_expense", args, a.key)));
    expect(answers.every((r) => r.status === 200)).toBe(true);
    expect(new Set(answers.map((r) => r.body.data.expense.expense_id)).size).toBe(1);
    expect((await s.ok("list_expenses", { group_id: group.group_id }, a.key)).expenses).toHaveLength(1);
    const balances = (await s.ok("get_balances", { group_id: group.group_id }, a.key)).members.map((m: any) => m.balance_minor);
    expect(balances.reduce((x: number, y: number) => x + y, 0)).toBe(0);
  });

  test("a placeholder claimed while the group's ledger changes runs again: the debts it moves are those at commit", async () => {
    const [a, c] = await Promise.all([s.register("wc-ph-a"), s.register("wc-ph-c")]);
    const { group } = await s.ok("create_group", { name: "Claim race", currency: "EUR", idempotency_key: key() }, a.key);
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id, name: "Dana", idempotency_key: key() }, a.key);
    const lunch = (amount_minor: number) =>
      s.ok(
        "add_expense",
        {
          group_id: group.group_id,
          description: "Lunch",
          amount_minor,
          split: { mode: "equal", among: [{ handle: a.handle }, { member_id: invite.placeholder.member_id }] },
          idempotency_key: key(),
        },
        a.key,
      );
    await lunch(1000);
    let runs = 0;
    await s.server.db.tx(async (tx) => {
      runs++;
      await claimPlaceholder({ tx, now: s.clock.now(), actor: { agentId: c.agent_id, handle: c.handle } }, invite.code);
      // Committed after the claim read Dana's debts, before its batch.
      if (runs === 1) await lunch(2000);
    });
    expect(runs).toBe(2);
    const { members } = await s.ok("get_balances", { group_id: group.group_id }, a.key);
    const balance = (id: string) => members.find((m: any) => m.member_id === id)?.balance_minor;
    expect([balance(a.agent_id), balance(c.agent_id)]).toEqual([1500, -1500]);
  });

  test("a member removed at a zero balance while an expense with them commits: the removal runs again and is refused", async () => {
    const a = await s.register("wc-rm-a");
    const { group } = await s.ok("create_group", { name: "Remove race", currency: "EUR", idempotency_key: key() }, a.key);
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id, name: "Eve", idempotency_key: key() }, a.key);
    const eve = invite.placeholder.member_id;
    let runs = 0;
    const err = await s.server.db
      .tx(async (tx) => {
        runs++;
        await removeMember({ tx, now: s.clock.now(), actor: { agentId: a.agent_id, handle: a.handle } }, group.group_id, { memberId: eve });
        // Committed after the removal read Eve's zero balance, before its batch.
        if (runs === 1) {
          const split = { mode: "equal", among: [{ handle: a.handle }, { member_id: eve }] };
          await s.ok("add_expense", { group_id: group.group_id, description: "Tea", amount_minor: 300, split, idempotency_key: key() }, a.key);
        }
      })
      .catch((e: unknown) => e);
    // Run again after the guard failed (and, refused on a replica, judged once more after a sync).
    expect(runs).toBeGreaterThanOrEqual(2);
    expect((err as { code?: string }).code).toBe("CONFLICT");
    const { members } = await s.ok("get_balances", { group_id: group.group_id }, a.key);
    expect(members.find((m: any) => m.member_id === eve)?.balance_minor).toBe(-150);
  });

  test("a payment confirmed by another call while this one confirms it: this one runs again and is refused, the debt paid once", async () => {
    const [a, b] = await Promise.all([s.register("wc-pay-a"), s.register("wc-pay-b")]);
    const { group } = await s.ok("create_group", { name: "Paid once", currency: "EUR", idempotency_key: key() }, a.key);
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id, max_uses: 1, idempotency_key: key() }, a.key);
    await s.ok("join_group", { invite_code: invite.code, idempotency_key: key() }, b.key);
    await s.ok("add_expense", { group_id: group.group_id, description: "Hotel", amount_minor: 2000, idempotency_key: key() }, a.key);
    const { payment } = await s.ok("record_payment", { group_id: group.group_id, to: a.handle, amount_minor: 1000, idempotency_key: key() }, b.key);
    let runs = 0;
    const err = await s.server.db
      .tx(async (tx) => {
        runs++;
        await respondPayment(
          { tx, now: s.clock.now(), actor: { agentId: a.agent_id, handle: a.handle } },
          { payment_id: payment.payment_id, action: "confirm" },
        );
        // Confirmed by another call after this one read it pending, before its batch.
        if (runs === 1) await s.ok("respond_payment", { payment_id: payment.payment_id, action: "confirm", idempotency_key: key() }, a.key);
      })
      .catch((e: unknown) => e);
    // Run again after the guard failed (and, refused on a replica, judged once more after a sync).
    expect(runs).toBeGreaterThanOrEqual(2);
    expect((err as { code?: string }).code).toBe("CONFLICT");
    const { members } = await s.ok("get_balances", { group_id: group.group_id }, a.key);
    expect(members.map((m: any) => m.balance_minor).sort()).toEqual([0, 0]);
  });

  test("a plan's option dropped by another call while this one chooses it: this one runs again and is refused", async () => {
    const [o, b] = await s.contacts("wc-plan-o", "wc-plan-b");
    const options = [{ starts_at: "2026-12-05T19:00:00Z" }, { starts_at: "2026-12-06T19:00:00Z" }];
    const { plan } = await s.ok("create_plan", { title: "Dinner", options, invitees: [b.handle], idempotency_key: key() }, o.key);
    const [o1, o2] = plan.options.map((x: any) => x.option_id);
    let runs = 0;
    const err = await s.server.db
      .tx(async (tx) => {
        runs++;
        await updatePlan({ tx, now: s.clock.now(), actor: { agentId: o.agent_id, handle: o.handle } }, { plan_id: plan.plan_id, choose_option_id: o1 });
        // o1 dropped by another call after this one read the plan's options, before its batch.
        if (runs === 1) {
          const kept = [{ option_id: o2, starts_at: "2026-12-06T19:00:00Z" }];
          await s.ok("update_plan", { plan_id: plan.plan_id, options: kept, idempotency_key: key() }, o.key);
        }
      })
      .catch((e: unknown) => e);
    // Run again after the guard failed (and, refused on a replica, judged once more after a sync).
    expect(runs).toBeGreaterThanOrEqual(2);
    expect((err as { code?: string }).code).toBe("VALIDATION_ERROR");
    const got = (await s.ok("get_plan", { plan_id: plan.plan_id }, o.key)).plan;
    expect([got.state, got.chosen_option_id, got.options.length]).toEqual(["proposed", null, 1]);
  });

  test("a contact request accepted while its sender blocks the one accepting: the block stands", async () => {
    const [a, b] = await Promise.all([s.register("wc-ct-a"), s.register("wc-ct-b")]);
    await s.ok("add_contact", { handle: b.handle, idempotency_key: key() }, a.key);
    let runs = 0;
    const err = await s.server.db
      .tx(async (tx) => {
        runs++;
        await respondContactRequest({ tx, now: s.clock.now(), actor: { agentId: b.agent_id, handle: b.handle } }, a.handle, "accept");
        // Blocked by the sender after this answer read the request, before its batch.
        if (runs === 1) await s.ok("block_contact", { handle: b.handle, idempotency_key: key() }, a.key);
      })
      .catch((e: unknown) => e);
    // Run again after the guard failed (and, refused on a replica, judged once more after a sync).
    expect(runs).toBeGreaterThanOrEqual(2);
    expect((err as { code?: string }).code).toBe("NOT_FOUND");
    const blocked = (await s.ok("list_contacts", { state: "blocked" }, a.key)).contacts.map((c: any) => c.agent.handle);
    expect(blocked).toEqual([b.handle]);
  });

  test("an expense judged within the totals' bound while another takes them to it: it runs again and is refused", async () => {
    const [a, b] = await s.contacts("wc-lim-a", "wc-lim-b");
    const { group } = await s.ok("open_direct_ledger", { handle: b.handle, currency: "EUR" }, a.key);
    const max = "9999999999999.99";
    const toB = { group_id: group.group_id, description: "Big", amount: max, split: { mode: "exact", among: [{ handle: b.handle, value: max }] } };
    // 9 of the largest amount fit under the bound (2^53 - 1 minor units); 8 first, then two at the same moment.
    for (let i = 0; i < 8; i++) await s.ok("add_expense", { ...toB, idempotency_key: key() }, a.key);
    let runs = 0;
    const err = await s.server.db
      .tx(async (tx) => {
        runs++;
        await addExpense({ tx, now: s.clock.now(), actor: { agentId: a.agent_id, handle: a.handle } }, toB as never);
        // The ninth, by another call, after this one judged the totals and before its batch.
        if (runs === 1) await s.ok("add_expense", { ...toB, idempotency_key: key() }, a.key);
      })
      .catch((e: unknown) => e);
    // Run again after the guard failed (and, refused on a replica, judged once more after a sync).
    expect(runs).toBeGreaterThanOrEqual(2);
    expect((err as { code?: string }).code).toBe("CONFLICT");
    expect((await s.ok("list_expenses", { group_id: group.group_id }, a.key)).expenses).toHaveLength(9);
  });

  test("changes to one expense at the same moment from the same version: one is made, the others are refused", async () => {
    const [a, b] = await Promise.all([s.register("wc-c"), s.register("wc-d")]);
    const { group } = await s.ok("create_group", { name: "Versions", currency: "EUR", idempotency_key: key() }, a.key);
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id, max_uses: 5, idempotency_key: key() }, a.key);
    await s.ok("join_group", { invite_code: invite.code, idempotency_key: key() }, b.key);
    const { expense } = await s.ok("add_expense", { group_id: group.group_id, description: "Taxi", amount_minor: 1000, idempotency_key: key() }, a.key);
    const amounts = [1100, 1200, 1300, 1400];
    const answers = await Promise.all(
      amounts.map((amount_minor) =>
        s.call("update_expense", { expense_id: expense.expense_id, expected_version: 1, amount_minor, idempotency_key: key() }, a.key),
      ),
    );
    // Each read version 1; the one that commits first makes version 2, and the others find it changed.
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    const { history } = await s.ok("get_expense", { expense_id: expense.expense_id }, a.key);
    expect(history.map((h: any) => h.version)).toEqual([1, 2]);
    const balances = (await s.ok("get_balances", { group_id: group.group_id }, a.key)).members.map((m: any) => m.balance_minor);
    expect(balances.reduce((x: number, y: number) => x + y, 0)).toBe(0);
    // The last version counts, half of it each.
    const last = history.at(-1).expense.amount_minor;
    expect(amounts).toContain(last);
    expect(Math.max(...balances)).toBe(last / 2);
  });

  test("a credential revoked while a write call runs writes nothing: its batch's guard refuses it", async () => {
    const a = await s.register("wc-revoked");
    const db = s.server.db;
    const [client] = (
      await db.raw.execute({
        sql: "SELECT client_id, agent_id FROM clients WHERE agent_id = (SELECT agent_id FROM agents WHERE handle = ?)",
        args: ["wc-revoked"],
      })
    ).rows;
    const principal = { agentId: String(client!.agent_id), clientId: String(client!.client_id) } as Parameters<typeof guardCredential>[1];
    const displayName = () => db.read((tx) => scalar<string>(tx, sql`SELECT display_name FROM agents WHERE agent_id = ${principal.agentId}`));
    let revoked = false;
    const err = await db
      .tx(async (tx) => {
        await guardCredential(tx, principal, null);
        await tx.run(sql`UPDATE agents SET display_name = 'Written anyway' WHERE agent_id = ${principal.agentId}`);
        // Disconnected after the call authenticated it, before its batch commits.
        if (!revoked)
          await db.tx((other) => other.run(sql`UPDATE clients SET revoked_at = '2026-11-22T12:00:00.000Z' WHERE client_id = ${principal.clientId}`));
        revoked = true;
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteConflict);
    expect(await displayName()).not.toBe("Written anyway");
    expect((await s.call("get_me", {}, a.key)).status).toBe(401);
  });

  test("an API key rotated while a write call runs writes nothing as it was: its batch's guard holds the key as read", async () => {
    const a = await s.register("wc-rotated");
    const db = s.server.db;
    const hash = sha256(a.key);
    const [row] = (await db.raw.execute({ sql: "SELECT client_id FROM api_keys WHERE key_hash = ?", args: [hash] })).rows;
    const principal = { agentId: a.agent_id, clientId: String(row!.client_id), kind: "api_key", graceUntil: null } as unknown as Parameters<
      typeof guardCredential
    >[1];
    let rotated = false;
    const err = await db
      .tx(async (tx) => {
        await guardCredential(tx, principal, hash);
        await tx.run(sql`UPDATE agents SET display_name = 'Written anyway' WHERE agent_id = ${a.agent_id}`);
        // Put in its rotation's grace after the call read it (as rotate_api_key does), before its batch commits.
        if (!rotated) await db.tx((other) => other.run(sql`UPDATE api_keys SET expires_at = '2026-11-23T12:00:00.000Z' WHERE key_hash = ${hash}`));
        rotated = true;
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteConflict);
    const name = await db.read((tx) => scalar<string>(tx, sql`SELECT display_name FROM agents WHERE agent_id = ${a.agent_id}`));
    expect(name).not.toBe("Written anyway");
  });
});
