// How `svc call` shows answers to a person at a terminal: ledger balances and settle-up as sentences (per currency
// with by_currency), expenses and payments as tables, an expense with its original currency and history, the
// inbox, a group's activity and get_me as their digest first with ids only on --ids, a new API key with the svc
// login line that stores it. Piped, or with --json-out, the same answers stay JSON. Any other answer is shown by toText.
import { balanceSentence, counterpartySentence, paymentSentence, settleUpNote, transferSentence, whoIs } from "../server/contract/ledger-wording.ts";
import { printable, table, toText } from "./output.ts";

// Answers arrive as JSON; their shapes are the tools' output schemas, checked by the server.
type Data = any;

const section = (title: string, lines: string[], empty: string) => [`${title}:`, ...(lines.length ? lines.map((l) => `  ${l}`) : [`  ${empty}`])];

function expenseTable(expenses: Data[]): string {
  if (!expenses.length) return "No expenses.";
  const rows = expenses.map((e) => [
    e.date,
    `${e.kind === "refund" ? "refund: " : ""}${e.description.untrusted_content}`,
    `${e.amount} ${e.currency}`,
    e.paid_by.length === 1 ? e.paid_by[0].handle : e.paid_by.map((p: Data) => `${p.handle} ${p.amount}`).join(", "),
    e.deleted ? "deleted" : e.state,
  ]);
  return table([["DATE", "DESCRIPTION", "AMOUNT", "PAID BY", "STATE"], ...rows]);
}

const amounts = (list: Data[]) => list.map((x) => `${x.handle} ${x.amount}`).join(", ");

/** Given in another currency: the amount as given and the rate it was converted at, once. */
const originalLine = (e: Data, currency: string) =>
  e.original ? [`  given as ${e.original.amount} ${e.original.currency}, at ${e.original.exchange_rate} ${currency} per ${e.original.currency}`] : [];

/** One expense: what, how much, who paid, who shares it. */
function expenseText(e: Data): string {
  return [
    `${e.kind === "refund" ? "Refund: " : ""}${e.description.untrusted_content}: ${e.amount} ${e.currency} on ${e.date} (${e.category})${e.deleted ? ", deleted" : e.state === "disputed" ? ", disputed" : ""}`,
    ...originalLine(e, e.currency),
    `  ${e.kind === "refund" ? "received by" : "paid by"} ${amounts(e.paid_by)}`,
    `  shares (${e.split.mode}): ${amounts(e.shares)}`,
    ...(e.notes ? [`  notes: ${e.notes.untrusted_content}`] : []),
    ...(e.responses ?? []).map(
      (r: Data) =>
        `  ${r.agent.handle} ${r.action === "confirm" ? "confirmed" : "disputed"} version ${r.version}${r.reason ? `: ${r.reason.untrusted_content}` : ""}`,
    ),
    `  expense_id ${e.expense_id}, version ${e.version}`,
  ]
    .map(printable)
    .join("\n");
}

const when = (ts: string) => `${ts.slice(0, 10)} ${ts.slice(11, 16)}`;

/** get_expense: the expense, then each version: who changed what, and the amount as it was then. */
function historyText(d: Data): string[] {
  return section(
    "History",
    d.history.map((h: Data) =>
      printable(
        `v${h.version} ${when(h.changed_at)} ${h.action} by ${h.changed_by.handle}${h.changed_fields.length && h.action === "updated" ? ` (${h.changed_fields.join(", ")})` : ""}: ` +
          `${h.expense.amount} ${h.expense.currency}${h.expense.original ? ` (${h.expense.original.amount} ${h.expense.original.currency} at ${h.expense.original.exchange_rate})` : ""}, ` +
          `paid by ${amounts(h.expense.paid_by)}`,
      ),
    ),
    "none",
  );
}

/** get_balances by_currency=true: per currency the amounts were given in, each member's part and its net in the group's currency. */
function byCurrencyText(d: Data): string[] {
  return (d.by_currency ?? []).flatMap((c: Data) =>
    section(
      `In ${c.currency}${c.currency === d.currency ? "" : ` (converted to ${d.currency} as each amount was)`}`,
      c.members.map((m: Data) =>
        printable(
          `${m.agent.handle}: paid ${m.paid}, share ${m.owes}, payments sent ${m.payments_sent}, received ${m.payments_received}; net ${m.net}` +
            (c.currency === d.currency ? "" : ` = ${m.converted}`),
        ),
      ),
      "nothing",
    ),
  );
}

