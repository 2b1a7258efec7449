// export_group: the whole live ledger of a group as CSV (one row per expense share and per payment) or JSON.
// A group has no bound on its expenses, so the ledger is read in batches of BATCH rows, each after the last row of
// the one before: every query binds a few values, and no more than one batch of views is held at a time.
import { and, asc, eq, sql } from "drizzle-orm";
import { prepared, type Tx } from "../../../../db/client.ts";
import { agents, expenseAttachments, expenses, payments } from "../../../../db/schema/index.ts";
import { iso } from "../../../clock.ts";
import type { MemberRef } from "../../../contract/groups.ts";
import type { Expense, Payment } from "../../../contract/ledger.ts";
import { untrusted } from "../../untrusted.ts";
import { groupBalanceView } from "../balances/balances.ts";
import { csvAmount, csvField, csvLine } from "./csv.ts";
import { expenseViews } from "../expenses/views.ts";
import { requireMember, type GroupRow } from "../groups/membership.ts";
import { formatAmount } from "../money/amounts.ts";
import { paymentViews } from "../payments/payments.ts";
import type { DomainContext } from "../../../contract/principal.ts";

// The columns after state came later (v1 only grows): the kind, the amount as given in another currency and the notes.
export const CSV_HEADER = [
  "record",
  "id",
  "date",
  "description",
  "category",
  "currency",
  "amount",
  "participant",
  "paid",
  "share",
  "from",
  "to",
  "state",
  "kind",
  "original_currency",
  "original_amount",
  "exchange_rate",
  "notes",
  // Who each row names as every answer does (a placeholder's participant, from or to above is its member_id): the
  // member_id and the name, the share's participant's or the payment's payer's and payee's.
  "participant_member_id",
  "participant_name",
  "from_member_id",
  "from_name",
  "to_member_id",
  "to_name",
];

const BATCH = 1000;

/** Where an export stands: after the last expense written (by date, then rowid), then after the last payment. */
export type ExportCursor = { stage: "expenses"; date: string; seq: number } | { stage: "payments"; seq: number };
export const EXPORT_START: ExportCursor = { stage: "expenses", date: "", seq: 0 };

// Both follow the order of an index (0018_export_order.sql), so a batch starts where the last one stopped.
const expensePage = prepared((tx) =>
  tx
    .select({ row: expenses, seq: sql<number>`expenses.rowid` })
    .from(expenses)
    .where(
      and(
        eq(expenses.groupId, sql.placeholder("groupId")),
        sql`${expenses.deleted} = 0`,
        sql`(${expenses.date}, expenses.rowid) > (${sql.placeholder("date")}, ${sql.placeholder("seq")})`,
      ),
    )
    .orderBy(asc(expenses.date), sql`expenses.rowid`)
    .limit(BATCH)
    .prepare(),
);
const paymentPage = prepared((tx) =>
  tx
    .select({ row: payments, seq: sql<number>`payments.rowid` })
    .from(payments)
    .where(and(eq(payments.groupId, sql.placeholder("groupId")), sql`payments.rowid > ${sql.placeholder("seq")}`))
    .orderBy(sql`payments.rowid`)
    .limit(BATCH)
    .prepare(),
);

export interface LedgerBatch {
  expenses: Expense[];
  payments: Payment[];
  /** Where the next batch starts; null once the ledger is done. */
  next: ExportCursor | null;
}

