import type { Tx } from "../../db/client.ts";
import { expireApiKeys, expireIdempotencyRecords, expireInboxItems, expirePlatformInvites } from "./expiry.ts";
import { createRecurringExpenses } from "./recurring-expenses.ts";
import { expireAuthRecords } from "./auth-expiry.ts";

/** Background work: each job is idempotent (running it late or twice changes nothing more) and runs in one transaction. */
export interface Job {
  name: string;
  everyMs: number;
  run(tx: Tx, now: Date): Promise<number>;
}

/** Every background job; the runner (server/jobs/runner.ts) takes a lease in the database before running one. */
export const JOBS: Job[] = [expireInboxItems, expireIdempotencyRecords, expireApiKeys, expirePlatformInvites, createRecurringExpenses, expireAuthRecords];
