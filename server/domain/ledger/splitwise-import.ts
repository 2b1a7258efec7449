// Importing a Splitwise CSV export into a group (svc import splitwise). The export has the columns
// Date,Description,Category,Cost,Currency and then one per person holding that person's net for the row
// (what they paid minus their share; positive: they are owed). Rows of category "Payment" are payments.
// The whole file is checked first and imported in one transaction, or not at all.
import { and, eq, sql } from "drizzle-orm";
import { createHash } from "node:crypto";
import type { Tx } from "../../../db/client.ts";
import { groups, ledgerActivity } from "../../../db/schema/index.ts";
import { AppError, conflict, notFound } from "../../errors.ts";
import { DateOnly, type Category } from "../../tools/expenses/shapes.ts";
import { agentById } from "../agents.ts";
import { currencyExponent } from "./currencies.ts";
import { parseCsv } from "./csv.ts";
import { insertExpense, membersByHandle, moneyText, newExpenseState } from "./expenses.ts";
import { logActivity } from "./membership.ts";
import { formatAmount, MAX_MINOR, parseDecimal } from "./money.ts";
import { insertPayment } from "./payments.ts";
import { allocate } from "./splits.ts";
import { CONTROL } from "../untrusted.ts";

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
  amountMinor: number;
  paidBy: { handle: string; amount_minor: number }[];
  shares: { handle: string; amount_minor: number }[];
}

export interface SplitwisePayment {
  line: number;
  date: string;
  description: string;
  from: string;
  to: string;
  amountMinor: number;
}

export interface SplitwisePlan {
  expenses: SplitwiseExpense[];
  payments: SplitwisePayment[];
  /** Rows that move no money (everyone's net is zero), with why they were left out. */
  skipped: { line: number; reason: string }[];
}

/** "Name=handle,Other Name=handle2" -> Map(name -> handle). */
export function parseNameMap(text: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const pair of text.split(",").filter((p) => p.trim())) {
    const eq = pair.indexOf("=");
    const name = pair.slice(0, eq).trim();
    const handle = pair
      .slice(eq + 1)
      .trim()
      .replace(/^@/, "");
    if (eq < 1 || !name || !/^[a-z0-9][a-z0-9_-]{2,31}$/.test(handle)) throw new Error(`--map: "${pair.trim()}" is not Name=handle`);
    if (map.has(name)) throw new Error(`--map: ${name} is mapped twice`);
    map.set(name, handle);
  }
  if (!map.size) throw new Error("--map: give at least one Name=handle");
  return map;
}

/**
 * Reads a Splitwise export for a group keeping its accounts in `currency`. Every problem in the file is
 * reported (with its line), so one run shows everything to fix; the plan is only usable without problems.
 * Per row, each person's net must sum to zero. Who paid and who shares is rebuilt from the nets: those
 * owing (negative net) have a share of what they owe and paid nothing; those owed paid their net plus a
 * share of the rest of the cost, divided among them in proportion to their nets.
 */
export function parseSplitwise(text: string, names: Map<string, string>, currency: string): { plan: SplitwisePlan; problems: string[] } {
  const plan: SplitwisePlan = { expenses: [], payments: [], skipped: [] };
  const problems: string[] = [];
  let rows: { line: number; fields: string[] }[];
  try {
    rows = parseCsv(text);
  } catch (err) {
    return { plan, problems: [(err as Error).message] };
  }
  const header = rows.shift();
  const columns = header?.fields.map((f) => f.trim()) ?? [];
  if (columns.length <= FIXED_COLUMNS.length || FIXED_COLUMNS.some((c, i) => columns[i]?.toLowerCase() !== c)) {
    return {
      plan,
      problems: [`line 1: expected the header Date,Description,Category,Cost,Currency followed by one column per person, got: ${columns.join(",")}`],
    };
  }
  const people = columns.slice(FIXED_COLUMNS.length);
  for (const name of people.filter((n) => !names.has(n)))
    problems.push(`line 1: the column "${name}" is not mapped to a handle; add ${name}=<handle> to --map`);
  for (const name of [...names.keys()].filter((n) => !people.includes(n)))
    problems.push(`--map: "${name}" is not a column of the file (columns: ${people.join(", ")})`);
  const scale = currencyExponent(currency);

  for (const { line, fields } of rows) {
    if (fields.every((f) => f.trim() === "")) continue;
    const [rawDate = "", description = "", category = "", cost = "", rowCurrency = ""] = fields.map((f) => f.trim());
    // Splitwise ends the export with a "Total balance" row without a date.
    if (rawDate === "" && description.toLowerCase() === "total balance") continue;
    const at = `line ${line}`;
    if (fields.length !== columns.length) {
      problems.push(`${at}: ${fields.length} fields, but the header has ${columns.length}`);
      continue;
    }
    const date = rawDate.slice(0, 10);
    if (!DateOnly.safeParse(date).success) problems.push(`${at}: the date "${rawDate}" is not a date YYYY-MM-DD`);
    if (rowCurrency !== currency) {
      problems.push(
        `${at}: the currency ${rowCurrency || "(empty)"} is not the group's ${currency}; convert it in Splitwise or import into a ${rowCurrency || "matching"} group`,
      );
      continue;
    }
    const number = (value: string, what: string, signed: boolean): bigint | null => {
      try {
        return value === "" && signed ? 0n : parseDecimal(value, { scale, signed, unit: currency }, what);
      } catch (err) {
        problems.push(`${at}: ${what} "${value}" is not an amount in ${currency} (${(err as AppError).message.replace(/^Invalid arguments: /, "")})`);
        return null;
      }
    };
    const total = number(cost, "Cost", false);
    const nets = people.map((name, i) => ({ name, handle: names.get(name) ?? name, net: number(fields[FIXED_COLUMNS.length + i]!.trim(), name, true) }));
    if (total === null || nets.some((n) => n.net === null)) continue;
    if (total <= 0n || total > BigInt(MAX_MINOR)) {
      problems.push(`${at}: the cost must be between 0 and 15 digits, got ${cost}`);
      continue;
    }
    const sum = nets.reduce((a, n) => a + n.net!, 0n);
    if (sum !== 0n) {
      problems.push(
        `${at}: the people's amounts sum to ${moneyText(sum, currency)}, not zero (${nets.map((n) => `${n.name} ${formatAmount(n.net!, currency)}`).join(", ")})`,
      );
      continue;
    }
    const owed = nets.filter((n) => n.net! > 0n);
    const owing = nets.filter((n) => n.net! < 0n);
    const debt = owing.reduce((a, n) => a - n.net!, 0n);
    const text = cleanDescription(description);
    if (!owed.length) {
      plan.skipped.push({ line, reason: `"${text}" moves no money between people (everyone's amount is zero)` });
      continue;
    }
    if (category.toLowerCase() === "payment") {
      if (owed.length !== 1 || owing.length !== 1) {
        problems.push(`${at}: a payment needs exactly one person paying (positive) and one paid (negative)`);
        continue;
      }
      plan.payments.push({ line, date, description: text, from: owed[0]!.handle, to: owing[0]!.handle, amountMinor: Number(debt) });
      continue;
    }
    if (debt > total) {
      problems.push(`${at}: the people's debts (${moneyText(debt, currency)}) are more than the cost (${moneyText(total, currency)})`);
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
      amountMinor: Number(total),
      paidBy: owed.map((n, i) => ({ handle: n.handle, amount_minor: Number(n.net! + ownShares[i]!) })),
      shares: [
        ...owed.map((n, i) => ({ handle: n.handle, amount_minor: Number(ownShares[i]!) })),
        ...owing.map((n) => ({ handle: n.handle, amount_minor: Number(-n.net!) })),
      ].filter((s) => s.amount_minor > 0),
    });
  }
  return { plan, problems };
}

