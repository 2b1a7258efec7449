// A lease on a named piece of work (a job, a federation destination's sending) in job_leases: the instance that
// takes it does the work until leaseUntil; the others leave it alone.
import { and, eq } from "drizzle-orm";
import { guardChanged, type Tx } from "../../db/client.ts";
import { jobLeases } from "../../db/schema/index.ts";
import { iso, later } from "../clock.ts";

/**
 * Takes the lease `name` for holder for leaseMs, if it is free (and, with `due`, its next run is due). Another
 * instance taking it at the same moment makes this batch fail (on the key, or the guard): it runs again, and finds it
 * held.
 */
export async function takeLease(tx: Tx, name: string, holder: string, now: Date, leaseMs: number, due = false): Promise<boolean> {
  const row = await tx.select().from(jobLeases).where(eq(jobLeases.name, name)).get();
  if (row && (row.leaseUntil > iso(now) || (due && row.nextRunAt > iso(now)))) return false;
  const lease = { holder, leaseUntil: later(now, leaseMs) };
  if (!row) await tx.insert(jobLeases).values({ name, nextRunAt: "", ...lease });
  else {
    await tx
      .update(jobLeases)
      .set(lease)
      .where(and(eq(jobLeases.name, name), eq(jobLeases.leaseUntil, row.leaseUntil)));
    await guardChanged(tx, `lease ${name}`);
  }
  return true;
}