/** The batch of the group's live ledger after `at`: live expenses first, then every payment. */
export async function ledgerBatch(tx: Tx, group: GroupRow, at: ExportCursor): Promise<LedgerBatch> {
  if (at.stage === "expenses") {
    const page = await expensePage(tx).all({ groupId: group.groupId, date: at.date, seq: at.seq });
    if (page.length) {
      const last = page.at(-1)!;
      const next: ExportCursor = page.length < BATCH ? { stage: "payments", seq: 0 } : { stage: "expenses", date: last.row.date, seq: last.seq };
      return {
        expenses: await expenseViews(
          tx,
          group,
          page.map((p) => p.row),
        ),
        payments: [],
        next,
      };
    }
    at = { stage: "payments", seq: 0 };
  }
  const page = await paymentPage(tx).all({ groupId: group.groupId, seq: at.seq });
  const next: ExportCursor | null = page.length < BATCH ? null : { stage: "payments", seq: page.at(-1)!.seq };
  return {
    expenses: [],
    payments: await paymentViews(
      tx,
      page.map((p) => p.row),
      () => group.currency,
    ),
    next,
  };
}

export const csvHeader = () => csvLine(CSV_HEADER.map(csvField));

/** A batch as CSV lines; every text cell goes through csvField, amounts (formatAmount's) through csvAmount. */
export function csvBatch(currency: string, batch: LedgerBatch): string {
  const lines: string[] = [];
  const money = (minor: number) => csvAmount(formatAmount(minor, currency));
  const original = (o: Expense["original"] | undefined) => (o ? [csvField(o.currency), csvAmount(o.amount), csvField(o.exchange_rate)] : ["", "", ""]);
  const who = (m: MemberRef | undefined) => [csvField(m?.member_id ?? null), csvField(m?.name ?? null)];
  for (const e of batch.expenses) {
    const paidBy = new Map(e.paid_by.map((p) => [p.handle, p.amount_minor]));
    const share = new Map(e.shares.map((s) => [s.handle, s.amount_minor]));
    const memberOf = new Map([...e.paid_by, ...e.shares].map((x) => [x.handle, x.member]));
    const common = [csvField(e.expense_id), csvField(e.date), csvField(e.description.untrusted_content), csvField(e.category), csvField(currency)];
    const after = [csvField(e.kind ?? "expense"), ...original(e.original), csvField(e.notes?.untrusted_content ?? null)];
    for (const handle of new Set([...share.keys(), ...paidBy.keys()])) {
      const cells = [csvField("expense_share"), ...common, csvAmount(e.amount), csvField(handle)];
      const named = [...who(memberOf.get(handle)), "", "", "", ""];
      lines.push(csvLine([...cells, money(paidBy.get(handle) ?? 0), money(share.get(handle) ?? 0), "", "", csvField(e.state), ...after, ...named]));
    }
  }
  for (const p of batch.payments) {
    const cells = [csvField("payment"), csvField(p.payment_id), csvField(p.created_at.slice(0, 10)), csvField(p.note?.untrusted_content ?? null)];
    const tail = [csvField(p.state), "", ...original(p.original), "", "", "", ...who(p.from_member), ...who(p.to_member)];
    lines.push(csvLine([...cells, "", csvField(currency), csvAmount(p.amount), "", "", "", csvField(p.from.handle), csvField(p.to.handle), ...tail]));
  }
  return lines.join("");
}

/** The group's live ledger a batch at a time, in one transaction. */
async function* batches(tx: Tx, group: GroupRow): AsyncGenerator<LedgerBatch> {
  for (let at: ExportCursor | null = EXPORT_START; at; ) {
    const batch: LedgerBatch = await ledgerBatch(tx, group, at);
    yield batch;
    at = batch.next;
  }
}

/**
 * An expense as the document holds it: payers, shares and the split name each member by handle, as in earlier
 * releases (a friend without an account by the member_id standing as its handle, with its member beside it);
 * balances.members, at the top, gives each member's member_id, name and agent. The member objects the tools add beside each entry would grow
 * a history of 100,000 expenses past what the server can write as one answer.
 */
const byHandleOnly = (e: Expense): Expense => {
  // A friend without an account keeps the member beside the member_id standing as its handle: no made-up handle alone.
  const bare = <T extends { member?: { agent: unknown } | undefined; member_id?: string | undefined }>({ member, member_id: _id, ...rest }: T) =>
    (member && member.agent === null ? { ...rest, member } : rest) as T;
  return {
    ...e,
    paid_by: e.paid_by.map(bare),
    shares: e.shares.map(bare),
    ...(e.split?.among ? { split: { ...e.split, among: e.split.among.map(bare) } } : {}),
  } as Expense;
};

