// Wire shapes of expenses, payments and balances, written from the catalogue's "Expenses", "Payments" and
// "Balances and history" sections and its money conventions.
import { z } from "zod";
import { MemberRef } from "./groups.ts";
import { ABUSE_BOUND, abuseBound, AgentRef, plainText, RefsInput, Timestamp, Untrusted, Uuid } from "./wire.ts";

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
/** An expense, or a refund: money that came back, moving the balances the other way. */
export const EXPENSE_KINDS = ["expense", "refund"] as const;
export type ExpenseKind = (typeof EXPENSE_KINDS)[number];
export type Repeat = (typeof REPEATS)[number];

/**
 * A JSON number given where a decimal is expected, as the decimal it is: its shortest text form (12.5 -> "12.5"),
 * which then follows the same rules as a string (10.155 EUR is refused for its decimals, never rounded; a number
 * JavaScript writes with an exponent, 1e-7, is refused as not a plain decimal).
 */
export const numberAsDecimal = (n: number): string => String(n);

/** A decimal's text, bounded against abuse only (a decimal is never near it): checked, not advertised. */
const boundedText = (max: number) => abuseBound(z.string().max(max));

/** A decimal given as a string or as a JSON number; either way a string from here on. */
const decimalInput = (maxLength: number) =>
  z.union([boundedText(maxLength), z.number().transform(numberAsDecimal)], {
    error: 'must be a decimal string such as "12.34" or a number such as 12.34',
  });

// Money inputs: exactly one of the two (checked with the currency, which fixes the decimals).
export const DecimalAmount = decimalInput(40).describe('e.g. "12.34" or 12.34');
export const MinorAmount = z.number().int().min(1).max(MAX_MINOR).describe("Minor units (cents)");
export const amountFields = { amount: DecimalAmount.optional(), amount_minor: MinorAmount.optional() };

export const CurrencyInput = z.string().regex(/^[A-Z]{3}$/, "must be an ISO 4217 code in capitals, such as EUR");
export const ExchangeRate = decimalInput(30).describe('Group currency per 1 `currency`, e.g. "0.92"');
export const DateOnly = z
  .string()
  .regex(/^(19|2\d)\d\d-\d\d-\d\d$/, "must be a date YYYY-MM-DD between 1900 and 2999")
  .refine((d) => {
    const ms = Date.parse(`${d}T00:00:00Z`);
    return !Number.isNaN(ms) && new Date(ms).toISOString().startsWith(d);
  }, "must be a real calendar date")
  .meta({ format: "date" });
export const Notes = plainText(0, 500);

/** A participant's value in a split: a decimal string or a JSON number (read exactly, by mode). */
const SplitValue = z.union([boundedText(40), z.number()]);

/**
 * A member as an argument names them: a handle, a member_id (what an answer's member.member_id holds), or the name a
 * placeholder (a friend with no account) was added with, when no other placeholder of the group has it. Resolved
 * against the group's members (membership.ts resolveMember); bounded as a display name, which a member_id fits.
 */
export const MemberName = plainText(1, 80).meta({ [ABUSE_BOUND]: true });
export const MEMBER_NAME_HELP = "handle, member_id or placeholder name";

/** A member named by handle (or member_id, or a placeholder's name) or by member_id: exactly one of the two. */
const memberRef = {
  handle: MemberName.optional().describe(MEMBER_NAME_HELP),
  member_id: Uuid.optional().describe("Or member_id"),
};
const oneMember = (v: { handle?: string | undefined; member_id?: string | undefined }, ctx: z.RefinementCtx) => {
  if ((v.handle === undefined) === (v.member_id === undefined))
    ctx.addIssue({ code: "custom", path: ["handle"], message: "give exactly one of handle and member_id" });
};
export const PayerInput = z.strictObject({ ...memberRef, ...amountFields }).superRefine(oneMember);
export const SplitInput = z.strictObject({
  mode: z.enum(SPLIT_MODES).describe("Split mode"),
  among: z
    .array(
      z
        .strictObject({
          ...memberRef,
          value: SplitValue.optional().describe("Per mode: amount, percent, weight or signed amount"),
          amount: SplitValue.optional().describe("Same as value"),
        })
        // `amount`, as paid_by names it, is the same as `value`: one of the two.
        .superRefine((p, ctx) => {
          oneMember(p, ctx);
          if (p.value !== undefined && p.amount !== undefined) ctx.addIssue({ code: "custom", path: ["amount"], message: "give value or amount, not both" });
        })
        .transform(({ amount, ...p }) => (amount === undefined ? p : { ...p, value: amount })),
    )
    .min(1)
    .max(200)
    .optional()
    .describe("Default: every member"),
});

/** Fields add_expense takes and update_expense may change. */
export const expenseFields = {
  kind: z.enum(EXPENSE_KINDS).optional().describe("refund: money back (paid_by received it)"),
  description: plainText(1, 140).describe('e.g. "Dinner at Rosa\'s"'),
  ...amountFields,
  currency: CurrencyInput.optional().describe("ISO 4217; default the group's"),
  exchange_rate: ExchangeRate.optional(),
  date: DateOnly.optional().describe("Default: today (UTC)"),
  category: z.enum(CATEGORIES).optional().describe("Default general"),
  paid_by: z.array(PayerInput).min(1).max(50).optional().describe("Default: you paid it all; so does a lone payer"),
  split: SplitInput.optional().describe("Default: equal among all"),
  notes: Notes.optional().describe("Longer notes for the members"),
  repeat: z.enum(REPEATS).optional().describe("Repeats on later dates"),
  repeat_until: DateOnly.nullable().optional().describe("A series' last date; null clears it"),
  refs: RefsInput.optional(),
};

