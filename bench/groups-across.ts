// A group across servers on loopback: a member of another server's add_expense (sent to the group's home and
// answered with its events) against a local member's, and a read of the member server's copy against a read of a
// group kept there. Sequential calls, one at a time, the two compared taken turn about: latency, not throughput. Two
// `svc serve` processes (one worker each).
//   bun run bench/groups-across.ts [calls]
import { connect, startServers, until } from "../test/federation/servers.ts";

const n = Number(process.argv[2] ?? 100);
// The per-origin limits lifted: the bench sends more writes a minute than a friend's server would.
const { servers, close } = await startServers(2, [], { flags: ["--federation-limits", "txns=1000000,events=1000000,txns_per_address=1000000"] });
const [A, B] = servers as [(typeof servers)[0], (typeof servers)[0]];
try {
  const alice = await A.register("alice");
  const bob = await B.register("bob");
  const { yOnX: bobOnA } = await connect(A, alice, B, bob);
  const { group } = await A.ok("create_group", { name: "Across", currency: "EUR" }, alice.key);
  const g = group.group_id;
  await A.ok("create_group_invite", { group_id: g, handle: bobOnA }, alice.key);
  const items = await until(
    () => B.ok("get_inbox", {}, bob.key).then((d) => d.items as any[]),
    (xs) => xs.some((i) => i.type === "group.invitation"),
  );
  await B.ok("respond_group_invite", { invite_id: items.find((i) => i.type === "group.invitation").refs.invite_id, action: "accept" }, bob.key);
  await until(
    () => B.call("get_group", { group_id: g }, bob.key),
    (r) => r.status === 200,
  );
  // A group kept on B, as large (two members, as many expenses), for the local read.
  const carl = await B.register("carl");
  const { group: local } = await B.ok("create_group", { name: "Local", currency: "EUR" }, bob.key);
  const { invite } = await B.ok("create_group_invite", { group_id: local.group_id, max_uses: 1 }, bob.key);
  await B.ok("join_group", { invite_code: invite.code }, carl.key);

  const stats = (ms: number[]) => {
    ms.sort((x, y) => x - y);
    return { median: ms[Math.floor(ms.length / 2)]!, p90: ms[Math.floor(ms.length * 0.9)]! };
  };
  const timed = async (f: () => Promise<unknown>) => {
    const t = performance.now();
    await f();
    return performance.now() - t;
  };
  const time = async (f: () => Promise<unknown>) => {
    const ms: number[] = [];
    for (let i = 0; i < n; i++) ms.push(await timed(f));
    return stats(ms);
  };
  // Two calls taken turn about, so that a drift of the machine's speed (2 cores shared) weighs on both alike.
  const inTurns = async (f: () => Promise<unknown>, h: () => Promise<unknown>) => {
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < n; i++) {
      a.push(await timed(f));
      b.push(await timed(h));
    }
    return [stats(a), stats(b)] as const;
  };
  const add = (S: typeof A, key: string, groupId: string) => () => S.ok("add_expense", { group_id: groupId, description: "Coffee", amount: "3.00" }, key);
  // Alone (the home sends nothing to B meanwhile), then taken turn about (A's events for B arrive as B writes).
  const localAlone = await time(add(A, alice.key, g));
  const remoteAlone = await time(add(B, bob.key, g));
  const [localAdd, remoteAdd] = await inTurns(add(A, alice.key, g), add(B, bob.key, g));
  for (let i = 0; i < 2; i++) {
    await time(add(B, bob.key, local.group_id));
    await time(add(B, carl.key, local.group_id));
  }
  await until(
    () => B.ok("get_group", { group_id: g }, bob.key),
    (d) => d.as_of_seq >= 4 * n + 3,
  );
  const [copyRead, localRead] = await inTurns(
    () => B.ok("get_balances", { group_id: g }, bob.key),
    () => B.ok("get_balances", { group_id: local.group_id }, bob.key),
  );
  const row = (what: string, r: { median: number; p90: number }) =>
    console.log(`${what.padEnd(52)} median ${r.median.toFixed(2)} ms, p90 ${r.p90.toFixed(2)} ms`);
  row("add_expense, a member of the home server, alone", localAlone);
  row("add_expense, a member of another server, alone", remoteAlone);
  console.log(`  ratio of medians ${(remoteAlone.median / localAlone.median).toFixed(2)} (target <= 2)`);
  row("add_expense, a member of the home server", localAdd);
  row("add_expense, a member of another server (sent home)", remoteAdd);
  console.log(`  ratio of medians ${(remoteAdd.median / localAdd.median).toFixed(2)} (target <= 2)`);
  row(`get_balances of the copy (${4 * n} expenses)`, copyRead);
  row(`get_balances of a group kept there (${4 * n} expenses)`, localRead);
  console.log(`  ratio of medians ${(copyRead.median / localRead.median).toFixed(2)} (target ~1)`);
  if (process.env.PROBE) {
    const grab = (t: string, k: string) =>
      t
        .split("\n")
        .filter((l) => l.startsWith(k))
        .slice(-20)
        .join("\n");
    console.log(grab(B.proc.output(), "FWD"));
    console.log(grab(A.proc.output(), "HOME"));
  }
} finally {
  await close();
}
