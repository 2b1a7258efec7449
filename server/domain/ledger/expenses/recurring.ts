// Recurring expenses: each due occurrence of a series becomes an ordinary expense, once, however late or often this runs.
import { and, eq, isNotNull, lte } from "drizzle-orm";
import { snapshotOf, type Tx } from "../../../../db/client.ts";
import { expenses, groups } from "../../../../db/schema/index.ts";
import { agentById } from "../../agents.ts";
import { quoted } from "../../untrusted.ts";
import { createExpense, storedState, type ExpenseRow } from "./store.ts";
import { tellAdded } from "./notices.ts";
import { expenseDebts } from "../balances/pairs.ts";
import { exceedsLimits } from "../balances/limits.ts";
import { labelsOf, membersByHandle, refsOfMembers, type GroupRow } from "../groups/membership.ts";
import { logActivity } from "../groups/activity.ts";
import { nextOccurrenceAfter, occurrencesBetween, today } from "./repeat-dates.ts";
import { invalid } from "../../../errors.ts";
import type { Repeat } from "../../../contract/ledger.ts";

/** The most past occurrences a new or changed series may make at once (a back-dated weekly one: a year of them). */
export const MAX_CATCH_UP = 52;

/**
 * Checks a series' end and the past occurrences it would make at the next run (dates after `after`, up to today):
 * returns their number, or refuses past MAX_CATCH_UP, naming it.
 */
export function checkSeries(s: { date: string; repeat: Repeat; repeatUntil: string | null }, after: string, now: Date): number {
  if (s.repeatUntil !== null && s.repeat === "none") throw invalid("repeat_until", "give repeat_until only with a repeat other than none");
  if (s.repeatUntil !== null && s.repeatUntil < s.date) throw invalid("repeat_until", `must be on or after the expense's date (${s.date})`);
  const n = occurrencesBetween(s.date, s.repeat, after, today(now), s.repeatUntil);
  if (n > MAX_CATCH_UP) {
    throw invalid(
      "date",
      `a ${s.repeat} series from ${s.date} would add ${n} past occurrences at once (at most ${MAX_CATCH_UP}): give a later date, or repeat_until`,
    );
  }
  return n;
}

/** Bounds one run's transaction; a longer backlog continues on the next run. */
export const MAX_OCCURRENCES_PER_RUN = 500;

/**
 * Creates every occurrence due by `now` (its date is today or earlier, UTC) of every live series in a
 * group that is not archived, and moves each series' next_occurrence past them. Returns how many it made.
 * An occurrence already made is never made again (checked here, and by the unique (recurring_of, date) index).
 */
export async function createDueOccurrences(tx: Tx, now: Date): Promise<number> {
  const due = today(now);
  const series = await tx
    .select({ e: expenses, g: groups })
    .from(expenses)
    .innerJoin(groups, eq(groups.groupId, expenses.groupId))
    .where(and(isNotNull(expenses.nextOccurrence), lte(expenses.nextOccurrence, due), eq(expenses.deleted, false), eq(groups.archived, false)))
    .orderBy(expenses.nextOccurrence, expenses.expenseId)
    .limit(MAX_OCCURRENCES_PER_RUN);
  let made = 0;
  for (const { e, g } of series) {
    if (made >= MAX_OCCURRENCES_PER_RUN) break;
    made += await catchUp(tx, now, g, e, due, MAX_OCCURRENCES_PER_RUN - made);
  }
  return made;
}

async function catchUp(tx: Tx, now: Date, group: GroupRow, series: ExpenseRow, due: string, budget: number): Promise<number> {
  // A run makes occurrences of several series in one call: each series and its occurrences are read as the call read
  // them, before it wrote any (an occurrence made now has a date not asked again).
  const view = snapshotOf(tx);
  const state = await storedState(view, series);
  const creator = (await agentById(tx, series.createdBy))!;
  const actor = { agentId: creator.agentId, handle: creator.handle };
  const members = await membersByHandle(tx, group.groupId);
  const gone = state.shares.find((s) => !members.has(s.handle));
  const stop = async (why: string) => {
    await tx.update(expenses).set({ nextOccurrence: null }).where(eq(expenses.expenseId, series.expenseId));
    await logActivity(tx, now, {
      groupId: group.groupId,
      actorId: actor.agentId,
      action: "recurring_stopped",
      summary: `${quoted(state.description)} stopped repeating: ${why}`,
      refs: { expense_id: series.expenseId },
    });
  };
  // A former member's balance must stay zero: the series ends instead of charging them.
  if (gone) {
    await stop(`${(await labelsOf(tx, [gone.agentId])).get(gone.agentId)} is no longer a member`);
    return 0;
  }
  let date: string | null = series.nextOccurrence!;
  let made = 0;
  for (; date !== null && date <= due && made < budget; date = nextOccurrenceAfter(series.date, series.repeat, date, series.repeatUntil)) {
    const exists = await view
      .select({ id: expenses.expenseId })
      .from(expenses)
      .where(and(eq(expenses.recurringOf, series.expenseId), eq(expenses.date, date)))
      .get();
    if (exists) continue;
    const occurrence = { ...state, date, repeat: "none" as const, repeatUntil: null, recurringOf: series.expenseId, state: "active" as const, deleted: false };
    // Refused on every run, it would hold back every other series: it ends instead, as add_expense would be refused.
    if (await exceedsLimits(tx, group, expenseDebts(occurrence.shares, occurrence.kind))) {
      await stop("the next one would take a total of the ledger past its limit");
      return made;
    }
    const row = await createExpense(tx, now, group, actor, occurrence, { activityNote: " (recurring)" });
    const recipients = occurrence.shares.filter((s) => s.agentId !== actor.agentId);
    await tellAdded({ tx, now, group, actor, expenseId: row.expenseId, version: 1, state: occurrence, recipients, known: refsOfMembers(members) });
    made++;
  }
  await tx.update(expenses).set({ nextOccurrence: date }).where(eq(expenses.expenseId, series.expenseId));
  return made;
}
