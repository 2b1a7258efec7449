// Housekeeping of the sign-in and OAuth records: reads already ignore rows whose time is over, so this only
// keeps the database from growing. Rows that detect replays or answer late polls are kept a day longer.
import { lte } from "drizzle-orm";
import { deleteCounted } from "../../db/client.ts";
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
      () => deleteCounted(tx, webSessions, lte(webSessions.expiresAt, over)),
      () => deleteCounted(tx, settingsLinks, lte(settingsLinks.expiresAt, over)),
      () => deleteCounted(tx, oauthRefreshTokens, lte(oauthRefreshTokens.expiresAt, over)),
      // a day of grace: a late finish_join still learns the outcome, a replayed code still ends its session
      () => deleteCounted(tx, joinSessions, lte(joinSessions.expiresAt, dayAgo)),
      () => deleteCounted(tx, oauthCodes, lte(oauthCodes.expiresAt, dayAgo)),
      () => deleteCounted(tx, signinCodes, lte(signinCodes.expiresAt, dayAgo)),
      // guess and text-message windows whose newest attempt is out of its window count for nothing any more
      () => deleteCounted(tx, attemptTimes, lte(attemptTimes.expiresAt, over)),
    ];
    let count = 0;
    for (const batch of batches) count += await batch();
    return count;
  },
};