/** Descriptions become plain one-line text of at most 140 characters, as add_expense takes them. */
function cleanDescription(text: string): string {
  const flat = [
    ...text
      .replace(CONTROL, " ")
      .replace(/\s+/g, " ")
      .trim(),
  ];
  const short = flat.length > 140 ? `${flat.slice(0, 139).join("")}…` : flat.join("");
  return short || "(no description)";
}

export interface ImportResult {
  group_id: string;
  import_id: string;
  expenses: number;
  payments: number;
  skipped: { line: number; reason: string }[];
}

/**
 * Imports a Splitwise export into a group in one go. Refuses (VALIDATION_ERROR with details.problems
 * listing every problem) when the file does not balance, a name is unmapped, or a handle is not a
 * member; refuses (CONFLICT) a file already imported into the group. Imported rows tell no one:
 * a whole history would flood the members' inboxes; the activity log records each row and the import.
 */
export async function importSplitwise(tx: Tx, now: Date, input: { groupId: string; text: string; names: Map<string, string> }): Promise<ImportResult> {
  const group = await tx.select().from(groups).where(eq(groups.groupId, input.groupId)).get();
  if (!group) throw notFound("Group");
  if (group.archived) throw conflict("The group is archived and read-only; unarchive it before importing.");
  const { plan, problems } = parseSplitwise(input.text, input.names, group.currency);
  const members = await membersByHandle(tx, group.groupId);
  for (const [name, handle] of input.names) {
    if (!members.has(handle)) problems.push(`--map: ${name}=${handle}: @${handle} is not a member of the group`);
  }
  const refuse = (list: string[]) =>
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
          date: e.date,
          category: e.category,
          paid_by: e.paidBy,
          split: { mode: "exact", among: e.shares.map((s) => ({ handle: s.handle, value: formatAmount(s.amount_minor, group.currency) })) },
          refs: { import_id: importId, splitwise_line: String(e.line) },
        },
        now,
      );
      await insertExpense(tx, now, group, members, actor, state, { notify: false, activityNote: " (imported from Splitwise)" });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      problems.push(`line ${e.line}: ${err.message}`);
    }
  }
  if (problems.length) throw refuse(problems);
  for (const p of plan.payments) {
    await insertPayment(tx, now, group, {
      from: members.get(p.from)!,
      to: members.get(p.to)!,
      amountMinor: p.amountMinor,
      state: "confirmed",
      note: `${p.description} (Splitwise, ${p.date})`,
      createdBy: members.get(p.to)!.agentId,
    });
  }
  const owner = (await agentById(tx, group.createdBy))!;
  await logActivity(tx, now, {
    groupId: group.groupId,
    actorId: owner.agentId,
    action: "splitwise_imported",
    summary: `Imported ${plan.expenses.length} expenses and ${plan.payments.length} payments from a Splitwise export`,
    refs: { import_id: importId },
  });
  return { group_id: group.groupId, import_id: importId, expenses: plan.expenses.length, payments: plan.payments.length, skipped: plan.skipped };
}
