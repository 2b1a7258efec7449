// A direct ledger: the one two-person ledger between an agent and an accepted contact, made on the first call. With
// a contact of another server it is kept on the server of the one who opened it, and the contact is invited there
// as to any group (its server keeps a copy once the contact accepts: events/copy.ts); opened again from the contact's
// server, it is that copy.
import { eq } from "drizzle-orm";
import { groups } from "../../../../db/schema/index.ts";
import { invalid, notFound } from "../../../errors.ts";
import type { DomainContext } from "../../../contract/principal.ts";
import { agentByHandle } from "../../agents.ts";
import { isAcceptedContact } from "../../contacts.ts";
import { remoteOf } from "../../federation.ts";
import { hasBlocked } from "../../inbox.ts";
import { homeOf } from "../events/home.ts";
import { addMember, newGroup } from "./groups.ts";
import { inviteAgent } from "./invites.ts";
import { directKeyOf, isMember } from "./membership.ts";

/**
 * The one direct ledger between the caller and an accepted contact, created on the first call.
 * Someone who blocked the caller is not put into a new ledger with them; they are added once the block is lifted.
 */
export async function openDirectLedger(ctx: DomainContext, handle: string, currency: string | undefined) {
  const { tx, now, actor } = ctx;
  const them = await agentByHandle(tx, handle);
  if (!them || them.agentId === actor.agentId || !(await isAcceptedContact(tx, actor.agentId, them.agentId))) {
    throw notFound(`Contact @${handle}`);
  }
  const directKey = directKeyOf(actor.agentId, them.agentId);
  let g = await tx.select().from(groups).where(eq(groups.directKey, directKey)).get();
  // The contact's server keeps it: this is its copy, where both are members already (the home adds members).
  if (g && (await homeOf(tx, g.groupId))) return { groupId: g.groupId, created: false };
  const created = !g;
  if (!g) {
    if (currency === undefined) throw invalid("currency", "needed to open a new direct ledger (an ISO 4217 code such as EUR)");
    const handles = [actor.handle, them.handle].sort();
    const ledger = { name: `${handles[0]} & ${handles[1]}`, description: null, currency, kind: "direct" as const, directKey };
    g = await newGroup(ctx, ledger, `@${actor.handle} opened the direct ledger with @${them.handle}`);
  } else await addMember(tx, now, g.groupId, actor.agentId, "member");
  // A contact of another server decides on its own server, as for any group; asked again, the same invitation.
  if (await remoteOf(tx, them.agentId)) {
    if (!(await isMember(tx, g.groupId, them.agentId))) await inviteAgent(ctx, g, them);
  } else if (!(await hasBlocked(tx, them.agentId, actor.agentId))) await addMember(tx, now, g.groupId, them.agentId, "member");
  return { groupId: g.groupId, created };
}
