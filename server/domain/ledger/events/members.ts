// What a group's events say of the group and its members, so that a member's server can build its copy from the
// events alone: a member by the home server's agent id with its handle and name, and its address when it is an agent
// of another server (null: an agent of the home server, whose address is its handle at the home's host).
import type { Tx } from "../../../../db/client.ts";
import type { GroupRow } from "../groups/membership.ts";
import { remoteOf } from "../../federation.ts";

export interface MemberData {
  agent_id: string;
  handle: string;
  display_name: string | null;
  role: "owner" | "member";
  address: string | null;
}

export interface GroupData {
  name: string;
  description: string | null;
  currency: string;
  kind: "group" | "direct";
  simplify_debts: boolean;
  archived: boolean;
  created_at: string;
}

export async function memberData(tx: Tx, m: { agent_id: string; handle: string; display_name: string | null }, role: "owner" | "member"): Promise<MemberData> {
  return { agent_id: m.agent_id, handle: m.handle, display_name: m.display_name, role, address: (await remoteOf(tx, m.agent_id))?.address ?? null };
}

export const groupData = (g: GroupRow): GroupData => ({
  name: g.name,
  description: g.description,
  currency: g.currency,
  kind: g.kind,
  simplify_debts: g.simplifyDebts,
  archived: g.archived,
  created_at: g.createdAt,
});
