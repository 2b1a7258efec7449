// Groups across servers (docs/federation.md, "The ledger across servers"): a group kept on A with members on B and
// C. A orders every ledger event; B and C keep a read copy fed by A's events, checked on arrival, and answer reads
// from it locally.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, onFile, startServers, until, type FedServer } from "./servers.ts";
import { startFakePeer, type FakePeer } from "./fake-peer.ts";
import { McpSession } from "../hardening/transports.ts";
import { canonical, sha256, verifyChain } from "../../server/domain/ledger/events/chain.ts";

let close: () => Promise<void>;
let A: FedServer;
let B: FedServer;
let C: FedServer;
/** A server of no group's: what it sends about a group is not its home's. */
let F: FakePeer;

beforeAll(async () => {
  F = await startFakePeer();
  const started = await startServers(3, [F.host]);
  [A, B, C] = started.servers as [FedServer, FedServer, FedServer];
  close = started.close;
}, 60_000);
afterAll(async () => {
  await close?.();
  F?.stop();
});

const chainOf = (S: FedServer, g: string) =>
  onFile(
    S,
    (db) => db.query("SELECT seq, body, hash FROM group_events WHERE group_id = ? ORDER BY seq").all(g) as { seq: number; body: string; hash: string }[],
  );

/** Each member's balance on a server, by address (handle@host), so that servers' answers compare. */
async function balancesOn(S: FedServer, key: string, groupId: string): Promise<Record<string, number>> {
  const d = await S.ok("get_balances", { group_id: groupId }, key);
  const out: Record<string, number> = {};
  for (const m of d.members) {
    if (m.member.agent === null) {
      out[`placeholder ${m.member.name}`] = m.balance_minor;
      continue;
    }
    const name: string = m.member.agent.display_name;
    const address = /\(([^)]+@[^)]+)\)$/.exec(name)?.[1] ?? `${m.member.agent?.handle}@${S.host}`;
    out[address] = m.balance_minor;
  }
  return out;
}

/** Every item of an agent's inbox, seen or not, from the first. */
const itemsOf = (S: FedServer, key: string) => S.ok("get_inbox", { since: "0", include_seen: true, limit: 100 }, key).then((d) => d.items as any[]);

async function joinFrom(S: FedServer, who: { key: string }, groupId: string): Promise<void> {
  const items = await until(
    () => itemsOf(S, who.key),
    (xs) => xs.some((i) => i.type === "group.invitation" && i.refs.group_id === groupId),
  );
  const item = items.find((i) => i.type === "group.invitation" && i.refs.group_id === groupId);
  expect(item.refs.home).toBe(A.host);
  const res = await S.ok("respond_group_invite", { invite_id: item.refs.invite_id, action: "accept" }, who.key);
  expect(res.group).toBeNull();
  await until(
    () => S.call("get_group", { group_id: groupId }, who.key),
    (r) => r.status === 200,
  );
}

