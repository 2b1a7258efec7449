// Importing a Splitwise CSV export into a group (svc import splitwise). The export has the columns
// Date,Description,Category,Cost,Currency and then one per person holding that person's net for the row
// (what they paid minus their share; positive: they are owed). Rows of category "Payment" are payments.
// The whole file is checked first and imported in one transaction, or not at all.
import { and, eq, sql } from "drizzle-orm";
import { createHash } from "node:crypto";
import { snapshotOf, type Tx } from "../../../../db/client.ts";
import { groups, ledgerActivity } from "../../../../db/schema/index.ts";
import { AppError, conflict, invalid, notFound } from "../../../errors.ts";
import { DateOnly, type Category } from "../../../contract/ledger.ts";
import { agentById } from "../../agents.ts";
import { currencyExponent } from "../../../contract/currencies.ts";
import { parseCsv } from "./csv.ts";
import { createExpense, newExpenseState } from "../expenses/store.ts";
import { membersByHandle } from "../groups/membership.ts";
import { claimPath, insertPlaceholder } from "../groups/placeholders.ts";
import { DisplayName } from "../../../contract/wire.ts";
import { logActivity } from "../groups/activity.ts";
import { convert, formatAmount, inGroupCurrency, moneyText, parseDecimal } from "../money/amounts.ts";
import { MAX_MINOR } from "../../../contract/ledger.ts";
import { insertPayment } from "../payments/payments.ts";
import { allocate, compareText } from "../money/splits.ts";
import { CONTROL } from "../../../contract/text.ts";

const FIXED_COLUMNS = ["date", "description", "category", "cost", "currency"];

/** Splitwise's categories (lower case) to the nearest of ours; anything else is general. */
const CATEGORY_MAP: Record<string, Category> = {
  general: "general",
  "food and drink": "food",
  "dining out": "food",
  liquor: "food",
  groceries: "groceries",
  transportation: "transport",
  "gas/fuel": "transport",
  parking: "transport",
  taxi: "transport",
  "bus/train": "transport",
  car: "transport",
  bicycle: "transport",
  plane: "travel",
  hotel: "lodging",
  rent: "rent",
  mortgage: "rent",
  utilities: "utilities",
  electricity: "utilities",
  "heat/gas": "utilities",
  water: "utilities",
  "tv/phone/internet": "utilities",
  trash: "utilities",
  entertainment: "entertainment",
  movies: "entertainment",
  music: "entertainment",
  games: "entertainment",
  sports: "entertainment",
  gifts: "gifts",
  "medical expenses": "health",
  insurance: "health",
  clothing: "shopping",
  electronics: "shopping",
  furniture: "shopping",
  "household supplies": "shopping",
  other: "other",
};

export interface SplitwiseExpense {
  line: number;
  date: string;
  description: string;
  category: Category;
  /** The row's currency; amounts are in its minor units. */
  currency: string;
  amountMinor: number;
  paidBy: { handle: string; amount_minor: number }[];
  shares: { handle: string; amount_minor: number }[];
}

export interface SplitwisePayment {
  line: number;
  date: string;
  description: string;
  currency: string;
  from: string;
  to: string;
  amountMinor: number;
}

export interface SplitwisePlan {
  expenses: SplitwiseExpense[];
  payments: SplitwisePayment[];
  /** Rows that move no money (everyone's net is zero), with why they were left out. */
  skipped: { line: number; reason: string }[];
  /** The cost of the skipped rows, in all, per currency. */
  skippedTotals: Map<string, bigint>;
}

/**
 * A problem of the file is a sentence; one with the caller's input is an InputProblem: an entry of the name map or of
 * the rates that is wrong, or one to add (a column's name, or the currency `add` of rows in the group's `currency`).
 * Its text names no way of giving the input: the caller says how to fix it in its own terms (the CLI names its flags).
 */
export interface InputProblem {
  input: "names" | "rates";
  text: string;
  add?: string;
  currency?: string;
}
export type ImportProblem = string | InputProblem;

const isTotalRow = (description: string) => description.trim().toLowerCase() === "total balance";
const listLines = (lines: number[]) => (lines.length > 5 ? `${lines.slice(0, 5).join(", ")}, …` : lines.join(", "));