function balancesText(d: Data): string {
  if (d.group_id === undefined) {
    return [
      ...section(
        // Joined, not one template: a template starting "With ${" reads as SQL to the SQL scan (security.test.ts).
        "With each person",
        (d.counterparties ?? []).map(
          (c: Data) =>
            `${counterpartySentence(c)} (${c.groups.map((g: Data) => `${g.name}: ${g.balance}`).join("; ")})${
              c.to_settle !== undefined && c.to_settle_minor !== c.balance_minor
                ? `; to settle, counting the payments waiting for confirmation: ${c.to_settle}`
                : ""
            }`,
        ),
        "you are settled up with everyone",
      ),
      ...section(
        "Your totals",
        (d.totals ?? []).map((t: Data) => t.balance),
        "none",
      ),
      ...section(
        "Waiting for confirmation",
        d.pending_payments.map((p: Data) => paymentSentence(p)),
        "nothing",
      ),
    ]
      .map(printable)
      .join("\n");
  }
  return [
    ...section(
      `Balances (${d.currency})`,
      d.members.map((m: Data) => balanceSentence(whoIs(m.agent), m)),
      "no members",
    ),
    ...section(
      `To settle up${settleUpNote(d) ? `, ${settleUpNote(d)}` : ""}${d.settle_up_counts_pending?.length ? ", counting the payments waiting for confirmation as if confirmed" : ""}`,
      d.settle_up.map((t: Data) => transferSentence(t, d.currency)),
      "everyone is settled up",
    ),
    ...section(
      "Waiting for confirmation",
      d.pending_payments.map((p: Data) => paymentSentence(p)),
      "nothing",
    ),
    ...byCurrencyText(d),
  ]
    .map(printable)
    .join("\n");
}

/** get_spending: per currency, the total and one line per category, month or member. */
function spendingText(d: Data): string {
  const range = d.since_date || d.until_date ? ` from ${d.since_date ?? "the first"} to ${d.until_date ?? "the last"}` : "";
  if (!d.currencies.length) return `No groups, no spending${range}.`;
  return d.currencies
    .flatMap((c: Data) =>
      section(
        `Spending by ${d.by} in ${c.currency}: ${c.total} over ${c.count} ${c.count === 1 ? "expense" : "expenses"}${range} (${c.groups.map((g: Data) => g.name).join(", ")})`,
        c.rows.map((r: Data) => (d.by === "member" ? `${r.key}: paid ${r.paid}, share ${r.amount} (${r.count})` : `${r.key}: ${r.amount} (${r.count})`)),
        "nothing spent",
      ),
    )
    .map(printable)
    .join("\n");
}

/** A payment across groups: the whole as one sentence, then each group's part. */
function acrossGroupsText(first: Data, total: string, parts: Data[]): string {
  const whole = paymentSentence({ ...first, amount: total }).replace(
    ` ${first.currency}`,
    ` ${first.currency} across ${parts.length} ${parts.length === 1 ? "group" : "groups"}`,
  );
  return [
    whole,
    ...parts.map(
      (p) =>
        `  ${p.name}: ${p.payment.amount} ${p.payment.currency}${p.owed ? ` (owed ${p.owed})` : ""}, ${p.payment.state}, payment_id ${p.payment.payment_id}`,
    ),
  ]
    .map(printable)
    .join("\n");
}

function groupText(g: Data): string {
  return [
    printable(`${g.name} (${g.kind === "direct" ? "direct ledger" : "group"}, ${g.currency}${g.archived ? ", archived" : ""}): your balance ${g.my_balance}`),
    `  group_id ${g.group_id}`,
    ...(g.members ?? []).map((m: Data) =>
      printable(
        `  ${balanceSentence(m.agent ? m.agent.handle : `${m.name} (no account yet, member_id ${m.member_id})`, m)}${m.role === "owner" ? " (owner)" : ""}`,
      ),
    ),
  ].join("\n");
}

const more = (d: Data) => (d.next_cursor ? [`more: cursor=${d.next_cursor}`] : []);

/** How the text of a few answers reads: ids only when asked (--ids). */
export interface TextOptions {
  ids: boolean;
}

/** get_me: who you are, your groups and what waits; ids with --ids. */
function meText(d: Data, o: TextOptions): string[] {
  const a = d.agent;
  const verified = Object.entries(d.verification)
    .filter(([, v]) => v)
    .map(([k]) => k);
  return [
    printable(`@${a.handle} (${a.display_name})${a.description ? `: ${a.description}` : ""}`),
    ...(o.ids ? [`  agent_id ${a.agent_id}`] : []),
    `  verified: ${verified.length ? verified.join(", ") : "nothing yet"}`,
    ...(d.pending_invites_count
      ? [`  ${d.pending_invites_count} group invitation${d.pending_invites_count === 1 ? "" : "s"} waiting (svc call get_inbox)`]
      : []),
    "",
    ...section(
      "Groups",
      d.groups.map((g: Data) =>
        printable(
          `${g.name} (${g.kind === "direct" ? "direct ledger" : `${g.member_count} member${g.member_count === 1 ? "" : "s"}`}, ${g.currency}${g.archived ? ", archived" : ""})` +
            `${g.my_balance ? `: your balance ${g.my_balance}` : ""}${o.ids ? `  group_id=${g.group_id}` : ""}`,
        ),
      ),
      "none yet (svc call create_group)",
    ),
  ];
}

const refsText = (refs: Record<string, string>) =>
  Object.entries(refs)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");