describe("a group on A with members on B and C", () => {
  test("members of other servers join by invitation, and every server's balances agree after each step", async () => {
    const alice = await A.register("alice");
    const bob = await B.register("bob");
    const carol = await C.register("carol");
    const { yOnX: bobOnA } = await connect(A, alice, B, bob);
    const { yOnX: carolOnA } = await connect(A, alice, C, carol);
    const { group } = await A.ok("create_group", { name: "Lisbon", currency: "EUR" }, alice.key);
    const g = group.group_id;
    await A.ok("create_group_invite", { group_id: g, handle: bobOnA }, alice.key);
    await A.ok("create_group_invite", { group_id: g, handle: carolOnA }, alice.key);
    await joinFrom(B, bob, g);
    await joinFrom(C, carol, g);
    const onA = await A.ok("get_group", { group_id: g }, alice.key);
    expect(onA.group.members).toHaveLength(3);

    const agree = async () => {
      const want = await balancesOn(A, alice.key, g);
      expect(Object.values(want).reduce((x, y) => x + y, 0)).toBe(0);
      await until(
        () => balancesOn(B, bob.key, g),
        (got) => JSON.stringify(got) === JSON.stringify(want),
      );
      await until(
        () => balancesOn(C, carol.key, g),
        (got) => JSON.stringify(got) === JSON.stringify(want),
      );
      return want;
    };
    const { expense: dinner } = await A.ok("add_expense", { group_id: g, description: "Dinner", amount: "90.00" }, alice.key);
    expect(await agree()).toEqual({ [`alice@${A.host}`]: 6000, [`bob@${B.host}`]: -3000, [`carol@${C.host}`]: -3000 });
    // Bob's own server asks him to confirm, as a local member is asked; his answer goes to A and resolves the item.
    const toConfirm = await until(
      () => itemsOf(B, bob.key),
      (xs) => xs.some((i) => i.type === "ledger.expense_added" && i.refs.expense_id === dinner.expense_id),
    );
    expect(toConfirm.find((i) => i.type === "ledger.expense_added").requires_action).toBe(true);
    await B.ok("respond_expense", { expense_id: dinner.expense_id, action: "confirm" }, bob.key);
    const after = await itemsOf(B, bob.key);
    expect(after.find((i) => i.type === "ledger.expense_added" && i.refs.expense_id === dinner.expense_id).resolved).toBe(true);

    // Bob, on B, adds an expense: it is made on A, and B's answer names the members as B does.
    const carolOnB = (await B.ok("get_group", { group_id: g }, bob.key)).group.members.find((m: any) => m.agent.display_name.includes(`carol@${C.host}`)).agent
      .handle;
    const { expense: taxi } = await B.ok(
      "add_expense",
      {
        group_id: g,
        description: "Taxi",
        amount: "30.00",
        split: {
          mode: "exact",
          among: [
            { handle: "bob", value: "10.00" },
            { handle: carolOnB, value: "20.00" },
          ],
        },
      },
      bob.key,
    );
    expect(taxi.created_by.handle).toBe("bob");
    expect(taxi.paid_by[0].handle).toBe("bob");
    // B applied A's events before answering: bob reads his own expense at once.
    expect((await B.ok("get_expense", { expense_id: taxi.expense_id }, bob.key)).expense.amount_minor).toBe(3000);
    expect(await agree()).toEqual({ [`alice@${A.host}`]: 6000, [`bob@${B.host}`]: -1000, [`carol@${C.host}`]: -5000 });

    // Carol, on C, disputes it, then pays Alice; Alice confirms on A.
    await until(
      () => C.call("get_expense", { expense_id: taxi.expense_id }, carol.key),
      (r) => r.status === 200,
    );
    const disputed = await C.ok("respond_expense", { expense_id: taxi.expense_id, action: "dispute", reason: "I walked" }, carol.key);
    expect(disputed.expense.state).toBe("disputed");
    await until(
      () => B.ok("get_expense", { expense_id: taxi.expense_id }, bob.key),
      (d) => d.expense.state === "disputed",
    );
    // Bob made it: his own server tells him of the dispute, with carol's reason as untrusted text.
    const told = (await itemsOf(B, bob.key)).find((i) => i.type === "ledger.expense_disputed" && i.refs.expense_id === taxi.expense_id);
    expect(told.note.untrusted_content).toBe("I walked");
    const aliceOnC = (await C.ok("get_group", { group_id: g }, carol.key)).group.members.find((m: any) => m.agent.display_name.includes(`alice@${A.host}`))
      .agent.handle;
    const { payment } = await C.ok("record_payment", { group_id: g, to: aliceOnC, amount: "50.00" }, carol.key);
    expect(payment.state).toBe("pending");
    await until(
      () => A.ok("list_payments", { group_id: g }, alice.key),
      (d) => d.payments.some((p: any) => p.payment_id === payment.payment_id),
    );
    await A.ok("respond_payment", { payment_id: payment.payment_id, action: "confirm" }, alice.key);
    expect(await agree()).toEqual({ [`alice@${A.host}`]: 1000, [`bob@${B.host}`]: -1000, [`carol@${C.host}`]: 0 });
    await until(
      () => itemsOf(C, carol.key),
      (xs) => xs.some((i) => i.type === "ledger.payment_confirmed" && i.refs.payment_id === payment.payment_id),
    );

    // Bob pays Alice back, recorded by him on B; Alice confirms on A, and bob hears of it on B.
    const aliceOnB = (await B.ok("get_group", { group_id: g }, bob.key)).group.members.find((m: any) => m.agent.display_name.includes(`alice@${A.host}`)).agent
      .handle;
    const { payment: back } = await B.ok("record_payment", { group_id: g, to: aliceOnB, amount: "10.00" }, bob.key);
    expect(back).toMatchObject({ state: "pending" });
    const item = await until(
      () => itemsOf(A, alice.key),
      (xs) => xs.some((i) => i.type === "ledger.payment_to_confirm" && i.refs.payment_id === back.payment_id),
    );
    expect(item.length).toBeGreaterThan(0);
    await A.ok("respond_payment", { payment_id: back.payment_id, action: "confirm" }, alice.key);
    expect(await agree()).toEqual({ [`alice@${A.host}`]: 0, [`bob@${B.host}`]: 0, [`carol@${C.host}`]: 0 });
    await until(
      () => itemsOf(B, bob.key),
      (xs) => xs.some((i) => i.type === "ledger.payment_confirmed" && i.refs.payment_id === back.payment_id),
    );
  }, 60_000);
});

