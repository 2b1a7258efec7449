// A direct ledger with a contact of another server: kept on the server of the one who opens it, the contact invited
// there as to any group; once accepted, the contact's server keeps a copy, which open_direct_ledger there answers
// with, and both split costs from their own servers with the balances the same on both.
import { expect, test } from "bun:test";
import { connect, serversForFile, until, type FedServer } from "./servers.ts";

let A: FedServer;
let B: FedServer;
serversForFile(2, (s) => ([A, B] = s as [FedServer, FedServer]));

const balances = async (S: FedServer, key: string, groupId: string) =>
  ((await S.ok("get_balances", { group_id: groupId }, key)).members as any[]).map((m) => m.balance_minor).sort((x, y) => x - y);

test("a direct ledger across servers: opened on A, accepted on B, the same ledger from both", async () => {
  const alice = await A.register("alice");
  const bob = await B.register("bob");
  const { yOnX: bobOnA, xOnY: aliceOnB } = await connect(A, alice, B, bob);

  const opened = await A.ok("open_direct_ledger", { handle: bobOnA, currency: "EUR" }, alice.key);
  expect(opened).toMatchObject({ created: true, group: { kind: "direct", currency: "EUR" } });
  const g = opened.group.group_id as string;
  expect(opened.group.members.map((m: any) => m.agent?.handle)).toEqual(["alice"]);
  // Asked again: the same ledger, and the same invitation.
  expect(await A.ok("open_direct_ledger", { handle: bobOnA }, alice.key)).toMatchObject({ created: false, group: { group_id: g } });

  const invitations = await until(
    () => B.ok("get_inbox", {}, bob.key).then((d) => (d.items as any[]).filter((i) => i.type === "group.invitation")),
    (xs) => xs.length > 0,
  );
  expect(invitations).toHaveLength(1);
  expect(invitations[0].refs).toMatchObject({ group_id: g, home: A.host });
  await B.ok("respond_group_invite", { invite_id: invitations[0].refs.invite_id, action: "accept" }, bob.key);
  const copy = await until(
    () => B.call("get_group", { group_id: g }, bob.key),
    (r) => r.status === 200 && r.body.data.group.members.length === 2,
  );
  expect(copy.body.data.group.kind).toBe("direct");

  // From B, the direct ledger with alice is that copy, not a second ledger.
  expect(await B.ok("open_direct_ledger", { handle: aliceOnB, currency: "EUR" }, bob.key)).toMatchObject({ created: false, group: { group_id: g } });
  expect((await B.ok("list_groups", {}, bob.key)).groups.map((x: any) => x.group_id)).toEqual([g]);

  // alice pays 20.00 on A, bob 10.00 from B, each split in two: alice is owed 5.00 on both servers.
  await A.ok("add_expense", { group_id: g, description: "Groceries", amount: "20.00" }, alice.key);
  await B.ok("add_expense", { group_id: g, description: "Bread", amount: "10.00" }, bob.key);
  expect(await balances(A, alice.key, g)).toEqual([-500, 500]);
  await until(
    () => balances(B, bob.key, g),
    (b) => b[1] === 500,
  );
  expect(await balances(B, bob.key, g)).toEqual([-500, 500]);
}, 60_000);
