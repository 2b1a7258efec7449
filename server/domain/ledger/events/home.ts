// Where a group's truth is kept: on this server, or, for a group this server keeps a copy of, on its home server.
// A change to a copy is never made here (it would fork the group's one order of events): the call is sent to the
// home instead, outside any transaction (server/federation/forward.ts).
import { eq } from "drizzle-orm";
import { snapshotOf, type Tx } from "../../../../db/client.ts";
import { groupHomes } from "../../../../db/schema/index.ts";

/** Thrown by a write on a group kept on another server: the pipeline sends the call to that server. */
export class ToHome extends Error {
  constructor(
    readonly host: string,
    readonly groupId: string,
  ) {
    super(`The group ${groupId} is kept on ${host}.`);
  }
}

/** The home server of a group this server keeps a copy of; undefined for a group of this server (or none). */
export async function homeOf(tx: Tx, groupId: string) {
  return snapshotOf(tx).select().from(groupHomes).where(eq(groupHomes.groupId, groupId)).get();
}

/** Refuses to change a copy here: ToHome names the server that takes the change. */
export async function requireHomeHere(tx: Tx, groupId: string): Promise<void> {
  const home = await homeOf(tx, groupId);
  if (home) throw new ToHome(home.host, groupId);
}