/** A tool call with the caller's own idempotency key (FedServer.call makes a new one each time). */
async function withKey(S: FedServer, tool: string, args: Record<string, unknown>, idempotencyKey: string, key: string) {
  const res = await fetch(`${S.url}/v1/tools/${tool}`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": idempotencyKey, authorization: `Bearer ${key}` },
    body: JSON.stringify(args),
  });
  return { status: res.status, body: (await res.json()) as any };
}

interface Trip {
  g: string;
  alice: { key: string };
  bob: { key: string };
  carol: { key: string };
  /** Each one's handle on each server. */
  on: { A: Record<string, string>; B: Record<string, string> };
}

/** A group on A (alice's) with bob of B and carol of C as members, each agent made for this test. */
async function tripOnA(tag: string): Promise<Trip> {
  const alice = await A.register(`alice${tag}`);
  const bob = await B.register(`bob${tag}`);
  const carol = await C.register(`carol${tag}`);
  const { yOnX: bobOnA } = await connect(A, alice, B, bob);
  const { yOnX: carolOnA } = await connect(A, alice, C, carol);
  const { group } = await A.ok("create_group", { name: `Trip ${tag}`, currency: "EUR" }, alice.key);
  const g = group.group_id;
  await A.ok("create_group_invite", { group_id: g, handle: bobOnA }, alice.key);
  await A.ok("create_group_invite", { group_id: g, handle: carolOnA }, alice.key);
  await joinFrom(B, bob, g);
  await joinFrom(C, carol, g);
  const members = (
    await until(
      () => B.ok("get_group", { group_id: g }, bob.key),
      (d) => d.group.members.length === 3,
    )
  ).group.members as any[];
  const onB = (who: string) => members.find((m) => m.agent.display_name.includes(`${who}${tag}@`))?.agent.handle ?? `${who}${tag}`;
  return {
    g,
    alice,
    bob,
    carol,
    on: { A: { alice: `alice${tag}`, bob: bobOnA, carol: carolOnA }, B: { alice: onB("alice"), bob: `bob${tag}`, carol: onB("carol") } },
  };
}

/** The balances on A, once B and C show the same; they sum to zero. */
async function agreeOn(t: Trip): Promise<Record<string, number>> {
  const want = await balancesOn(A, t.alice.key, t.g);
  expect(Object.values(want).reduce((x, y) => x + y, 0)).toBe(0);
  for (const [S, who] of [
    [B, t.bob],
    [C, t.carol],
  ] as const) {
    await until(
      () => balancesOn(S, who.key, t.g),
      (got) => JSON.stringify(got) === JSON.stringify(want),
    );
  }
  return want;
}