/**
 * Reads a Splitwise export for a group keeping its accounts in `currency`; rows in another currency need its
 * rate in `rates` (units of `currency` per unit). Every problem in the file is reported (with its line), so one
 * run shows everything to fix; the plan is only usable without problems.
 * Per row, each person's net must sum to zero. Who paid and who shares is rebuilt from the nets: those
 * owing (negative net) have a share of what they owe and paid nothing; those owed paid their net plus a
 * share of the rest of the cost, divided among them in proportion to their nets.
 * Splitwise ends the export with a "Total balance" row per currency (each person's sum of that currency's rows,
 * dated or not); it is not imported, but each person's total must equal what the imported rows give them.
 */
export function parseSplitwise(
  text: string,
  names: Map<string, string>,
  currency: string,
  rates: ReadonlyMap<string, string> = new Map(),
): { plan: SplitwisePlan; problems: ImportProblem[] } {
  const plan: SplitwisePlan = { expenses: [], payments: [], skipped: [], skippedTotals: new Map() };
  const problems: ImportProblem[] = [];
  let rows: { line: number; fields: string[] }[];
  try {
    rows = parseCsv(text);
  } catch (err) {
    return { plan, problems: [(err as Error).message] };
  }
  const isHeader = (fields: string[]) => FIXED_COLUMNS.every((c, i) => fields[i]?.trim().toLowerCase() === c);
  // Lines before the header (a friend export starts with a note) are not data.
  const headerAt = rows.findIndex((r) => isHeader(r.fields));
  const header = headerAt < 0 ? rows.find((r) => r.fields.some((f) => f.trim())) : rows[headerAt];
  const columns = header?.fields.map((f) => f.trim()) ?? [];
  if (headerAt < 0 || columns.length <= FIXED_COLUMNS.length) {
    return {
      plan,
      problems: [
        `line ${header?.line ?? 1}: expected the header Date,Description,Category,Cost,Currency followed by one column per person, got: ${columns.join(",")}`,
      ],
    };
  }
  const people = columns.slice(FIXED_COLUMNS.length);
  for (const name of people.filter((n) => !names.has(n))) {
    problems.push({ input: "names", text: `line ${header!.line}: the column "${name}" is not mapped to a handle`, add: name });
  }
  for (const name of [...names.keys()].filter((n) => !people.includes(n)))
    problems.push({ input: "names", text: `"${name}" is not a column of the file (columns: ${people.join(", ")})` });
  for (const [code, rate] of rates) {
    try {
      if (code === currency) throw invalid("rate", `${code} is the group's own currency`);
      convert(1, code, currency, rate, "rate");
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      problems.push({ input: "rates", text: `${code}=${rate}: ${reason(err)}` });
    }
  }
  const unrated = new Map<string, number[]>();
  const totals: { line: number; currency: string; nets: bigint[] }[] = [];

  for (const { line, fields } of rows.slice(headerAt + 1)) {
    if (fields.every((f) => f.trim() === "")) continue;
    const [rawDate = "", description = "", category = "", cost = "", rowCurrency = ""] = fields.map((f) => f.trim());
    const at = `line ${line}`;
    if (fields.length !== columns.length) {
      problems.push(`${at}: ${fields.length} fields, but the header has ${columns.length}`);
      continue;
    }
    let scale: number;
    try {
      scale = currencyExponent(rowCurrency);
    } catch {
      problems.push(`${at}: the currency "${rowCurrency}" is not an ISO 4217 code such as EUR`);
      continue;
    }
    const number = (value: string, what: string, signed: boolean): bigint | null => {
      try {
        return value === "" && signed ? 0n : parseDecimal(value, { scale, signed, unit: rowCurrency }, what);
      } catch (err) {
        problems.push(`${at}: ${what} "${value}" is not an amount in ${rowCurrency} (${reason(err as AppError)})`);
        return null;
      }
    };
    const nets = people.map((name, i) => ({ name, handle: names.get(name) ?? name, net: number(fields[FIXED_COLUMNS.length + i]!.trim(), name, true) }));
    if (isTotalRow(description)) {
      if (totals.some((t) => t.currency === rowCurrency)) problems.push(`${at}: a second Total balance row in ${rowCurrency}`);
      else if (nets.every((n) => n.net !== null)) totals.push({ line, currency: rowCurrency, nets: nets.map((n) => n.net!) });
      continue;
    }
    const date = rawDate.slice(0, 10);
    if (!DateOnly.safeParse(date).success) problems.push(`${at}: the date "${rawDate}" is not a date YYYY-MM-DD`);
    const total = number(cost, "Cost", false);
    if (total === null || nets.some((n) => n.net === null)) continue;
    if (total <= 0n || total > BigInt(MAX_MINOR)) {
      problems.push(`${at}: the cost must be between 0 and 15 digits, got ${cost}`);
      continue;
    }
    const sum = nets.reduce((a, n) => a + n.net!, 0n);
    if (sum !== 0n) {
      problems.push(
        `${at}: the people's amounts sum to ${moneyText(sum, rowCurrency)}, not zero (${nets.map((n) => `${n.name} ${formatAmount(n.net!, rowCurrency)}`).join(", ")})`,
      );
      continue;
    }
    const owed = nets.filter((n) => n.net! > 0n);
    const owing = nets.filter((n) => n.net! < 0n);
    const debt = owing.reduce((a, n) => a - n.net!, 0n);
    const text = cleanDescription(description);
    if (!owed.length) {
      plan.skipped.push({ line, reason: `"${text}" (${moneyText(total, rowCurrency)}) moves no money between people (everyone's amount is zero)` });
      plan.skippedTotals.set(rowCurrency, (plan.skippedTotals.get(rowCurrency) ?? 0n) + total);
      continue;
    }
    if (rowCurrency !== currency && !rates.has(rowCurrency)) unrated.set(rowCurrency, [...(unrated.get(rowCurrency) ?? []), line]);
    if (category.toLowerCase() === "payment") {
      if (owed.length !== 1 || owing.length !== 1) {
        problems.push(`${at}: a payment needs exactly one person paying (positive) and one paid (negative)`);
        continue;
      }
      plan.payments.push({ line, date, description: text, currency: rowCurrency, from: owed[0]!.handle, to: owing[0]!.handle, amountMinor: Number(debt) });
      continue;
    }
    if (debt > total) {
      problems.push(`${at}: the people's debts (${moneyText(debt, rowCurrency)}) are more than the cost (${moneyText(total, rowCurrency)})`);
      continue;
    }
    const ownShares = allocate(
      total - debt,
      owed.map((n) => n.net!),
      owed.map((n) => n.handle),
    );
    plan.expenses.push({
      line,
      date,
      description: text,
      category: CATEGORY_MAP[category.toLowerCase()] ?? "general",
      currency: rowCurrency,
      amountMinor: Number(total),
      paidBy: owed.map((n, i) => ({ handle: n.handle, amount_minor: Number(n.net! + ownShares[i]!) })),
      shares: [
        ...owed.map((n, i) => ({ handle: n.handle, amount_minor: Number(ownShares[i]!) })),
        ...owing.map((n) => ({ handle: n.handle, amount_minor: Number(-n.net!) })),
      ].filter((s) => s.amount_minor > 0),
    });
  }
  for (const [code, lines] of unrated) {
    problems.push({
      input: "rates",
      text: `line${lines.length > 1 ? "s" : ""} ${listLines(lines)}: in ${code}, not the group's ${currency}`,
      add: code,
      currency,
    });
  }
  // Only a file read without problems is complete enough to hold against its totals.
  if (!problems.length) problems.push(...totalsDisagreements(plan, totals, people, names));
  return { plan, problems };
}

