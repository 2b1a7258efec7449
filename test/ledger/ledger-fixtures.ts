// Groups of registered agents for the ledger's tests, made through the real group tools.
import { findTool } from "../../server/tools/catalogue.ts";
import type { Agent, TestServer } from "../harness.ts";

export interface TestGroup {
  group_id: string;
  members: Agent[];
  /** Members by handle. */
  by: Record<string, Agent>;
}

/** Registers `handles` (the first owns the group) and has the others join through a shareable invite code. */
export async function groupWith(s: TestServer, handles: string[], currency = "EUR", name = "Trip"): Promise<TestGroup> {
  const members: Agent[] = [];
  for (const h of handles) members.push(await s.register(h));
  return groupOf(s, members, currency, name);
}

/** A new group of already registered agents. */
export async function groupOf(s: TestServer, members: Agent[], currency = "EUR", name = "Trip"): Promise<TestGroup> {
  const [owner, ...others] = members;
  const { group } = await s.ok("create_group", { name, currency }, owner!.key);
  if (others.length) {
    const { invite } = await s.ok("create_group_invite", { group_id: group.group_id, max_uses: 1000 }, owner!.key);
    for (const m of others) await s.ok("join_group", { invite_code: invite.code }, m.key);
  }
  return { group_id: group.group_id, members, by: Object.fromEntries(members.map((m) => [m.handle, m])) };
}

/** Every inbox item of an agent (seen or not), oldest first, without moving its read cursor. */
export async function inboxItems(s: TestServer, key: string, type?: string): Promise<any[]> {
  const items = (await s.ok("get_inbox", { since: "0", include_seen: true, limit: 100 }, key)).items;
  return type === undefined ? items : items.filter((i: any) => i.type === type);
}

/** Balances of a group by handle. */
export async function balancesOf(s: TestServer, key: string, groupId: string): Promise<Record<string, number>> {
  const b = await s.ok("get_balances", { group_id: groupId }, key);
  return Object.fromEntries(b.members.map((m: any) => [m.agent.handle, m.balance_minor]));
}

/** The error code and first issue path of a failed call. */
export async function failure(s: TestServer, tool: string, args: Record<string, unknown>, key: string) {
  const r = await s.call(tool, findTool(tool)?.idempotent ? { idempotency_key: `k-${crypto.randomUUID()}`, ...args } : args, key);
  if (r.status === 200) throw new Error(`${tool} succeeded but should have failed: ${JSON.stringify(r.body.data)}`);
  return {
    status: r.status,
    code: r.body.error.code as string,
    path: (r.body.error.details?.issues?.[0]?.path ?? null) as string | null,
    message: r.body.error.message as string,
    details: r.body.error.details,
  };
}

/**
 * The fewest transfers by brute force, independent of fewest-transfers.ts: someone with a balance left settles with each
 * member of the opposite sign in turn (some optimal plan settles someone fully in each transfer).
 */
export function bruteForceFewest(values: number[]): number {
  const left = values.filter((v) => v !== 0);
  const search = (i: number): number => {
    while (i < left.length && left[i] === 0) i++;
    if (i === left.length) return 0;
    let best = Infinity;
    for (let j = i + 1; j < left.length; j++) {
      if (left[j]! * left[i]! >= 0) continue;
      left[j]! += left[i]!;
      best = Math.min(best, 1 + search(i + 1));
      left[j]! -= left[i]!;
    }
    return best;
  };
  return search(0);
}
