import { and, desc, eq, isNull, sql } from "drizzle-orm";
import { guardChanged, type Tx } from "../../db/client.ts";
import { platformInvites } from "../../db/schema/index.ts";
import { iso } from "../clock.ts";
import { AppError } from "../errors.ts";
import { newSecret } from "../auth/secrets.ts";

/** Invite-only deployments admit a new agent only with a live platform invite code; each use is counted. */
export async function consumePlatformInvite(tx: Tx, now: Date, code: string | undefined): Promise<void> {
  const refuse = () =>
    new AppError(
      "FORBIDDEN",
      "This server is invite-only: a valid platform_invite_code is required.",
      undefined,
      undefined,
      "Ask the server's operator for a platform invite code and pass it as platform_invite_code.",
    );
  if (!code) throw refuse();
  const inv = await tx.select().from(platformInvites).where(eq(platformInvites.code, code)).get();
  if (!inv || inv.revokedAt || inv.uses >= inv.maxUses || (inv.expiresAt && inv.expiresAt <= iso(now))) throw refuse();
  // Counted as a delta, and only while uses remain as the batch commits: the last use taken twice at once runs again.
  await tx
    .update(platformInvites)
    .set({ uses: sql`${platformInvites.uses} + 1` })
    .where(and(eq(platformInvites.code, code), sql`${platformInvites.uses} < ${platformInvites.maxUses}`));
  await guardChanged(tx, "platform invite");
}

export async function createPlatformInvite(tx: Tx, now: Date, opts: { uses: number; expiresAt: string | null; note: string | null }) {
  const code = newSecret("inv").slice(0, 28);
  await tx.insert(platformInvites).values({ code, maxUses: opts.uses, note: opts.note, createdAt: iso(now), expiresAt: opts.expiresAt });
  return code;
}

export async function listPlatformInvites(tx: Tx) {
  return tx.select().from(platformInvites).orderBy(desc(platformInvites.createdAt));
}

export async function revokePlatformInvite(tx: Tx, now: Date, code: string): Promise<boolean> {
  const live = and(eq(platformInvites.code, code), isNull(platformInvites.revokedAt));
  if (!(await tx.select({ code: platformInvites.code }).from(platformInvites).where(live).get())) return false;
  await tx
    .update(platformInvites)
    .set({ revokedAt: iso(now) })
    .where(live);
  return true;
}
