// An account deleted on one server, with a contact on another: that server is told the contact ended (contact.remove,
// as remove_contact sends it); the other side keeps the mail it received. A member of groups kept on another server,
// or of its own server's groups with members there: those servers are told (account.deleted); there too it stays a
// former member with its balance, their members are told, and no group's events go to its server for it any more.
import { expect, test } from "bun:test";
import { connect, onFile, serversForFile, until, type FedServer } from "./servers.ts";

let A: FedServer;
let B: FedServer;
serversForFile(2, (s) => ([A, B] = s as [FedServer, FedServer]));

/** Deletes an account with the operator's command, on the server's database beside the running server. */
async function deleteUser(S: FedServer, handle: string) {
  const deleted = Bun.spawn(["bun", "run", "cli/main.ts", "users", "delete", handle, "--yes", "--json", "--db", `file:${S.db}`], {
    cwd: `${import.meta.dir}/../..`,
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(await deleted.exited).toBe(0);
  return JSON.parse(await new Response(deleted.stdout).text());
}

test("the contact on the other server ends; the mail it received stays", async () => {
  const cleo = await A.register("cleo");
  const ravi = await B.register("ravi");
  const { yOnX: raviOnA, xOnY: cleoOnB } = await connect(A, cleo, B, ravi);
  await A.ok("send_envelope", { to: [raviOnA], subject: "Before", body_md: "Still here." }, cleo.key);
  await until(
    () => B.ok("list_envelopes", { direction: "received" }, ravi.key),
    (d) => d.envelopes.length === 1,
  );

  // The operator of A deletes cleo (the admin command, on A's database beside the running server).
  expect(await deleteUser(A, "cleo")).toMatchObject({ handle: "cleo", contacts: 1 });

  await until(
    () => B.ok("list_contacts", {}, ravi.key),
    (d) => d.contacts.length === 0,
  );
  // ravi keeps the envelope he received; he can no longer write to cleo.
  expect((await B.ok("list_envelopes", { direction: "received" }, ravi.key)).envelopes).toHaveLength(1);
  expect((await B.call("send_envelope", { to: [cleoOnB], subject: "Hello?", body_md: "x" }, ravi.key)).status).toBe(404);
  expect((await A.call("get_me", {}, cleo.key)).status).toBe(401);
}, 60_000);

test("a member of groups on both servers: the other server keeps them as a former member, tells its members, and stops sending", async () => {
  const alice = await A.register("alice");
  const bob = await B.register("bob");
  const { yOnX: bobOnA, xOnY: aliceOnB } = await connect(A, alice, B, bob);
  /** A group made on S by its agent with the other server's agent invited, who accepts there. */
  const shared = async (S: FedServer, owner: { key: string }, O: FedServer, guest: { key: string }, alias: string, name: string) => {
    const { group } = await S.ok("create_group", { name, currency: "EUR" }, owner.key);
    await S.ok("create_group_invite", { group_id: group.group_id, handle: alias }, owner.key);
    const items = await until(
      () => O.ok("get_inbox", {}, guest.key).then((d) => d.items as any[]),
      (xs) => xs.some((i) => i.type === "group.invitation" && i.payload.group_id === group.group_id),
    );
    const invite = items.find((i) => i.type === "group.invitation" && i.payload.group_id === group.group_id);
    await O.ok("respond_group_invite", { invite_id: invite.refs.invite_id, action: "accept" }, guest.key);
    await until(
      () => O.call("get_group", { group_id: group.group_id }, guest.key),
      (r) => r.status === 200,
    );
    return group.group_id as string;
  };
  const onA = await shared(A, alice, B, bob, bobOnA, "Kept on A");
  const onB = await shared(B, bob, A, alice, aliceOnB, "Kept on B");
  // alice paid 30.00 on A's group, split between the two: bob owes 15.00 there.
  await A.ok("add_expense", { group_id: onA, description: "Dinner", amount: "30.00" }, alice.key);
  await until(
    () => B.ok("list_expenses", { group_id: onA }, bob.key),
    (d) => d.expenses.length === 1,
  );

  // Both groups live on, bob a former member in each: neither is "removed" in what the deletion reports.
  const report = await deleteUser(B, "bob");
  expect({ kept: report.kept.map((g: any) => g.group_id).sort(), removed: report.removed }).toEqual({ kept: [onA, onB].sort(), removed: [] });

  // A tells alice once, naming both groups she shares with him (the one it keeps and its copy of B's), with his balance.
  const notice = await until(
    () => A.ok("get_inbox", {}, alice.key).then((d) => (d.items as any[]).filter((i) => i.type === "network.account_deleted")),
    (xs) => xs.length > 0,
  );
  expect(notice).toHaveLength(1);
  expect(notice[0].payload.handle).toBe(bobOnA);
  const groups = Object.fromEntries((notice[0].payload.groups as any[]).map((g) => [g.group_id, g.their_balance_minor]));
  expect(groups).toEqual({ [onA]: -1500, [onB]: 0 });
  expect(notice[0].summary_md).toContain(`deleted their account on their server (${B.host})`);

  // On A he stays a member with his balance; the balances still sum to zero.
  const members = (await A.ok("get_group", { group_id: onA }, alice.key)).group.members as any[];
  expect(members.map((m) => m.balance_minor).sort()).toEqual([-1500, 1500]);

  // B kept its copy of A's group for bob alone: it goes. Its own group stays, bob a former member there.
  const kept = (id: string) => onFile(B, (db) => db.query("SELECT count(*) AS n FROM groups WHERE group_id = ?").get(id) as { n: number }).n;
  expect([kept(onA), kept(onB)]).toEqual([0, 1]);

  // A's next expense in its group goes to no other server: nobody on B reads it any more.
  const toB = () => onFile(A, (db) => db.query("SELECT count(*) AS n FROM federation_outbox WHERE destination = ?").get(B.host) as { n: number }).n;
  const before = toB();
  await A.ok("add_expense", { group_id: onA, description: "Taxi", amount: "10.00" }, alice.key);
  expect(toB()).toBe(before);
  // Nothing A sent B about it was refused: alice is told of nothing undelivered once A's outbox is empty.
  await until(
    async () =>
      onFile(A, (db) => db.query("SELECT count(*) AS n FROM federation_outbox WHERE destination = ? AND sent_at IS NULL").get(B.host) as { n: number }).n,
    (n) => n === 0,
  );
  const items = (await A.ok("get_inbox", { since: "0", include_seen: true, limit: 100 }, alice.key)).items as any[];
  expect(items.filter((i) => i.type === "network.undelivered")).toEqual([]);
}, 90_000);