/** get_inbox: the digest's first line (how many, what waits), then each item in full; ids with --ids. */
function inboxText(d: Data, o: TextOptions): string[] {
  const items = d.items.flatMap((i: Data) => [
    "",
    printable(
      `${when(i.created_at)}  ${i.type}${i.from ? ` from @${i.from.handle}` : ""}${!i.requires_action ? "" : i.resolved ? " (answered)" : " (needs a decision)"}`,
    ),
    ...printable(i.summary_md)
      .split("\n")
      .map((l: string) => `  ${l}`),
    ...(i.note ? [printable(`  note: ${i.note.untrusted_content}`)] : []),
    ...(o.ids ? [printable(`  item_id=${i.item_id}${Object.keys(i.refs).length ? ` ${refsText(i.refs)}` : ""}`)] : []),
  ]);
  return [printable(d.digest_md.split("\n")[0]!), ...items, ...(d.next_cursor ? ["", `more: since=${d.next_cursor}`] : [])];
}

/** get_activity: what happened, newest first; ids with --ids. */
function activityText(d: Data, o: TextOptions): string[] {
  if (!d.entries.length) return ["Nothing has happened in this group yet.", ...more(d)];
  return [
    ...d.entries.map((e: Data) =>
      printable(`${when(e.created_at)}  ${e.summary_md.replaceAll("\n", " ")}${o.ids && Object.keys(e.refs).length ? `  ${refsText(e.refs)}` : ""}`),
    ),
    ...more(d),
  ];
}

const RENDERERS: Record<string, (d: Data, o: TextOptions) => string[]> = {
  get_me: meText,
  get_inbox: inboxText,
  get_activity: activityText,
  get_balances: (d) => [balancesText(d)],
  list_expenses: (d) => [expenseTable(d.expenses), ...more(d)],
  list_payments: (d) => [
    d.payments.length
      ? table([["DATE", "PAYMENT", "STATE"], ...d.payments.map((p: Data) => [p.created_at.slice(0, 10), paymentSentence(p), p.state])])
      : "No payments.",
    ...more(d),
  ],
  list_groups: (d) => [
    d.groups.length
      ? table([
          ["NAME", "CURRENCY", "MEMBERS", "YOUR BALANCE", "GROUP_ID"],
          ...d.groups.map((g: Data) => [g.name, g.currency, String(g.member_count), g.my_balance, g.group_id]),
        ])
      : "You are in no group.",
    ...more(d),
  ],
  get_group: (d) => [groupText(d.group)],
  create_group: (d) => [groupText(d.group)],
  update_group: (d) => [groupText(d.group)],
  add_expense: (d) => [expenseText(d.expense)],
  get_expense: (d) => [expenseText(d.expense), "", ...historyText(d)],
  update_expense: (d) => [expenseText(d.expense)],
  delete_expense: (d) => [expenseText(d.expense)],
  restore_expense: (d) => [expenseText(d.expense)],
  respond_expense: (d) => [expenseText(d.expense)],
  record_payment: (d) =>
    d.parts ? [acrossGroupsText(d.payment, d.total, d.parts)] : [printable(`${paymentSentence(d.payment)} (payment_id ${d.payment.payment_id})`)],
  respond_payment: (d) =>
    d.parts
      ? [
          printable(`One payment across ${d.parts.length} groups, all its parts ${d.payment.state}:`),
          ...d.parts.map((p: Data) => printable(`  ${paymentSentence(p)} (group_id ${p.group_id}, payment_id ${p.payment_id})`)),
        ]
      : [printable(`${paymentSentence(d.payment)} (payment_id ${d.payment.payment_id})`)],
  export_group: (d) => [printable(d.content.untrusted_content).trimEnd()],
  get_spending: (d) => [spendingText(d)],
};

/** What every answer also says: the inbox waiting, and the tools that usually come next. */
function footer(d: Data): string[] {
  const lines: string[] = [];
  if (d.inbox && (d.inbox.unread || d.inbox.requires_action))
    lines.push(`inbox: ${d.inbox.unread} unread, ${d.inbox.requires_action} waiting for you (svc call get_inbox)`);
  // Each tool once, and not again when the inbox line already names it.
  const next = [...new Set<string>(d.suggested_next ?? [])].filter((t) => !(t === "get_inbox" && lines.length));
  if (next.length) lines.push(`next: ${next.join(", ")}`);
  return lines;
}

/**
 * An answer that hands out an API key (register_agent, finish_join): its next_step speaks HTTP (an Authorization
 * header); at a terminal the way to use the key is svc login, with this server's URL.
 */
function withKey(d: Data, url: string): string {
  const { next_step: _, ...rest } = d;
  return [toText(rest), "", "Store the key (it is shown only once) so that svc call needs no flags:", `  svc login --key ${d.api_key} --url ${url}`].join("\n");
}

/** The text a person sees for a tool's answer from the server at `url`. */
export function textFor(tool: string, url: string, o: TextOptions = { ids: false }): (d: Data) => string {
  const render = RENDERERS[tool];
  return (d) => {
    if (typeof d.api_key === "string") return withKey(d, url);
    return render ? [...render(d, o), "", ...footer(d)].join("\n").trimEnd() : toText(d);
  };
}