/** Items as JSON.stringify(document, null, 2) writes those of an array two levels deep, each after a line break. */
const nested = (items: unknown[]) => items.map((x) => `\n    ${JSON.stringify(x, null, 2).replaceAll("\n", "\n    ")}`);

/**
 * The JSON document, written a batch at a time: the same text as JSON.stringify(document, null, 2), which would need
 * every expense's view at once. JSON strings hold no raw line break, so indenting after each one is safe.
 */
export async function jsonText(ctx: DomainContext, group: GroupRow): Promise<string> {
  const head = {
    group: { group_id: group.groupId, name: group.name, currency: group.currency, simplify_debts: group.simplifyDebts, exported_at: iso(ctx.now) },
    balances: await groupBalanceView(ctx, group.groupId),
    // The files themselves stay in the database (a backup keeps them): the export names them, list_attachments fetches them.
    attachments: await attachmentIndex(ctx.tx, group.groupId),
  };
  // The head without its closing "\n}", then the two arrays; a batch holds expenses or payments, never both.
  const chunks = [JSON.stringify(head, null, 2).slice(0, -2), ',\n  "expenses": ['];
  let section: "expenses" | "payments" = "expenses";
  let count = 0;
  const toPayments = () => {
    chunks.push(count ? '\n  ],\n  "payments": [' : '],\n  "payments": [');
    section = "payments";
    count = 0;
  };
  for await (const batch of batches(ctx.tx, group)) {
    if (section === "expenses" && batch.payments.length) toPayments();
    for (const item of nested(section === "expenses" ? batch.expenses.map(byHandleOnly) : batch.payments)) chunks.push(count++ ? `,${item}` : item);
  }
  if (section === "expenses") toPayments();
  chunks.push(count ? "\n  ]\n}" : "]\n}");
  return chunks.join("");
}

/** The group's attachments without their bytes, oldest first. */
async function attachmentIndex(tx: Tx, groupId: string) {
  const rows = await tx
    .select({
      attachment_id: expenseAttachments.attachmentId,
      expense_id: expenseAttachments.expenseId,
      filename: expenseAttachments.filename,
      media_type: expenseAttachments.mediaType,
      size_bytes: expenseAttachments.sizeBytes,
      sha256: expenseAttachments.sha256,
      uploaded_by: agents.handle,
      created_at: expenseAttachments.createdAt,
    })
    .from(expenseAttachments)
    .innerJoin(agents, eq(agents.agentId, expenseAttachments.uploadedBy))
    .where(eq(expenseAttachments.groupId, groupId))
    .orderBy(asc(expenseAttachments.createdAt), sql`expense_attachments.rowid`);
  return rows;
}

export async function exportGroup(ctx: DomainContext, groupId: string, format: "csv" | "json") {
  const { tx, now, actor } = ctx;
  const group = await requireMember(tx, groupId, actor.agentId);
  let content: string;
  if (format === "csv") {
    // Chunks joined once: the text is held once, with one batch of views beside it.
    const chunks = [csvHeader()];
    for await (const batch of batches(tx, group)) chunks.push(csvBatch(group.currency, batch));
    content = chunks.join("");
  } else content = await jsonText(ctx, group);
  return {
    format,
    ...exportFile(group, now, format),
    // Descriptions and notes in it were written by the group's members.
    content: untrusted(content, `export of the group's ledger; its descriptions and notes were written by the group's members`),
  };
}

/** The export's file name and media type. */
export const exportFile = (group: GroupRow, now: Date, format: "csv" | "json") => ({
  filename: `group-${group.groupId}-${iso(now).slice(0, 10)}.${format}`,
  media_type: format === "csv" ? "text/csv" : "application/json",
});