/** The member, added to the entries that name one with a handle (absent only in an answer stored before and replayed). */
const member = MemberRef.optional();
const OLD_HANDLE = "v1; a placeholder's member_id: read member";

const HandleAmount = z.object({
  handle: z.string().describe(OLD_HANDLE),
  member_id: Uuid.optional().describe("As member.member_id"),
  member,
  amount_minor: z.number().int(),
  amount: z.string(),
});

export const OriginalAmount = z
  .object({ currency: z.string(), amount_minor: z.number().int(), amount: z.string(), exchange_rate: z.string() })
  .nullable()
  .describe("In another currency, with its rate");

export const ExpenseResponse = z.object({
  agent: AgentRef,
  action: z.enum(["confirm", "dispute"]),
  reason: Untrusted.nullable(),
  version: z.number().int(),
  responded_at: Timestamp,
});

/** What an expense says at one version (also each entry of its history). */
export const ExpenseContent = z.object({
  // Optional as fields added later are: an answer stored before it is replayed as it was (idempotency).
  kind: z.enum(EXPENSE_KINDS).optional().describe("refund: money back to paid_by; moves balances the other way"),
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
    among: z.array(z.object({ handle: z.string().describe(OLD_HANDLE), member, value: z.union([z.string(), z.number()]).optional() })),
  }),
  shares: z.array(HandleAmount),
  notes: Untrusted.nullable(),
  repeat: z.enum(REPEATS),
  repeat_until: z.string().nullable().optional().describe("A series' last date (inclusive); null: no end"),
  exchange_rate_source: z.string().nullable().optional().describe("Where a looked-up rate came from; null when given"),
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

/** An agent field v1 answered with, which for a placeholder holds no agent: kept, and said so. */
const OLD_AGENT = "v1 field, for a placeholder no agent: read ";

export const Payment = z.object({
  payment_id: Uuid,
  group_id: Uuid,
  from: AgentRef.describe(`${OLD_AGENT}from_member`),
  to: AgentRef.describe(`${OLD_AGENT}to_member`),
  // Added after v1 began, as the fields below: optional, so an answer stored before is replayed as it was.
  from_member: MemberRef.optional().describe("The payer"),
  to_member: MemberRef.optional().describe("The payee"),
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
  batch_id: Uuid.nullable().optional().describe("One payment across groups: its parts share it and are answered together"),
});
export type Payment = z.infer<typeof Payment>;

export const Transfer = z.object({
  from: AgentRef.describe(`${OLD_AGENT}from_member`),
  to: AgentRef.describe(`${OLD_AGENT}to_member`),
  from_member: MemberRef.describe("Who pays"),
  to_member: MemberRef.describe("Who is paid"),
  amount_minor: z.number().int(),
  amount: z.string(),
});
export type Transfer = z.infer<typeof Transfer>;

export const MemberBalance = z.object({
  agent: AgentRef.describe(`${OLD_AGENT}member`),
  member: MemberRef,
  member_id: Uuid.optional().describe("The member's member_id (get_group)"),
  placeholder: z.boolean().optional().describe("true for a placeholder member, who has no account yet"),
  balance_minor: z.number().int().describe("Positive: the others owe them; negative: they owe"),
  balance: z.string(),
});

export const CurrencyBreakdown = z.object({
  currency: z.string().describe("The currency the amounts were given in"),
  members: z.array(
    z.object({
      agent: AgentRef.describe(`${OLD_AGENT}member`),
      member: MemberRef,
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

const ToSettle = {
  to_settle_minor: z.number().int().describe("balance_minor once pending payments count as if confirmed: what is left to pay"),
  to_settle: z.string(),
};
export const Counterparty = z.object({
  agent: AgentRef.describe(`${OLD_AGENT}member`),
  member: MemberRef.describe("Whom you owe or who owes you"),
  currency: z.string(),
  balance_minor: z.number().int().describe("Positive: they owe you; negative: you owe them"),
  balance: z.string(),
  ...ToSettle,
  groups: z.array(z.object({ group_id: Uuid, name: z.string(), balance_minor: z.number().int(), balance: z.string(), ...ToSettle })),
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

export const ATTACHMENT_MEDIA_TYPES = ["image/png", "image/jpeg", "image/webp", "image/heic", "application/pdf"] as const;

/** A file kept with an expense (a receipt); its bytes are fetched with `url`, a link that expires. */
export const Attachment = z.object({
  attachment_id: Uuid,
  expense_id: Uuid,
  filename: Untrusted,
  media_type: z.enum(ATTACHMENT_MEDIA_TYPES),
  size_bytes: z.number().int(),
  sha256: z.string().describe("Hex SHA-256 of the file's bytes"),
  uploaded_by: AgentRef,
  created_at: Timestamp,
  url: z.string().describe("For your human, valid until url_expires_at"),
  url_expires_at: Timestamp,
});

/** A group kept on another server (a copy): that server, and whether the copy may lag. */
const GroupHome = z.object({
  host: z.string().describe("The home server; this is a copy"),
  stale: z.boolean().describe("Home silent a while"),
});
const asOfSeq = z.number().int().optional().describe("Last group event seen");

/** How current a group's answer is: the last of the group's events it reflects, and its home if it is a copy. */
export const AsOf = { as_of_seq: asOfSeq, home: GroupHome.nullable().optional() };

/** As AsOf, with when the copy last heard from its home (get_group). */
export const AsOfInFull = {
  as_of_seq: asOfSeq,
  home: GroupHome.extend({
    synced_at: z.string().describe("When this copy last took an event from the home"),
    unreachable_since: z.string().nullable().describe("Since when a write found the home not answering"),
  })
    .nullable()
    .optional()
    .describe("null: kept here"),
};
