// A group's events between its home server and its members' servers (docs/federation.md, "The ledger across
// servers"). The home sends each new event to every member server through the outbox (events/log.ts), in order per
// server; a member's server takes events of a group only from that group's home, applies them one by one in order
// (events/copy.ts), and when it finds events missing (it was away, it just joined) asks the home for those after its
// last one, once per position until the answer comes; the home answers with pages of history through the outbox.
import { and, eq, isNull } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { groupHomes, groupMembers, groups, remoteAgents } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import { enqueue } from "../domain/federation.ts";
import { applyNext, EventRefused } from "../domain/ledger/events/copy.ts";
import { homeOf } from "../domain/ledger/events/home.ts";
import { EVENTS_PAGE, eventsAfter, headOf } from "../domain/ledger/events/log.ts";
import type { GroupEvent } from "../domain/ledger/events/chain.ts";

/** A range asked of the home is asked again only after this long without an answer. */
export const ASK_AGAIN_MS = 30_000;
/** Pages of history one request is answered with; a server still behind asks again from where they end. */
export const PAGES_PER_ANSWER = 10;

export interface GroupEventsIn {
  group_id: string;
  head_seq: number;
  events: GroupEvent[];
}

/** Events of a group from `origin`: applied in order when it is the group's home; "rejected" when not, or one fails. */
export async function receiveGroupEvents(db: Db, now: Date, origin: string, selfHost: string, e: GroupEventsIn): Promise<"ok" | "rejected"> {
  const home = await db.read((tx) => homeOf(tx, e.group_id));
  if (!home || home.host !== origin) return "rejected";
  let gap = false;
  for (const event of e.events) {
    try {
      if ((await db.tx((tx) => applyNext(tx, now, selfHost, e.group_id, home.host, event))) === "gap") {
        gap = true;
        break;
      }
    } catch (err) {
      if (err instanceof EventRefused) return "rejected";
      throw err;
    }
  }
  const head = await db.read((tx) => headOf(tx, e.group_id));
  if (gap || head.seq < e.head_seq) await askForEvents(db, now, e.group_id, head.seq);
  return "ok";
}

/** Asks the home for a group's events after `afterSeq`, unless that was asked lately. */
async function askForEvents(db: Db, now: Date, groupId: string, afterSeq: number): Promise<void> {
  await db.tx(async (tx) => {
    const home = await homeOf(tx, groupId);
    if (!home) return;
    const askedLately = home.askedAfter === afterSeq && home.askedAt !== null && Date.parse(home.askedAt) > now.getTime() - ASK_AGAIN_MS;
    if (askedLately) return;
    await enqueue(tx, now, home.host, { type: "group.events_request", from: home.agentId, group_id: groupId, after_seq: afterSeq });
    await tx
      .update(groupHomes)
      .set({ askedAfter: afterSeq, askedAt: iso(now) })
      .where(eq(groupHomes.groupId, groupId));
  });
}

/** A member server asks this home for a group's events after a seq: pages of them go back through the outbox. */
export async function answerEventsRequest(db: Db, now: Date, origin: string, groupId: string, afterSeq: number): Promise<void> {
  await db.tx(async (tx) => {
    if (await homeOf(tx, groupId)) return;
    const group = await tx.select({ createdBy: groups.createdBy }).from(groups).where(eq(groups.groupId, groupId)).get();
    // Only a server one of whose agents is a member now hears the group's history.
    const member = await tx
      .select({ id: groupMembers.agentId })
      .from(groupMembers)
      .innerJoin(remoteAgents, eq(remoteAgents.agentId, groupMembers.agentId))
      .where(and(eq(groupMembers.groupId, groupId), isNull(groupMembers.leftAt), eq(remoteAgents.host, origin)))
      .get();
    if (!group || !member) return;
    const head = await headOf(tx, groupId);
    let after = afterSeq;
    for (let page = 0; page < PAGES_PER_ANSWER && after < head.seq; page++) {
      const events = await eventsAfter(tx, groupId, after, EVENTS_PAGE);
      if (!events.length) break;
      await enqueue(tx, now, origin, {
        type: "group.events",
        from: group.createdBy,
        group_id: groupId,
        head_seq: head.seq,
        events: events.map((ev) => ({ body: ev.body, hash: ev.hash })),
      });
      after = events.at(-1)!.seq;
    }
  });
}