/** Each "Total balance" row against what the plan gives each person in that currency: one problem per person who differs. */
function totalsDisagreements(
  plan: SplitwisePlan,
  totals: { line: number; currency: string; nets: bigint[] }[],
  people: string[],
  names: Map<string, string>,
): string[] {
  const imported = new Map<string, bigint>();
  const key = (code: string, handle: string) => `${code} ${handle}`;
  const add = (code: string, handle: string, amount: bigint) => imported.set(key(code, handle), (imported.get(key(code, handle)) ?? 0n) + amount);
  for (const e of plan.expenses) {
    for (const p of e.paidBy) add(e.currency, p.handle, BigInt(p.amount_minor));
    for (const s of e.shares) add(e.currency, s.handle, -BigInt(s.amount_minor));
  }
  for (const p of plan.payments) {
    add(p.currency, p.from, BigInt(p.amountMinor));
    add(p.currency, p.to, -BigInt(p.amountMinor));
  }
  const problems: string[] = [];
  for (const t of totals) {
    const inFile = new Map<string, bigint>();
    people.forEach((name, i) => inFile.set(names.get(name)!, (inFile.get(names.get(name)!) ?? 0n) + t.nets[i]!));
    for (const [handle, total] of inFile) {
      const got = imported.get(key(t.currency, handle)) ?? 0n;
      if (got === total) continue;
      const who = people.filter((n) => names.get(n) === handle).join(" + ");
      problems.push(
        `line ${t.line}: the Total balance in ${t.currency} gives ${who} (@${handle}) ${formatAmount(total, t.currency)}, but the rows imported give ${formatAmount(got, t.currency)} (a difference of ${moneyText(total - got, t.currency)}); is a row missing or changed?`,
      );
    }
  }
  return problems;
}

