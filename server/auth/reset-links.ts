// One-time links an operator prints for a person who cannot sign in (svc users reset-link): stored hashed, live for
// 30 minutes, used up by a button press (so a link preview cannot spend it); the browser lands on /account signed in.
import { and, eq, gt, isNull } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { resetLinks } from "../../db/schema/index.ts";
import { MINUTE, iso, later } from "../clock.ts";
import { newSecret, sha256 } from "./secrets.ts";

export const RESET_LINK_TTL_MS = 30 * MINUTE;
const TOKEN_PATTERN = /^rst_[A-Za-z0-9_-]{43}$/;

export async function createResetLink(tx: Tx, agentId: string, baseUrl: string, now: Date) {
  const token = newSecret("rst");
  const expiresAt = later(now, RESET_LINK_TTL_MS);
  await tx.insert(resetLinks).values({ tokenHash: sha256(token), agentId, createdAt: iso(now), expiresAt });
  return { url: `${baseUrl}/account/reset/${token}`, expires_at: expiresAt };
}

const live = (token: string, now: Date) => and(eq(resetLinks.tokenHash, sha256(token)), isNull(resetLinks.usedAt), gt(resetLinks.expiresAt, iso(now)));

export async function resetLinkUsable(tx: Tx, token: string, now: Date): Promise<boolean> {
  if (!TOKEN_PATTERN.test(token)) return false;
  return (await tx.select({ a: resetLinks.agentId }).from(resetLinks).where(live(token, now)).get()) !== undefined;
}

/** Uses the link up; whose it is, or null when it is unknown, expired or already used. */
export async function consumeResetLink(tx: Tx, token: string, now: Date): Promise<string | null> {
  if (!TOKEN_PATTERN.test(token)) return null;
  const rows = await tx
    .update(resetLinks)
    .set({ usedAt: iso(now) })
    .where(live(token, now))
    .returning({ agentId: resetLinks.agentId });
  return rows[0]?.agentId ?? null;
}