describe("the ledger across servers, step by step", () => {
  test("every split mode, with payers and shares on other servers, made on A and on B", async () => {
    const t = await tripOnA("s");
    const [a, b, c] = [t.on.A.alice!, t.on.A.bob!, t.on.A.carol!];
    const onA = [
      {
        split: { mode: "equal" },
        paid_by: [
          { handle: a, amount: "20.00" },
          { handle: b, amount: "10.00" },
        ],
      },
      {
        split: {
          mode: "exact",
          among: [
            { handle: b, value: "5.00" },
            { handle: c, value: "25.00" },
          ],
        },
        paid_by: [{ handle: c, amount: "30.00" }],
      },
      {
        split: {
          mode: "percent",
          among: [
            { handle: a, value: "50" },
            { handle: b, value: "25" },
            { handle: c, value: "25" },
          ],
        },
        paid_by: [{ handle: b, amount: "30.00" }],
      },
      {
        split: {
          mode: "shares",
          among: [
            { handle: a, value: 1 },
            { handle: c, value: 2 },
          ],
        },
        paid_by: [
          { handle: b, amount: "15.00" },
          { handle: c, amount: "15.00" },
        ],
      },
      { split: { mode: "adjustment", among: [{ handle: a, value: "3.00" }, { handle: b, value: "-1.00" }, { handle: c }] } },
    ];
    for (const [i, x] of onA.entries()) await A.ok("add_expense", { group_id: t.g, description: `On A ${i}`, amount: "30.00", ...x }, t.alice.key);
    await agreeOn(t);
    const [ab, bb, cb] = [t.on.B.alice!, t.on.B.bob!, t.on.B.carol!];
    const onB = [
      {
        split: { mode: "equal" },
        paid_by: [
          { handle: ab, amount: "7.00" },
          { handle: bb, amount: "2.00" },
        ],
      },
      {
        split: {
          mode: "exact",
          among: [
            { handle: ab, value: "4.00" },
            { handle: cb, value: "5.00" },
          ],
        },
      },
      {
        split: {
          mode: "percent",
          among: [
            { handle: bb, value: "33.34" },
            { handle: cb, value: "66.66" },
          ],
        },
        paid_by: [{ handle: cb, amount: "9.00" }],
      },
      {
        split: {
          mode: "shares",
          among: [
            { handle: ab, value: 3 },
            { handle: bb, value: 1 },
          ],
        },
      },
      {
        split: { mode: "adjustment", among: [{ handle: ab, value: "1.00" }, { handle: bb }, { handle: cb, value: "-1.00" }] },
        paid_by: [{ handle: ab, amount: "9.00" }],
      },
    ];
    for (const [i, x] of onB.entries()) {
      const { expense } = await B.ok("add_expense", { group_id: t.g, description: `On B ${i}`, amount: "9.00", ...x }, t.bob.key);
      // The answer names the members as B does.
      for (const p of expense.paid_by) expect([ab, bb, cb]).toContain(p.handle);
    }
    const balances = await agreeOn(t);
    expect(Object.values(balances).some((v) => v !== 0)).toBe(true);
    // The same chain of events on all three servers.
    const chain = chainOf(A, t.g);
    expect(verifyChain(t.g, chain)).toBeNull();
    await until(
      async () => chainOf(B, t.g).map((e) => e.hash),
      (hashes) => JSON.stringify(hashes) === JSON.stringify(chain.map((e) => e.hash)),
    );
  }, 90_000);

  test("A down: B and C answer reads from their copies, writes answer 503; once A is back nothing diverges, and a retried key replays", async () => {
    const t = await tripOnA("d");
    await A.ok("add_expense", { group_id: t.g, description: "Before", amount: "12.00" }, t.alice.key);
    const before = await agreeOn(t);
    const seq = (await A.ok("get_group", { group_id: t.g }, t.alice.key)).as_of_seq;
    await A.proc.stop();
    try {
      const read = await B.ok("get_balances", { group_id: t.g }, t.bob.key);
      expect(read.as_of_seq).toBe(seq);
      expect((await C.ok("list_expenses", { group_id: t.g }, t.carol.key)).expenses).toHaveLength(1);
      const key = `retry-${crypto.randomUUID()}`;
      const args = { group_id: t.g, description: "While A is down", amount: "6.00" };
      const down = await withKey(B, "add_expense", args, key, t.bob.key);
      expect(down.status).toBe(503);
      expect(down.body.error).toMatchObject({ code: "STORAGE_UNAVAILABLE", details: { home: A.host } });
      expect(down.body.error.retry_after).toBeGreaterThan(0);
      const stale = await B.ok("get_group", { group_id: t.g }, t.bob.key);
      expect(stale.home).toMatchObject({ host: A.host, stale: false });
      expect(stale.home.unreachable_since).not.toBeNull();
      expect(await balancesOn(B, t.bob.key, t.g)).toEqual(before);
      await A.restart();
      const first = await withKey(B, "add_expense", args, key, t.bob.key);
      const again = await withKey(B, "add_expense", args, key, t.bob.key);
      expect(first.status).toBe(200);
      expect(again.body.data.expense.expense_id).toBe(first.body.data.expense.expense_id);
      // The same key through another path (MCP, on B) replays too: the home keeps the answer, for bob's row there.
      const mcp = await McpSession.connect(B.url, t.bob.key);
      const overMcp = await mcp.call("add_expense", { ...args, idempotency_key: key });
      await mcp.close();
      expect(overMcp.status).toBe(200);
      expect(overMcp.body.expense.expense_id).toBe(first.body.data.expense.expense_id);
      expect((await A.ok("list_expenses", { group_id: t.g }, t.alice.key)).expenses).toHaveLength(2);
      await agreeOn(t);
      expect((await B.ok("get_group", { group_id: t.g }, t.bob.key)).home.unreachable_since).toBeNull();
    } finally {
      if (A.proc.proc.exitCode !== null) await A.restart();
    }
  }, 90_000);

  test("B down while A records 20 events: B catches up, in order, on the same chain", async () => {
    const t = await tripOnA("c");
    await B.proc.stop();
    for (let i = 0; i < 20; i++) await A.ok("add_expense", { group_id: t.g, description: `Round ${i}`, amount: `${i + 1}.00` }, t.alice.key);
    await B.restart();
    await agreeOn(t);
    const chain = chainOf(A, t.g);
    const copy = await until(
      async () => chainOf(B, t.g),
      (c) => c.length === chain.length,
      30_000,
    );
    expect(copy.map((e) => e.seq)).toEqual(chain.map((e) => e.seq));
    expect(copy.map((e) => e.hash)).toEqual(chain.map((e) => e.hash));
    const got = await B.ok("list_expenses", { group_id: t.g, limit: 50 }, t.bob.key);
    expect(got.expenses).toHaveLength(20);
    expect(got.as_of_seq).toBe(chain.length);
  }, 90_000);

  test("a forged event is refused: one from a server that is not the group's home, one whose sums do not hold; nothing diverges", async () => {
    const t = await tripOnA("f");
    await A.ok("add_expense", { group_id: t.g, description: "First", amount: "10.00" }, t.alice.key);
    await agreeOn(t);
    const head = chainOf(B, t.g).at(-1)!;

    // Another server sends the group's next event, well formed and chained: it is not the group's home.
    const next = canonical({ ...JSON.parse(head.body), seq: head.seq + 1, prev_hash: head.hash, type: "group_updated", deltas: {}, data: null });
    const events = [
      {
        id: crypto.randomUUID(),
        type: "group.events",
        from: `mallory@${F.host}`,
        group_id: t.g,
        head_seq: head.seq + 1,
        events: [{ body: next, hash: sha256(next) }],
      },
    ];
    const sent = await F.send(B, { origin: F.host, destination: B.host, events });
    expect(sent.status).toBe(200);
    expect(JSON.parse(sent.text).results[0].result).toBe("rejected");
    expect(chainOf(B, t.g)).toHaveLength(head.seq);

    // The home's own transaction, altered on the way while B is away: an event whose balance changes no longer sum
    // to zero, sealed again so that its hash and its link hold.
    await B.proc.stop();
    await A.ok("add_expense", { group_id: t.g, description: "Second", amount: "20.00" }, t.alice.key);
    const pending = await until(
      async () => onFile(A, (db) => db.query("SELECT txn_id, body FROM federation_txns_out WHERE destination = ?").get(B.host) as { body: string } | null),
      (r) => r?.body.includes(t.g) === true,
    );
    const txn = JSON.parse(pending!.body);
    const altered = txn.events.find((e: any) => e.type === "group.events" && e.group_id === t.g);
    const body = JSON.parse(altered.events[0].body);
    body.deltas = { ...body.deltas, [Object.keys(body.deltas)[0]!]: "1" };
    altered.events[0] = { body: canonical(body), hash: sha256(canonical(body)) };
    onFile(A, (db) => db.query("UPDATE federation_txns_out SET body = ? WHERE destination = ?").run(JSON.stringify(txn), B.host));
    await B.restart();
    // B refuses it (A hears so), and keeps its copy as it was.
    await until(
      async () => onFile(A, (db) => db.query("SELECT undelivered FROM federation_outbox WHERE event_id = ?").get(altered.id) as { undelivered: number } | null),
      (r) => r?.undelivered === 1,
    );
    expect(chainOf(B, t.g).length).toBeLessThan(chainOf(A, t.g).length);
    // The next event shows B what it is missing; it asks A, and takes the true history.
    await A.ok("add_expense", { group_id: t.g, description: "Third", amount: "30.00" }, t.alice.key);
    await agreeOn(t);
    const chain = chainOf(A, t.g);
    await until(
      async () => chainOf(B, t.g).map((e) => e.hash),
      (hashes) => JSON.stringify(hashes) === JSON.stringify(chain.map((e) => e.hash)),
    );
    expect(verifyChain(t.g, chainOf(B, t.g))).toBeNull();
  }, 90_000);

  test("a placeholder on A, in the copies too, claimed by an agent on B; an invite code of A's used on C", async () => {
    const t = await tripOnA("p");
    const { invite } = await A.ok("create_group_invite", { group_id: t.g, name: "Dave" }, t.alice.key);
    const dave = invite.placeholder.member_id;
    await A.ok(
      "add_expense",
      { group_id: t.g, description: "Tickets", amount: "40.00", split: { mode: "equal", among: [{ handle: t.on.A.alice }, { handle: dave }] } },
      t.alice.key,
    );
    expect(await agreeOn(t)).toMatchObject({ [`alice${"p"}@${A.host}`]: 2000 });

    // Dave has an account on B, and takes his place with the claim code and A's host.
    const daveOnB = await B.register("davep");
    const claimed = await B.ok("join_group", { invite_code: `${invite.code}@${A.host}` }, daveOnB.key);
    expect(claimed).toMatchObject({ joined: true, group: { group_id: t.g } });
    expect(claimed.group.members.some((m: any) => m.agent?.handle === "davep")).toBe(true);
    const balances = await agreeOn(t);
    expect(balances[`davep@${B.host}`]).toBe(-2000);
    expect((await B.ok("get_balances", { group_id: t.g }, daveOnB.key)).members.find((m: any) => m.agent.handle === "davep").balance_minor).toBe(-2000);

    // Erin, on C, joins with an invite code of the group, given with A's host.
    const { invite: code } = await A.ok("create_group_invite", { group_id: t.g, max_uses: 2 }, t.alice.key);
    const erin = await C.register("erinp");
    // A host this server does not federate with is never asked: the code is unknown, as any unknown code.
    expect((await C.call("join_group", { invite_code: `${code.code}@127.0.0.1:9` }, erin.key)).status).toBe(404);
    const joined = await C.ok("join_group", { invite_code: `${code.code}@${A.host}` }, erin.key);
    expect(joined.joined).toBe(true);
    await C.ok("add_expense", { group_id: t.g, description: "Snacks", amount: "5.00" }, erin.key);
    const after = await agreeOn(t);
    expect(Object.keys(after)).toHaveLength(5);
  }, 90_000);

  test("create_group names a contact of another server; a member leaves from their server; a blocked server's member stays listed but cannot write", async () => {
    const alice = await A.register("alicem");
    const bob = await B.register("bobm");
    const carol = await C.register("carolm");
    const { yOnX: bobOnA } = await connect(A, alice, B, bob);
    const { yOnX: carolOnA } = await connect(A, alice, C, carol);
    const { group } = await A.ok("create_group", { name: "Flat", currency: "EUR", members: [bobOnA, carolOnA] }, alice.key);
    const g = group.group_id;
    await joinFrom(B, bob, g);
    await joinFrom(C, carol, g);

    // Bob leaves from B, with nothing owed: A and C see him go, and B answers as for any group he left.
    await B.ok("leave_group", { group_id: g }, bob.key);
    await until(
      () => C.ok("get_group", { group_id: g }, carol.key),
      (d) => d.group.members.length === 2,
    );
    expect((await A.ok("get_group", { group_id: g }, alice.key)).group.members).toHaveLength(2);
    expect((await B.call("get_group", { group_id: g }, bob.key)).status).toBe(404);

    // A blocks C's server: carol is still a member, but her writes are refused there, and nothing changes.
    const block = Bun.spawn(["bun", "run", "cli/main.ts", "federation", "block", C.host, "--db", `file:${A.db}`], {
      cwd: `${import.meta.dir}/../..`,
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await block.exited).toBe(0);
    const refused = await C.call("add_expense", { group_id: g, description: "Paint", amount: "8.00" }, carol.key);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("FORBIDDEN");
    const onA = await A.ok("get_group", { group_id: g }, alice.key);
    expect(onA.group.members.some((m: any) => m.agent.handle === carolOnA)).toBe(true);
    expect((await A.ok("list_expenses", { group_id: g }, alice.key)).expenses).toHaveLength(0);
    const unblock = Bun.spawn(["bun", "run", "cli/main.ts", "federation", "unblock", C.host, "--db", `file:${A.db}`], {
      cwd: `${import.meta.dir}/../..`,
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await unblock.exited).toBe(0);
  }, 90_000);

  test("a new member's server fetches a long history in pages; every read of the copy answers as the home does", async () => {
    const alice = await A.register("aliceh");
    const bob = await B.register("bobh");
    const { yOnX: bobOnA } = await connect(A, alice, B, bob);
    const { group } = await A.ok("create_group", { name: "Long", currency: "EUR" }, alice.key);
    const g = group.group_id;
    for (let i = 0; i < 55; i++)
      await A.ok("add_expense", { group_id: g, description: `Item ${i}`, amount: "2.00", category: i % 2 ? "food" : "transport" }, alice.key);
    await A.ok("create_group_invite", { group_id: g, handle: bobOnA }, alice.key);
    await joinFrom(B, bob, g);
    const head = (await A.ok("get_group", { group_id: g }, alice.key)).as_of_seq;
    expect(head).toBeGreaterThan(2 * 20);
    const copy = await until(
      () => B.ok("get_group", { group_id: g }, bob.key),
      (d) => d.as_of_seq === head,
      30_000,
    );
    expect(copy.home).toMatchObject({ host: A.host, unreachable_since: null, stale: false });
    expect(verifyChain(g, chainOf(B, g))).toBeNull();
    const both = async (tool: string, args: Record<string, unknown>) => [await A.ok(tool, args, alice.key), await B.ok(tool, args, bob.key)];
    const [aExp, bExp] = await both("list_expenses", { group_id: g, limit: 100 });
    expect(bExp.expenses.map((e: any) => [e.expense_id, e.amount_minor, e.category])).toEqual(
      aExp.expenses.map((e: any) => [e.expense_id, e.amount_minor, e.category]),
    );
    const [aAct, bAct] = await both("get_activity", { group_id: g, limit: 100 });
    expect(bAct.entries.map((e: any) => e.action)).toEqual(aAct.entries.map((e: any) => e.action));
    const [aSpent, bSpent] = await both("get_spending", { group_id: g, by: "category" });
    expect(bSpent.currencies).toEqual(aSpent.currencies);
    const [, bCsv] = await both("export_group", { group_id: g, format: "csv" });
    expect(bCsv.content.untrusted_content.split("Item ").length - 1).toBe(55);
    expect(bCsv.as_of_seq).toBe(head);
  }, 90_000);

  test("bob changes, deletes and restores his expense from B, and answers a payment there", async () => {
    const t = await tripOnA("u");
    const { expense } = await B.ok("add_expense", { group_id: t.g, description: "Ferry", amount: "12.00" }, t.bob.key);
    const changed = await B.ok("update_expense", { expense_id: expense.expense_id, expected_version: 1, amount: "15.00" }, t.bob.key);
    expect(changed.expense).toMatchObject({ version: 2, amount_minor: 1500 });
    const stale = await B.call("update_expense", { expense_id: expense.expense_id, expected_version: 1, amount: "16.00" }, t.bob.key);
    expect(stale.status).toBe(409);
    // The group's own settings too are changed at home, from any member's server.
    await B.ok("update_group", { group_id: t.g, name: "Renamed" }, t.bob.key);
    expect((await A.ok("get_group", { group_id: t.g }, t.alice.key)).group.name).toBe("Renamed");
    await until(
      () => C.ok("get_group", { group_id: t.g }, t.carol.key),
      (d) => d.group.name === "Renamed",
    );
    // What is not sent home is refused on the copy, never made there: a receipt stays on the server that holds it.
    const file = { expense_id: expense.expense_id, filename: "r.pdf", media_type: "application/pdf", content_base64: btoa("%PDF-1.4 receipt") };
    const refused = await B.call("add_attachment", file, t.bob.key);
    expect(refused.status).toBe(409);
    expect(refused.body.error.details.home).toBe(A.host);
    await B.ok("delete_expense", { expense_id: expense.expense_id }, t.bob.key);
    expect(await agreeOn(t)).toEqual({ [`aliceu@${A.host}`]: 0, [`bobu@${B.host}`]: 0, [`carolu@${C.host}`]: 0 });
    await B.ok("restore_expense", { expense_id: expense.expense_id }, t.bob.key);
    expect(await agreeOn(t)).toEqual({ [`aliceu@${A.host}`]: -500, [`bobu@${B.host}`]: 1000, [`carolu@${C.host}`]: -500 });
    // Alice pays bob on A; bob confirms on B; then voids it there.
    const { payment } = await A.ok("record_payment", { group_id: t.g, to: t.on.A.bob, amount: "5.00" }, t.alice.key);
    const item = await until(
      () => itemsOf(B, t.bob.key),
      (xs) => xs.some((i) => i.type === "ledger.payment_to_confirm" && i.refs.payment_id === payment.payment_id),
    );
    expect(item.find((i) => i.type === "ledger.payment_to_confirm").requires_action).toBe(true);
    const confirmed = await B.ok("respond_payment", { payment_id: payment.payment_id, action: "confirm" }, t.bob.key);
    expect(confirmed.payment.state).toBe("confirmed");
    expect(await agreeOn(t)).toEqual({ [`aliceu@${A.host}`]: 0, [`bobu@${B.host}`]: 500, [`carolu@${C.host}`]: -500 });
    await B.ok("respond_payment", { payment_id: payment.payment_id, action: "void" }, t.bob.key);
    expect(await agreeOn(t)).toEqual({ [`aliceu@${A.host}`]: -500, [`bobu@${B.host}`]: 1000, [`carolu@${C.host}`]: -500 });
  }, 90_000);
});
