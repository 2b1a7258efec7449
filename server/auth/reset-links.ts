// One-time links that sign a person in once: the one an operator prints for someone who cannot sign in (svc users
// reset-link), and those sent by e-mail to a confirmed address (a reset, or a sign-in link). Stored hashed, live for
// 30 minutes, used up by a button press (so a link preview cannot spend it). A reset lands on /account to set a
// password; a sign-in link on the page it was asked from. A link sent to an address that was added through a client
// signs in a browser obtained through that client (set_through_client_id), which ends with it.
import { and, eq, gt, isNull } from "drizzle-orm";
import { guardChanged, type Tx } from "../../db/client.ts";
import { resetLinks } from "../../db/schema/index.ts";
import { iso, later } from "../clock.ts";
import { RESET_LINK_TTL_MS } from "./reset-link-ttl.ts";
import { newSecret, sha256 } from "./secrets.ts";

export { RESET_LINK_TTL_MS };
const TOKEN_PATTERN = /^rst_[A-Za-z0-9_-]{43}$/;

export type LinkPurpose = "reset" | "signin";

export interface LinkOptions {
  purpose?: LinkPurpose;
  /** The client the link's sign-in descends from (an address added through it), or null: none. */
  setThrough?: string | null;
}

export async function createResetLink(tx: Tx, agentId: string, baseUrl: string, now: Date, opts: LinkOptions = {}) {
  const token = newSecret("rst");
  const expiresAt = later(now, RESET_LINK_TTL_MS);
  await tx.insert(resetLinks).values({
    tokenHash: sha256(token),
    agentId,
    createdAt: iso(now),
    expiresAt,
    purpose: opts.purpose ?? "reset",
    setThroughClientId: opts.setThrough ?? null,
  });
  return { url: `${baseUrl}/account/reset/${token}`, expires_at: expiresAt };
}

const live = (token: string, now: Date) => and(eq(resetLinks.tokenHash, sha256(token)), isNull(resetLinks.usedAt), gt(resetLinks.expiresAt, iso(now)));

/** What a live link is for, or null when it is unknown, expired or already used; looking does not use it. */
export async function resetLinkUsable(tx: Tx, token: string, now: Date): Promise<{ purpose: LinkPurpose } | null> {
  if (!TOKEN_PATTERN.test(token)) return null;
  return (await tx.select({ purpose: resetLinks.purpose }).from(resetLinks).where(live(token, now)).get()) ?? null;
}

/** Uses the link up: whose it is, what for and what it descends from; null when it is unknown, expired or already used. */
export async function consumeResetLink(tx: Tx, token: string, now: Date): Promise<{ agentId: string; purpose: LinkPurpose; setThrough: string | null } | null> {
  if (!TOKEN_PATTERN.test(token)) return null;
  const row = await tx
    .select({ agentId: resetLinks.agentId, purpose: resetLinks.purpose, setThrough: resetLinks.setThroughClientId })
    .from(resetLinks)
    .where(live(token, now))
    .get();
  if (!row) return null;
  // Used once: a second use at the same moment runs again, and finds it used.
  await tx
    .update(resetLinks)
    .set({ usedAt: iso(now) })
    .where(live(token, now));
  await guardChanged(tx, "reset link");
  return row;
}