/** What a validation error says about its one field. */
const reason = (err: AppError) => (err.details?.issues as { message: string }[] | undefined)?.[0]?.message ?? err.message;

/** Descriptions become plain one-line text of at most 140 characters, as add_expense takes them. */
function cleanDescription(text: string): string {
  const flat = [...text.replace(CONTROL, " ").replace(/\s+/g, " ").trim()];
  const short = flat.length > 140 ? `${flat.slice(0, 139).join("")}…` : flat.join("");
  return short || "(no description)";
}

export interface ImportResult {
  group_id: string;
  import_id: string;
  expenses: number;
  payments: number;
  /** Rows moving no money, left out. */
  skipped: { line: number; reason: string }[];
  /** Columns mapped to "+Name": the placeholder members made for them, each with its one-time claim code (shown only here). */
  placeholders: { column: string; name: string; member_id: string; claim_code: string; claim_path: string; claim_expires_at: string }[];
  /** Their cost in all, per currency. */
  skipped_total: { currency: string; amount_minor: number; amount: string }[];
}

/**
 * Imports a Splitwise export into a group in one go. Refuses (VALIDATION_ERROR with details.problems
 * listing every problem) when the file does not balance or disagrees with its Total balance rows, a name is
 * unmapped, a handle is not a member, or a currency other than the group's has no rate; refuses (CONFLICT) a
 * file already imported into the group. Rows in another currency keep their amounts as given and are converted
 * once at `rates` (as add_expense and record_payment do). Imported rows tell no one: a whole history would flood
 * the members' inboxes; the activity log records each row and the import.
 */
