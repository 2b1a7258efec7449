// The stored shape of expense_history.snapshot, versioned. History rows are kept for ever, so they may not follow the
// domain's ExpenseState: each version has its own schema here, new rows are written as the latest, and older ones
// are read by mapping them to it. Renaming a field of ExpenseState then changes one mapping, never an old row.
import { z } from "zod";
import { CATEGORIES, EXPENSE_KINDS, REPEATS, SPLIT_MODES } from "./ledger.ts";

const SplitParticipant = z.object({ handle: z.string(), value: z.union([z.string(), z.number()]).optional() });
const Payer = z.object({ handle: z.string(), amount_minor: z.number() });

/** Version 1, written since 0.10: snake_case, named apart from the domain's fields. */
export const ExpenseSnapshotV1 = z.object({
  v: z.literal(1),
  description: z.string(),
  description_by: z.string(),
  amount_minor: z.number(),
  original: z.object({ currency: z.string(), amount_minor: z.number(), exchange_rate: z.string() }).nullable(),
  date: z.string(),
  category: z.enum(CATEGORIES),
  paid_by: z.array(Payer),
  split: z.object({ mode: z.enum(SPLIT_MODES), among: z.array(SplitParticipant) }),
  shares: z.array(z.object({ agent_id: z.string(), handle: z.string(), paid_minor: z.number(), share_minor: z.number() })),
  notes: z.string().nullable(),
  notes_by: z.string().nullable(),
  repeat: z.enum(REPEATS),
  refs: z.record(z.string(), z.string()),
  recurring_of: z.string().nullable(),
  deleted: z.boolean(),
  state: z.enum(["active", "disputed"]),
  changed_fields: z.array(z.string()),
  // Since 0023: absent in older rows (no end; the rate given by the caller).
  repeat_until: z.string().nullable().optional(),
  rate_source: z.string().nullable().optional(),
});

/** The version written now. */
export const EXPENSE_SNAPSHOT_VERSION = 2;

/** Version 2, written since refunds: version 1 and the kind (a version 1 row is an expense). */
export const ExpenseSnapshotV2 = ExpenseSnapshotV1.extend({ v: z.literal(2), kind: z.enum(EXPENSE_KINDS) });
export type ExpenseSnapshot = z.infer<typeof ExpenseSnapshotV2>;

/** Version 0, written by 0.9 and before (no `v`): the domain's ExpenseState of then, with changed_fields. */
export const ExpenseSnapshotV0 = z.object({
  description: z.string(),
  descriptionBy: z.string(),
  amountMinor: z.number(),
  original: z.object({ currency: z.string(), amountMinor: z.number(), exchangeRate: z.string() }).nullable(),
  date: z.string(),
  category: z.enum(CATEGORIES),
  paidBy: z.array(Payer),
  split: z.object({ mode: z.enum(SPLIT_MODES), among: z.array(SplitParticipant) }),
  shares: z.array(z.object({ agentId: z.string(), handle: z.string(), paidMinor: z.number(), shareMinor: z.number() })),
  notes: z.string().nullable(),
  notesBy: z.string().nullable(),
  repeat: z.enum(REPEATS),
  refs: z.record(z.string(), z.string()),
  recurringOf: z.string().nullable(),
  deleted: z.boolean(),
  state: z.enum(["active", "disputed"]),
  changed_fields: z.array(z.string()),
});

/** A version 0 snapshot as the latest: the mapping from 0.9's field names. */
export function upgradeExpenseSnapshotV0(s: z.infer<typeof ExpenseSnapshotV0>): ExpenseSnapshot {
  // Fields named alike pass through; the others are named one by one.
  const { descriptionBy, amountMinor, original, paidBy, shares, notesBy, recurringOf, ...alike } = s;
  return {
    v: 2,
    kind: "expense",
    ...alike,
    description_by: descriptionBy,
    amount_minor: amountMinor,
    original: original && { currency: original.currency, amount_minor: original.amountMinor, exchange_rate: original.exchangeRate },
    paid_by: paidBy,
    shares: shares.map((p) => ({ agent_id: p.agentId, handle: p.handle, paid_minor: p.paidMinor, share_minor: p.shareMinor })),
    notes_by: notesBy,
    recurring_of: recurringOf,
  };
}

/** A stored snapshot of any version, as the latest. */
export function readExpenseSnapshot(stored: unknown): ExpenseSnapshot {
  const v = (stored as { v?: unknown } | null)?.v;
  if (v === undefined) return upgradeExpenseSnapshotV0(ExpenseSnapshotV0.parse(stored));
  return v === 1 ? { ...ExpenseSnapshotV1.parse(stored), v: 2, kind: "expense" } : ExpenseSnapshotV2.parse(stored);
}
