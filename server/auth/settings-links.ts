// Single-use links that sign a human into their settings page for a short while, handed out by get_settings_link.
import { and, eq, gt, isNull } from "drizzle-orm";
import { guardChanged, type Tx } from "../../db/client.ts";
import { settingsLinks } from "../../db/schema/index.ts";
import { MINUTE, iso, later } from "../clock.ts";
import type { Principal } from "../contract/principal.ts";
import { newSecret, sha256 } from "./secrets.ts";

export const SETTINGS_LINK_TTL_MS = 10 * MINUTE;
const TOKEN_PATTERN = /^set_[A-Za-z0-9_-]{43}$/;

/** A link for the caller's human; the page it opens does no more than `by`, the credential that asked for it. */
export async function createSettingsLink(tx: Tx, by: Principal, baseUrl: string, now: Date) {
  const token = newSecret("set");
  const expiresAt = later(now, SETTINGS_LINK_TTL_MS);
  await tx.insert(settingsLinks).values({
    tokenHash: sha256(token),
    agentId: by.agentId,
    clientId: by.clientId,
    scopes: [...by.scopes].join(" "),
    createdAt: iso(now),
    expiresAt,
  });
  return { url: `${baseUrl}/settings/link/${token}`, expires_at: expiresAt };
}

const live = (token: string, now: Date) => and(eq(settingsLinks.tokenHash, sha256(token)), isNull(settingsLinks.usedAt), gt(settingsLinks.expiresAt, iso(now)));

/** Whether the link can still be used; looking does not use it up. */
export async function settingsLinkUsable(tx: Tx, token: string, now: Date): Promise<boolean> {
  if (!TOKEN_PATTERN.test(token)) return false;
  return (await tx.select({ a: settingsLinks.agentId }).from(settingsLinks).where(live(token, now)).get()) !== undefined;
}

/** Uses the link up and returns whose it is and who asked for it; null when it is unknown, expired or already used. */
export async function consumeSettingsLink(tx: Tx, token: string, now: Date) {
  if (!TOKEN_PATTERN.test(token)) return null;
  const row = await tx
    .select({ agentId: settingsLinks.agentId, clientId: settingsLinks.clientId, scopes: settingsLinks.scopes })
    .from(settingsLinks)
    .where(live(token, now))
    .get();
  if (!row) return null;
  // Used once: a second use at the same moment changes nothing here, and runs again to find it used.
  await tx
    .update(settingsLinks)
    .set({ usedAt: iso(now) })
    .where(live(token, now));
  await guardChanged(tx, "settings link");
  return row;
}
