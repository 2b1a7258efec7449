// Housekeeping of the sign-in and OAuth records: reads already ignore rows whose time is over, so this only
// keeps the database from growing. Rows that detect replays or answer late polls are kept a day longer.
import { lte } from "drizzle-orm";
import { attemptTimes, joinSessions, oauthCodes, oauthRefreshTokens, settingsLinks, signinCodes, webSessions } from "../../db/schema/index.ts";
import { DAY, MINUTE, iso } from "../clock.ts";
import type { Job } from "./index.ts";

export const expireAuthRecords: Job = {
  name: "expire_auth_records",
  everyMs: 30 * MINUTE,
  async run(tx, now) {
    const over = iso(now);
    const dayAgo = iso(new Date(now.getTime() - DAY));
    const batches = [
      () => tx.delete(webSessions).where(lte(webSessions.expiresAt, over)),
      () => tx.delete(settingsLinks).where(lte(settingsLinks.expiresAt, over)),
      () => tx.delete(oauthRefreshTokens).where(lte(oauthRefreshTokens.expiresAt, over)),
      // a day of grace: a late finish_join still learns the outcome, a replayed code still ends its session
      () => tx.delete(joinSessions).where(lte(joinSessions.expiresAt, dayAgo)),
      () => tx.delete(oauthCodes).where(lte(oauthCodes.expiresAt, dayAgo)),
      () => tx.delete(signinCodes).where(lte(signinCodes.expiresAt, dayAgo)),
      // guess and text-message windows whose newest attempt is out of its window count for nothing any more
      () => tx.delete(attemptTimes).where(lte(attemptTimes.expiresAt, over)),
    ];
    let count = 0;
    for (const batch of batches) count += (await batch()).rowsAffected;
    return count;
  },
};
