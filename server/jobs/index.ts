import type { Tx } from "../../db/client.ts";
import { expireApiKeys, expireIdempotencyRecords, expireInboxItems, expirePlatformInvites } from "./expiry.ts";
import { createRecurringExpenses } from "./recurring-expenses.ts";
import { expireAuthRecords } from "./auth-expiry.ts";
import { cleanFederation } from "./federation-cleanup.ts";
import { expireEmail } from "./email.ts";
import { sealChains } from "./seal-chains.ts";

/** Background work: each job is idempotent (running it late or twice changes nothing more) and runs in one transaction. */
export interface Job<T = undefined> {
  name: string;
  everyMs: number;
  /** Work outside the database (a fetch), done under the job's lease before its transaction; its result goes to run. */
  prepare?(now: Date): Promise<T>;
  run(tx: Tx, now: Date, prepared: T): Promise<number>;
}

/** Every background job; the runner (server/jobs/runner.ts) takes a lease in the database before running one. */
export const JOBS: Job<any>[] = [
  expireInboxItems,
  expireIdempotencyRecords,
  expireApiKeys,
  expirePlatformInvites,
  createRecurringExpenses,
  expireAuthRecords,
  cleanFederation,
  expireEmail,
  sealChains,
];
