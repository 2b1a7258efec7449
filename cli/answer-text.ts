// How `svc call` shows answers to a person at a terminal: ledger balances and settle-up as sentences, expenses and
// payments as tables, a new API key with the svc login line that stores it. Piped, or with --json-out, the same
// answers stay JSON. Any other answer is shown by toText.
import { balanceSentence, counterpartySentence, paymentSentence, SETTLE_UP_NOTE, transferSentence, whoIs } from "../server/contract/ledger-wording.ts";
import { printable, table, toText } from "./output.ts";

// Answers arrive as JSON; their shapes are the tools' output schemas, checked by the server.
type Data = any;

const section = (title: string, lines: string[], empty: string) => [`${title}:`, ...(lines.length ? lines.map((l) => `  ${l}`) : [`  ${empty}`])];

function expenseTable(expenses: Data[]): string {
  if (!expenses.length) return "No expenses.";
  const rows = expenses.map((e) => [
    e.date,
    e.description.untrusted_content,
    `${e.amount} ${e.currency}`,
    e.paid_by.length === 1 ? e.paid_by[0].handle : e.paid_by.map((p: Data) => `${p.handle} ${p.amount}`).join(", "),
    e.deleted ? "deleted" : e.state,
  ]);
  return table([["DATE", "DESCRIPTION", "AMOUNT", "PAID BY", "STATE"], ...rows]);
}

/** One expense: what, how much, who paid, who shares it. */
function expenseText(e: Data): string {
  const amounts = (list: Data[]) => list.map((x) => `${x.handle} ${x.amount}`).join(", ");
  return [
    `${e.description.untrusted_content}: ${e.amount} ${e.currency} on ${e.date} (${e.category})${e.deleted ? ", deleted" : e.state === "disputed" ? ", disputed" : ""}`,
    `  paid by ${amounts(e.paid_by)}`,
    `  shares (${e.split.mode}): ${amounts(e.shares)}`,
    `  expense_id ${e.expense_id}, version ${e.version}`,
  ]
    .map(printable)
    .join("\n");
}

function balancesText(d: Data): string {
  if (d.group_id === undefined) {
    return [
      ...section(
        "With each person",
        (d.counterparties ?? []).map((c: Data) => `${counterpartySentence(c)} (${c.groups.map((g: Data) => `${g.name}: ${g.balance}`).join("; ")})`),
        "you are settled up with everyone",
      ),
      ...section(
        "Your totals",
        (d.totals ?? []).map((t: Data) => t.balance),
        "none",
      ),
      ...section("Waiting for confirmation", d.pending_payments.map(paymentSentence), "nothing"),
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
      `To settle up${SETTLE_UP_NOTE[d.settle_up_method] ? `, ${SETTLE_UP_NOTE[d.settle_up_method]}` : ""}`,
      d.settle_up.map((t: Data) => transferSentence(t, d.currency)),
      "everyone is settled up",
    ),
    ...section("Waiting for confirmation", d.pending_payments.map(paymentSentence), "nothing"),
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

const RENDERERS: Record<string, (d: Data) => string[]> = {
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
  get_expense: (d) => [expenseText(d.expense)],
  update_expense: (d) => [expenseText(d.expense)],
  delete_expense: (d) => [expenseText(d.expense)],
  restore_expense: (d) => [expenseText(d.expense)],
  respond_expense: (d) => [expenseText(d.expense)],
  record_payment: (d) => [printable(`${paymentSentence(d.payment)} (payment_id ${d.payment.payment_id})`)],
  respond_payment: (d) => [printable(`${paymentSentence(d.payment)} (payment_id ${d.payment.payment_id})`)],
  export_group: (d) => [printable(d.content.untrusted_content).trimEnd()],
};

/** What every answer also says: the inbox waiting, and the tools that usually come next. */
function footer(d: Data): string[] {
  const lines: string[] = [];
  if (d.inbox && (d.inbox.unread || d.inbox.requires_action))
    lines.push(`inbox: ${d.inbox.unread} unread, ${d.inbox.requires_action} waiting for you (svc call get_inbox)`);
  if (d.suggested_next?.length) lines.push(`next: ${d.suggested_next.join(", ")}`);
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
export function textFor(tool: string, url: string): (d: Data) => string {
  const render = RENDERERS[tool];
  return (d) => {
    if (typeof d.api_key === "string") return withKey(d, url);
    return render ? [...render(d), "", ...footer(d)].join("\n").trimEnd() : toText(d);
  };
}
