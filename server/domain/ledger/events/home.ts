// Where a group's truth is kept: on this server, or, for a group this server keeps a copy of, on its home server.
// A change to a copy is never made here (it would fork the group's one order of events): the call is sent to the
// home instead, outside any transaction (server/federation/forward.ts).
import { desc, eq } from "drizzle-orm";
import { snapshotOf, type Tx } from "../../../../db/client.ts";
import { oncePerCall } from "./per-call.ts";
import { groupEvents, groupHomes } from "../../../../db/schema/index.ts";

/**
 * Thrown by a write on a group kept on another server: the pipeline sends the call to that server. groupId null: a
 * code of a group there (join_group with code@host), whose group this server does not know yet.
 */
export class ToHome extends Error {
  constructor(
    readonly host: string,
    readonly groupId: string | null,
  ) {
    super(`The group ${groupId ?? "of this code"} is kept on ${host}.`);
  }
}

const readHome = (tx: Tx, groupId: string) => snapshotOf(tx).select().from(groupHomes).where(eq(groupHomes.groupId, groupId)).get();

/** The home server of a group this server keeps a copy of; undefined for a group of this server (or none). */
export const homeOf = (tx: Tx, groupId: string) => oncePerCall(tx, `home ${groupId}`, () => readHome(tx, groupId));

/** Refuses to change a copy here: ToHome names the server that takes the change. */
export async function requireHomeHere(tx: Tx, groupId: string): Promise<void> {
  const home = await homeOf(tx, groupId);
  if (home) throw new ToHome(home.host, groupId);
}

/** A copy is said to be stale once its home has not answered for this long. */
export const STALE_AFTER_MS = 60_000;

/** How current an answer about a group is (AsOf in the contract). */
export async function asOf(tx: Tx, groupId: string, now: Date) {
  const [head, home] = await Promise.all([
    snapshotOf(tx).select({ seq: groupEvents.seq }).from(groupEvents).where(eq(groupEvents.groupId, groupId)).orderBy(desc(groupEvents.seq)).limit(1).get(),
    homeOf(tx, groupId),
  ]);
  const since = home?.unreachableSince ?? null;
  return {
    as_of_seq: head?.seq ?? 0,
    home: home
      ? { host: home.host, synced_at: home.syncedAt, unreachable_since: since, stale: since !== null && now.getTime() - Date.parse(since) > STALE_AFTER_MS }
      : null,
  };
}
