// Provider logins linked to handles. A verified e-mail from the provider marks the handle's e-mail as verified.
import { and, eq } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { agents, oidcIdentities } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import type { OidcIdentity } from "./oidc.ts";

export async function agentForIdentity(tx: Tx, id: OidcIdentity): Promise<string | null> {
  const row = await tx
    .select({ agentId: oidcIdentities.agentId })
    .from(oidcIdentities)
    .where(and(eq(oidcIdentities.issuer, id.issuer), eq(oidcIdentities.subject, id.subject)))
    .get();
  return row?.agentId ?? null;
}

export async function linkIdentity(tx: Tx, id: OidcIdentity, agentId: string, now: Date): Promise<void> {
  await tx
    .insert(oidcIdentities)
    .values({ issuer: id.issuer, subject: id.subject, agentId, email: id.email, emailVerified: id.emailVerified, createdAt: iso(now) })
    .onConflictDoUpdate({ target: [oidcIdentities.issuer, oidcIdentities.subject], set: { agentId, email: id.email, emailVerified: id.emailVerified } });
  if (id.email && id.emailVerified) await tx.update(agents).set({ email: id.email, emailVerified: true }).where(eq(agents.agentId, agentId));
}

export async function identitiesOf(tx: Tx, agentId: string) {
  return tx.select().from(oidcIdentities).where(eq(oidcIdentities.agentId, agentId));
}
