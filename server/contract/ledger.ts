// Wire shapes of expenses, payments and balances, written from the catalogue's "Expenses", "Payments" and
// "Balances and history" sections and its money conventions.
import { z } from "zod";
import { AgentRef, Handle, plainText, RefsInput, Timestamp, Untrusted, Uuid } from "./wire.ts";

/** Amounts are limited to 15 digits in minor units: always a safe integer (< 2^53). */
export const MAX_DIGITS = 15;
export const MAX_MINOR = 999_999_999_999_999;

export const SPLIT_MODES = ["equal", "exact", "percent", "shares", "adjustment"] as const;
export type SplitMode = (typeof SPLIT_MODES)[number];

export const CATEGORIES = [
  "general",
  "food",
  "groceries",
  "transport",
  "lodging",
  "entertainment",
  "utilities",
  "rent",
  "travel",
  "shopping",
  "health",
  "gifts",
  "other",
] as const;
export const REPEATS = ["none", "weekly", "fortnightly", "monthly", "yearly"] as const;
export type Category = (typeof CATEGORIES)[number];
export type Repeat = (typeof REPEATS)[number];

// Money inputs: exactly one of the two (checked with the currency, which fixes the decimals).
export const DecimalAmount = z.string().max(40).describe("Decimal string in the currency's units, e.g. \"12.34\"; at most the currency's decimals");
export const MinorAmount = z.number().int().min(1).max(MAX_MINOR).describe("Integer amount in minor units (cents), e.g. 1234");
export const amountFields = { amount: DecimalAmount.optional(), amount_minor: MinorAmount.optional() };

export const CurrencyInput = z.string().regex(/^[A-Z]{3}$/, "must be an ISO 4217 code in capitals, such as EUR");
export const ExchangeRate = z
  .string()
  .max(30)
  .describe('Units of the group\'s currency per one unit of `currency`, as a decimal string, e.g. "0.9215"; at most 12 decimals');
export const DateOnly = z
  .string()
  .regex(/^(19|2\d)\d\d-\d\d-\d\d$/, "must be a date YYYY-MM-DD between 1900 and 2999")
  .refine((d) => {
    const ms = Date.parse(`${d}T00:00:00Z`);
    return !Number.isNaN(ms) && new Date(ms).toISOString().startsWith(d);
  }, "must be a real calendar date");
export const Notes = plainText(0, 500);

/** A member named by handle or by member_id (get_group): exactly one of the two. */
const memberRef = {
  handle: Handle.optional().describe("The member's handle; or give member_id instead"),
  member_id: Uuid.optional().describe("The member's member_id from get_group: how a placeholder (no account yet) is named"),
};
const oneMember = (v: { handle?: string | undefined; member_id?: string | undefined }, ctx: z.RefinementCtx) => {
  if ((v.handle === undefined) === (v.member_id === undefined))
    ctx.addIssue({ code: "custom", path: ["handle"], message: "give exactly one of handle and member_id" });
};
export const PayerInput = z.strictObject({ ...memberRef, ...amountFields }).superRefine(oneMember);
export const SplitInput = z.strictObject({
  mode: z.enum(SPLIT_MODES),
  among: z
    .array(z.strictObject({ ...memberRef, value: z.union([z.string().max(40), z.number()]).optional() }).superRefine(oneMember))
    .min(1)
    .max(200)
    .optional()
    .describe(
      "Participants: value absent for equal; an amount string for exact; a percentage (all summing to 100) for percent; a positive weight for shares; a signed amount added to an equal share for adjustment. Omitted: every current member, equal split.",
    ),
});

/** Fields add_expense takes and update_expense may change. */
export const expenseFields = {
  description: plainText(1, 140),
  ...amountFields,
  currency: CurrencyInput.optional().describe("Currency of the amounts given; default the group's. Another currency needs exchange_rate."),
  exchange_rate: ExchangeRate.optional(),
  date: DateOnly.optional().describe("YYYY-MM-DD; default today (UTC)"),
  category: z.enum(CATEGORIES).optional(),
  paid_by: z.array(PayerInput).min(1).max(50).optional().describe("Who paid how much, summing to the amount; default: the caller paid it all"),
  split: SplitInput.optional(),
  notes: Notes.optional(),
  repeat: z.enum(REPEATS).optional().describe("The service adds each later occurrence on its date as an ordinary expense with refs.recurring_of"),
  refs: RefsInput.optional(),
};

const HandleAmount = z.object({
  handle: z.string().describe("The member's handle; a placeholder member (no account yet) has none, and its member_id stands here"),
  member_id: Uuid.optional().describe("The member's member_id (get_group): an agent's agent_id, or a placeholder's id"),
  amount_minor: z.number().int(),
  amount: z.string(),
});

export const OriginalAmount = z
  .object({ currency: z.string(), amount_minor: z.number().int(), amount: z.string(), exchange_rate: z.string() })
  .nullable()
  .describe("The amount as given in another currency and the rate used to convert it once");