export async function importSplitwise(
  tx: Tx,
  now: Date,
  input: { groupId: string; text: string; names: Map<string, string>; rates?: ReadonlyMap<string, string> },
): Promise<ImportResult> {
  const group = await tx.select().from(groups).where(eq(groups.groupId, input.groupId)).get();
  if (!group) throw notFound("Group");
  if (group.archived) throw conflict("The group is archived and read-only; unarchive it before importing.");
  const rates = input.rates ?? new Map<string, string>();
  // A name mapped to "+Name" becomes a new placeholder member (no account yet), made by the group's owner; refused
  // imports roll it back with the rest.
  const names = new Map<string, string>();
  // Read before the placeholders are written; each joins the map as it is made.
  const members = await membersByHandle(tx, group.groupId);
  const placeholders: ImportResult["placeholders"] = [];
  const namingProblems: ImportProblem[] = [];
  for (const [name, handle] of input.names) {
    if (!handle.startsWith("+")) {
      names.set(name, handle);
      continue;
    }
    const given = DisplayName.safeParse(handle.slice(1).trim());
    if (!given.success) {
      namingProblems.push({ input: "names", text: `${name}=${handle}: a new placeholder needs a name of 1-80 characters after the +` });
      names.set(name, handle);
      continue;
    }
    const { memberId, code, expiresAt } = await insertPlaceholder(tx, now, group.groupId, given.data, group.createdBy);
    placeholders.push({ column: name, name: given.data, member_id: memberId, claim_code: code, claim_path: claimPath(code), claim_expires_at: expiresAt });
    names.set(name, memberId);
    members.set(memberId, { agentId: memberId, handle: memberId, displayName: given.data });
  }
  const { plan, problems } = parseSplitwise(input.text, names, group.currency, rates);
  problems.push(...namingProblems);
  for (const [name, handle] of input.names) {
    if (!handle.startsWith("+") && !members.has(handle)) problems.push({ input: "names", text: `${name}=${handle}: @${handle} is not a member of the group` });
  }
  const refuse = (list: ImportProblem[]) =>
    new AppError("VALIDATION_ERROR", `The Splitwise file was not imported: ${list.length} problem${list.length === 1 ? "" : "s"} to fix.`, { problems: list });
  if (problems.length) throw refuse(problems);

  const importId = createHash("sha256").update(input.text).digest("hex").slice(0, 16);
  const earlier = await tx
    .select({ at: ledgerActivity.createdAt })
    .from(ledgerActivity)
    .where(
      and(
        eq(ledgerActivity.groupId, group.groupId),
        eq(ledgerActivity.action, "splitwise_imported"),
        sql`json_extract(${ledgerActivity.refs}, '$.import_id') = ${importId}`,
      ),
    )
    .get();
  if (earlier) throw conflict(`This file was already imported into the group at ${earlier.at}.`, { import_id: importId });

  const actorOf = (handle: string) => ({ agentId: members.get(handle)!.agentId, handle });
  for (const e of plan.expenses) {
    const actor = actorOf(e.paidBy[0]!.handle);
    try {
      const state = newExpenseState(
        group,
        members,
        actor,
        {
          description: e.description,
          amount_minor: e.amountMinor,
          currency: e.currency,
          ...(e.currency === group.currency ? {} : { exchange_rate: rates.get(e.currency)! }),
          date: e.date,
          category: e.category,
          paid_by: e.paidBy,
          split: { mode: "exact", among: e.shares.map((s) => ({ handle: s.handle, value: formatAmount(s.amount_minor, e.currency) })) },
          refs: { import_id: importId, splitwise_line: String(e.line) },
        },
        now,
      );
      await createExpense(tx, now, group, actor, state, { activityNote: " (imported from Splitwise)", members });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      problems.push(`line ${e.line}: ${err.message}`);
    }
  }
  const converted = plan.payments.map((p) => {
    try {
      return inGroupCurrency({ currency: p.currency, amount_minor: p.amountMinor, exchangeRate: rates.get(p.currency) ?? null }, group.currency);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      problems.push(`line ${p.line}: ${err.message}`);
      return null;
    }
  });
  if (problems.length) throw refuse(problems);
  for (const [i, p] of plan.payments.entries()) {
    await insertPayment(tx, now, group, {
      from: members.get(p.from)!,
      to: members.get(p.to)!,
      ...converted[i]!,
      state: "confirmed",
      note: `${p.description} (Splitwise, ${p.date})`,
      createdBy: members.get(p.to)!.agentId,
    });
  }
  // As the call read it: it has written only the placeholders' rows.
  const owner = (await agentById(snapshotOf(tx), group.createdBy))!;
  const used = [...new Set([...plan.expenses, ...plan.payments].map((r) => r.currency))].filter((c) => c !== group.currency).sort();
  await logActivity(tx, now, {
    groupId: group.groupId,
    actorId: owner.agentId,
    action: "splitwise_imported",
    summary: `Imported ${plan.expenses.length} expenses and ${plan.payments.length} payments from a Splitwise export${used.length ? ` (${used.map((c) => `${c} at ${rates.get(c)} ${group.currency}`).join(", ")})` : ""}`,
    refs: { import_id: importId },
  });
  return {
    group_id: group.groupId,
    import_id: importId,
    placeholders,
    expenses: plan.expenses.length,
    payments: plan.payments.length,
    skipped: plan.skipped,
    skipped_total: [...plan.skippedTotals]
      .sort(([a], [b]) => compareText(a, b))
      .map(([currency, minor]) => ({ currency, amount_minor: Number(minor), amount: formatAmount(minor, currency) })),
  };
}
