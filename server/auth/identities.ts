// Provider logins linked to handles. A verified e-mail from the provider marks the handle's e-mail as verified.
import { and, eq } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { agents, oidcIdentities } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import type { OidcIdentity } from "./oidc.ts";

/** The handle a provider login is linked to, and the client the link is tied to (null: none). */
export async function agentForIdentity(tx: Tx, id: OidcIdentity): Promise<{ agentId: string; setThrough: string | null } | null> {
  const row = await tx
    .select({ agentId: oidcIdentities.agentId, setThrough: oidcIdentities.setThroughClientId })
    .from(oidcIdentities)
    .where(and(eq(oidcIdentities.issuer, id.issuer), eq(oidcIdentities.subject, id.subject)))
    .get();
  return row ?? null;
}

/**
 * Links a provider login to a handle. `setThrough`: the client the link is tied to (server/web/session.ts
 * factorOrigin), which revoking ends (server/auth/credentials.ts revokeClient).
 */
export async function linkIdentity(tx: Tx, id: OidcIdentity, agentId: string, setThrough: string | null, now: Date): Promise<void> {
  const link = { agentId, email: id.email, emailVerified: id.emailVerified, setThroughClientId: setThrough };
  await tx
    .insert(oidcIdentities)
    .values({ issuer: id.issuer, subject: id.subject, ...link, createdAt: iso(now) })
    .onConflictDoUpdate({ target: [oidcIdentities.issuer, oidcIdentities.subject], set: link });
  if (id.email && id.emailVerified) await tx.update(agents).set({ email: id.email, emailVerified: true }).where(eq(agents.agentId, agentId));
}

export async function identitiesOf(tx: Tx, agentId: string) {
  return tx.select().from(oidcIdentities).where(eq(oidcIdentities.agentId, agentId));
}