export const ExpenseResponse = z.object({
  agent: AgentRef,
  action: z.enum(["confirm", "dispute"]),
  reason: Untrusted.nullable(),
  version: z.number().int(),
  responded_at: Timestamp,
});

/** What an expense says at one version (also each entry of its history). */
export const ExpenseContent = z.object({
  description: Untrusted,
  amount_minor: z.number().int(),
  amount: z.string(),
  currency: z.string().describe("The group's currency; amount and shares are in it"),
  original: OriginalAmount,
  date: z.string(),
  category: z.enum(CATEGORIES),
  paid_by: z.array(HandleAmount),
  split: z.object({
    mode: z.enum(SPLIT_MODES),
    among: z.array(z.object({ handle: z.string(), value: z.union([z.string(), z.number()]).optional() })),
  }),
  shares: z.array(HandleAmount),
  notes: Untrusted.nullable(),
  repeat: z.enum(REPEATS),
  refs: z.record(z.string(), z.string()),
  deleted: z.boolean(),
  state: z.enum(["active", "disputed"]),
});

export const Expense = ExpenseContent.extend({
  expense_id: Uuid,
  group_id: Uuid,
  next_occurrence: z.string().nullable(),
  created_by: AgentRef,
  created_at: Timestamp,
  updated_at: Timestamp,
  version: z.number().int(),
  responses: z.array(ExpenseResponse),
});
export type Expense = z.infer<typeof Expense>;
export type ExpenseContent = z.infer<typeof ExpenseContent>;

export const ExpenseHistoryEntry = z.object({
  version: z.number().int(),
  action: z.enum(["created", "updated", "deleted", "restored"]),
  changed_by: AgentRef,
  changed_at: Timestamp,
  changed_fields: z.array(z.string()),
  expense: ExpenseContent,
});
export type ExpenseHistoryEntry = z.infer<typeof ExpenseHistoryEntry>;

export const PAYMENT_STATES = ["pending", "confirmed", "rejected", "voided"] as const;

export const Payment = z.object({
  payment_id: Uuid,
  group_id: Uuid,
  from: AgentRef,
  to: AgentRef,
  amount_minor: z.number().int(),
  amount: z.string(),
  currency: z.string().describe("The group's currency; amount is in it"),
  // The fields added after 0.9.0 are optional: an answer stored by 0.9.0 is replayed as it was (idempotency).
  original: OriginalAmount.optional(),
  state: z.enum(PAYMENT_STATES).describe("Only confirmed payments count in balances; a voided one no longer does"),
  note: Untrusted.nullable(),
  created_by: AgentRef,
  created_at: Timestamp,
  updated_at: Timestamp,
  voided_by: AgentRef.nullable().optional().describe("Who voided it (payer or payee), or null"),
  voided_at: Timestamp.nullable().optional(),
});
export type Payment = z.infer<typeof Payment>;

export const Transfer = z.object({ from: AgentRef, to: AgentRef, amount_minor: z.number().int(), amount: z.string() });
export type Transfer = z.infer<typeof Transfer>;

export const MemberBalance = z.object({
  agent: AgentRef.describe("The member; for a placeholder (no account yet): agent_id and handle are its member_id, display_name its name"),
  member_id: Uuid.optional().describe("The member's member_id (get_group)"),
  placeholder: z.boolean().optional().describe("true for a placeholder member, who has no account yet"),
  balance_minor: z.number().int(),
  balance: z.string(),
});

export const CurrencyBreakdown = z.object({
  currency: z.string().describe("The currency the amounts were given in"),
  members: z.array(
    z.object({
      agent: AgentRef,
      paid_minor: z.number().int().describe("Paid for expenses, in this currency"),
      paid: z.string(),
      owes_minor: z.number().int().describe("Their shares of expenses, in this currency"),
      owes: z.string(),
      payments_sent_minor: z.number().int().describe("Confirmed payments they made, in this currency"),
      payments_sent: z.string(),
      payments_received_minor: z.number().int().describe("Confirmed payments they received, in this currency"),
      payments_received: z.string(),
      net_minor: z.number().int().describe("paid - owes + payments_sent - payments_received, in this currency"),
      net: z.string(),
      converted_minor: z.number().int().describe("The same net in the group's currency, as it counts in the balance"),
      converted: z.string(),
    }),
  ),
});

export const Counterparty = z.object({
  agent: AgentRef,
  currency: z.string(),
  balance_minor: z.number().int().describe("Positive: they owe you; negative: you owe them"),
  balance: z.string(),
  groups: z.array(z.object({ group_id: Uuid, name: z.string(), balance_minor: z.number().int(), balance: z.string() })),
});
export type Counterparty = z.infer<typeof Counterparty>;

export const ActivityEntry = z.object({
  seq: z.number().int(),
  actor: AgentRef,
  action: z.string(),
  summary_md: z.string(),
  refs: z.record(z.string(), z.string()),
  created_at: Timestamp,
});
