// /groups and /groups/{group_id}: a signed-in human's groups: balances as a chart (SVG drawn here, no script), how to
// settle up (each suggestion a button that records the payment), what waits for their confirmation (with its
// buttons), recent expenses and payments, and a CSV export. Every read is the domain function the read tools use, as
// the signed-in agent, so a group the human is not in is NOT_FOUND, shown as the same 404 page as any unknown
// address; every action is a tool call through invoke() as the browser's client (server/web/pages.ts, action).
import { groupBalanceView } from "../domain/ledger/balances/balances.ts";
import { listExpenses, listRecurring } from "../domain/ledger/expenses/expenses.ts";
import { csvBatch, csvHeader, EXPORT_START, exportFile, ledgerBatch, type ExportCursor } from "../domain/ledger/exchange/export.ts";
import { groupView, listGroups } from "../domain/ledger/groups/groups.ts";
import { requireMember } from "../domain/ledger/groups/membership.ts";
import { listPayments } from "../domain/ledger/payments/payments.ts";
import { SPENDING_BY, spending, type SpendingBy, type SpendingRow } from "../domain/ledger/spending/spending.ts";
import type { DomainContext } from "../contract/principal.ts";
import { balanceSentence, paymentSentence, settleUpNote, transferSentence } from "../contract/ledger-wording.ts";
import { listActivity } from "../domain/ledger/groups/activity.ts";
import { formatAmount } from "../domain/ledger/money/amounts.ts";
import { AppError } from "../errors.ts";
import {
  activityText,
  count,
  decimalCommaOf,
  errorText,
  list,
  memberRefs,
  myNet,
  nameWithHandle,
  Names,
  typedAmount,
  youLine,
  type Person,
} from "./wording.ts";
import { claimPath, renewableLinks } from "../domain/ledger/groups/placeholders.ts";
import { claimMailForm } from "./email-pages.ts";
import type { Expense } from "../contract/ledger.ts";
import { Uuid } from "../contract/wire.ts";
import { compareText } from "../domain/ledger/money/splits.ts";
import { actingAs, formatTime, notFoundPage, type Messages, type WebContext } from "./context.ts";
import { fieldErrors, formKeyFor, type FieldErrors } from "./expense-pages.ts";
import { formKey } from "./form-keys.ts";
import copyScript from "./copy.js" with { type: "text" };
import { alert, field, form, html, notice, page, seeOther, serveScript, type Markup } from "./html.ts";
import { type ActionContext, toolForm, type FormMessages } from "./framework.ts";
import { again, button, required } from "./web-actions.ts";
import { signedIn } from "./session.ts";
import { signinBlock } from "./signin.ts";

const RECENT = 20;
const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** The sign-in block, for a page that needs a signed-in human. */
async function signinPage(c: WebContext, m: Messages): Promise<Response> {
  return page(
    "Your groups",
    html`${alert(m.error)}${notice(m.info)}<p>Sign in to see your groups: their balances, who owes whom and the latest expenses.</p>
${await signinBlock(c, "groups")}`,
    { status: m.status },
  );
}

/** GET /groups */
export async function renderGroups(c: WebContext, m: Messages = {}): Promise<Response> {
  if (!signedIn(c.session)) return signinPage(c, m);
  const cursor = c.url.searchParams.get("cursor") ?? undefined;
  const { groups, next_cursor } = await listGroups(await actingAs(c, c.session.agentId), true, 100, cursor);
  const rows = groups.map(
    (g) =>
      html`<tr><td><a href="/groups/${g.group_id}">${g.name}</a>${g.kind === "direct" ? html` <span class="muted">(direct)</span>` : ""}${g.archived ? html` <span class="badge">archived</span>` : ""}</td><td class="num">${g.member_count}</td><td class="num">${g.my_balance}</td></tr>`,
  );
  return page(
    "Your groups",
    html`${alert(m.error)}${notice(m.info)}
${
  groups.length
    ? html`<table><thead><tr><th scope="col">Group</th><th scope="col" class="num">Members</th><th scope="col" class="num">Your balance</th></tr></thead><tbody>${rows}</tbody></table>
<p class="muted">A positive balance: the others owe you.</p>`
    : html`<p>You are in no group yet. Make one below, or accept an invitation from <a href="/inbox">your inbox</a>.</p>`
}
${next_cursor ? html`<p><a href="/groups?cursor=${encodeURIComponent(next_cursor)}">More groups</a></p>` : ""}
<p><a href="/groups/new">New group</a></p>`,
    { status: m.status },
  );
}

/** The balances as a diverging bar chart: owed to the right (green), owing to the left (red), the amount on the other side. */
function balanceChart(
  members: { agent: { handle: string; agent_id: string; display_name: string }; balance_minor: number; balance: string }[],
  names: Names,
): Markup {
  const W = 360;
  const LABEL = 110;
  const ROW = 28;
  const axis = LABEL + (W - LABEL) / 2;
  const half = (W - LABEL) / 2 - 4;
  const max = Math.max(1, ...members.map((m) => Math.abs(m.balance_minor)));
  const height = members.length * ROW + 8;
  const label = (h: string) => (h.length > 14 ? `${h.slice(0, 13)}…` : h);
  const bars = members.map((m, i) => {
    const y = 4 + i * ROW;
    const width = Math.max(m.balance_minor === 0 ? 0 : 2, Math.round((Math.abs(m.balance_minor) / max) * half));
    const owed = m.balance_minor > 0;
    const x = owed ? axis : axis - width;
    const text = m.balance_minor === 0 ? "0" : m.balance;
    return html`<text x="0" y="${y + 18}">${label(names.short(m.agent))}</text>
<rect class="${owed ? "owed" : "owes"}" x="${x}" y="${y + 5}" width="${width}" height="${ROW - 10}" rx="2"></rect>
<text x="${owed || m.balance_minor === 0 ? axis - 6 : axis + 6}" y="${y + 18}" text-anchor="${owed || m.balance_minor === 0 ? "end" : "start"}">${text}</text>`;
  });
  const summary = members.map((m) => balanceSentence(names.of(m.agent), m)).join("; ");
  return html`<svg class="chart" viewBox="0 0 ${W} ${height}" width="${W}" height="${height}" role="img" aria-labelledby="chart-title"><title id="chart-title">Balances: ${summary}</title>
<line class="axis" x1="${axis}" y1="0" x2="${axis}" y2="${height}"></line>
${bars}</svg>`;
}

const SPENDING_LABELS: Record<SpendingBy, string> = { category: "By category", month: "By month", member: "By member" };

/**
 * Spending (get_spending's rows) as a bar chart: one bar per category, month or member (by member: what they paid),
 * the amount beside it; more refunded than spent shows as a red bar.
 */
function spendingChart(rows: SpendingRow[], by: SpendingBy, cur: string): Markup {
  const W = 360;
  const LABEL = 110;
  const ROW = 28;
  const width = W - LABEL - 90;
  const value = (r: SpendingRow) => (by === "member" ? r.paid_minor! : r.amount_minor);
  const text = (r: SpendingRow) => (by === "member" ? r.paid! : r.amount);
  const max = Math.max(1, ...rows.map((r) => Math.abs(value(r))));
  const height = rows.length * ROW + 8;
  const label = (h: string) => (h.length > 14 ? `${h.slice(0, 13)}…` : h);
  const bars = rows.map((r, i) => {
    const y = 4 + i * ROW;
    const w = Math.max(value(r) === 0 ? 0 : 2, Math.round((Math.abs(value(r)) / max) * width));
    return html`<text x="0" y="${y + 18}">${label(r.key)}</text>
<rect class="${value(r) < 0 ? "refunded" : "spent"}" x="${LABEL}" y="${y + 5}" width="${w}" height="${ROW - 10}" rx="2"></rect>
<text x="${LABEL + w + 6}" y="${y + 18}">${text(r)}</text>`;
  });
  const summary = rows.map((r) => `${r.key}: ${text(r)} ${cur}`).join("; ");
  const what = by === "member" ? "Paid by each member" : `Spending ${SPENDING_LABELS[by].toLowerCase()}`;
  return html`<svg class="chart" viewBox="0 0 ${W} ${height}" width="${W}" height="${height}" role="img" aria-labelledby="spending-title"><title id="spending-title">${what}: ${summary}</title>
${bars}</svg>`;
}

/** The spending section: the chart of one grouping (?spending=category|month|member), links to the others. */
async function spendingSection(ctx: DomainContext, c: WebContext, groupId: string, at: string, cur: string, names: Names): Promise<Markup> {
  const asked = c.url.searchParams.get("spending");
  const by: SpendingBy = SPENDING_BY.find((b) => b === asked) ?? "category";
  const [read] = (await spending(ctx, { group_id: groupId, by })).currencies;
  // By member, each row is a member's handle: said by their name.
  const totals = read && by === "member" ? { ...read, rows: read.rows.map((r) => ({ ...r, key: names.short(r.key) })) } : read;
  if (!totals?.count) return html`<p>Nothing spent yet.</p>`;
  const links = SPENDING_BY.map((b) =>
    b === by ? html`<strong>${SPENDING_LABELS[b]}</strong>` : html`<a href="${at}?spending=${b}#spending">${SPENDING_LABELS[b]}</a>`,
  );
  return html`<p>${totals.total} ${cur} over ${count(totals.count, "expense")}, refunds taken off. ${links.map((l, i) => (i ? html` · ${l}` : l))}</p>
${spendingChart(totals.rows, by, cur)}${by === "member" ? html`<p class="muted">What each member paid; their shares: ${totals.rows.map((r) => `${r.key} ${r.amount}`).join(", ")} ${cur}.</p>` : ""}`;
}

/** What the settle-up section says of the pending payments it counts (get_balances settle_up_counts_pending). */
const pendingCounted = (n: number) =>
  `The ${n === 1 ? "payment" : `${n} payments`} waiting for confirmation ${n === 1 ? "is" : "are"} counted as if confirmed, so ${n === 1 ? "it is" : "they are"} not suggested again; if one is rejected, what it paid is owed again.`;

/** A placeholder member (a friend with no account yet) as a ref: its handle is its id. */
const isPlaceholderRef = (r: { handle: string; agent_id: string }) => r.handle === r.agent_id;

/**
 * Participants of an expense (who paid or shares it) who have neither confirmed nor disputed its current version, its
 * creator aside; placeholders (by the id that stands for their handle) answer nothing.
 */
function waitingFor(e: Expense, placeholders: Set<string>): string[] {
  const answered = new Set(e.responses.filter((r) => r.version === e.version).map((r) => r.agent.handle));
  const involved = new Set([...e.paid_by.map((p) => p.handle), ...e.shares.map((s) => s.handle)]);
  return [...involved].filter((h) => h !== e.created_by.handle && !answered.has(h) && !placeholders.has(h)).sort();
}

const paidBy = (e: Expense, name: (handle: string) => string) => {
  const verb = e.kind === "refund" ? "received by" : "paid by";
  return e.paid_by.length === 1 ? `${verb} ${name(e.paid_by[0]!.handle)}` : `${verb} ${e.paid_by.map((p) => `${name(p.handle)} ${p.amount}`).join(", ")}`;
};

/** What the page says after an action succeeded (?done=...). */
const DONE: Record<string, string> = {
  payment: "Payment recorded. It counts once the payee confirms it.",
  received: "Payment recorded. It counts at once, and the payer is told.",
  answered: "Your answer is saved.",
  expense: "Expense added. The others are asked to confirm it.",
  placeholder: "Added. They take part in expenses and balances at once; send them the link below so they can take their place.",
  "placeholder-link": "A new link: send it to them so they can take their place. The old link no longer works.",
  "claim-mailed": "We e-mailed them the link to take their place.",
  confirmed: "The expenses are confirmed.",
  stopped: "The recurring expense is stopped: it adds no more occurrences.",
};

/** The record-a-payment form as it was sent, what the tool said of its fields, and whether it repeated a pending one. */
interface PaymentForm {
  values: URLSearchParams;
  errors: FieldErrors;
  /** Refused as a payment recorded twice: the form then asks whether it is a second payment. */
  twice: boolean;
}

/** A member as the payment form lists them: by handle, a placeholder (no account yet) by member_id. */
interface PaymentParty {
  key: string;
  label: string;
}

/**
 * Record a payment, either way: who paid and who was paid (the human is one of the two; a payment received counts at
 * once, so a friend without an account who paid cash is recorded by whoever got it), how much (another currency
 * with its rate), a note. Refused as repeating a pending payment, it asks whether this is a second one.
 */
function paymentForm(c: WebContext, at: string, parties: PaymentParty[], me: string, cur: string, sent?: PaymentForm): Markup {
  const v = (name: string) => sent?.values.get(name) ?? "";
  const e = sent?.errors ?? {};
  const from = sent ? v("from") : me;
  const to = sent ? v("to") : (parties.find((p) => p.key !== me)?.key ?? "");
  const choose = (name: "from" | "to", label: string, chosen: string) =>
    html`<label for="f-pay-${name}">${label}</label><select id="f-pay-${name}" name="${name}"${e[name] ? html` aria-invalid="true" aria-describedby="f-pay-${name}-error"` : ""}>${parties.map((p) => html`<option value="${p.key}"${p.key === chosen ? html` selected` : ""}>${p.label}</option>`)}</select>${e[name] ? html`<small id="f-pay-${name}-error" class="field-error">${e[name]}</small>` : ""}`;
  const fields = html`<input type="hidden" name="form" value="payment">
${choose("from", "Paid by", from)}
${choose("to", "Paid to", to)}
${field("amount", "Amount", { id: "f-pay-amount", value: v("amount"), required: true, error: e.amount, hint: "Such as 20.00 or 20,00." })}
${field("currency", "Currency", { id: "f-pay-currency", value: v("currency") || cur, maxlength: 3, error: e.currency })}
${field("exchange_rate", "Exchange rate", { id: "f-pay-rate", value: v("exchange_rate"), error: e.exchange_rate, hint: `Only for another currency: how many ${cur} one unit of it is worth.` })}
${field("note", "Note", { id: "f-pay-note", value: v("note"), maxlength: 500, error: e.note })}
${sent?.twice ? html`<div><input type="checkbox" id="f-pay-second" name="second_payment" value="1"> <label for="f-pay-second">It is a second payment, not the one already waiting</label></div>` : ""}`;
  return form(`${at}/payments`, c.session.csrfToken, fields, "Record the payment", { idempotencyKey: formKey(c, `${at}/payments`) });
}

/** The expense list's filters, from the page's address: words, a person, dates; an unusable value is left out. */
interface ExpenseFilters {
  q?: string;
  who?: string;
  from?: string;
  to?: string;
}

const DATE = /^(19|2\d)\d\d-\d\d-\d\d$/;

function filtersOf(url: URL, people: Set<string>): ExpenseFilters {
  const get = (name: string) => url.searchParams.get(name)?.trim() || undefined;
  const f: ExpenseFilters = {};
  const q = get("q");
  if (q) f.q = q.slice(0, 140);
  const who = get("who");
  if (who && people.has(who)) f.who = who;
  for (const k of ["from", "to"] as const) {
    const d = get(k);
    if (d && DATE.test(d)) f[k] = d;
  }
  return f;
}

/** The group page's address with these filters (and a cursor), landing on the expense list. */
function expensesHref(at: string, f: ExpenseFilters, cursor?: string): string {
  const q = new URLSearchParams();
  for (const k of ["q", "who", "from", "to"] as const) if (f[k]) q.set(k, f[k]!);
  if (cursor) q.set("cursor", cursor);
  const query = q.toString();
  return `${at}${query ? `?${query}` : ""}#expenses`;
}

/**
 * Every expense of the group, a page at a time (list_expenses' cursor), newest first: searched by words of the
 * description or notes, filtered by who paid or shares it and by date. Each line says what it means for the reader.
 */
function expenseSection(
  c: WebContext,
  at: string,
  cur: string,
  names: Names,
  myHandle: string,
  people: Person[],
  f: ExpenseFilters,
  shown: { expenses: Expense[]; next_cursor: string | null; stale: boolean },
): Markup {
  const filtered = Boolean(f.q || f.who || f.from || f.to);
  const cursor = c.url.searchParams.get("cursor");
  const money = (minor: number) => `${formatAmount(minor, cur)} ${cur}`;
  const rows = shown.expenses.map((e) => {
    const mine = youLine(myNet(e, myHandle), money, e.kind === "refund");
    return html`<tr><td class="date">${e.date}</td><td><a href="${at}/expenses/${e.expense_id}">“${e.description.untrusted_content}”</a><br><span class="muted">${paidBy(e, (h) => names.short(h))}</span> · <strong>${mine}</strong>${e.kind === "refund" ? html` <span class="badge">refund</span>` : ""}${e.state === "disputed" ? html` <span class="badge">disputed</span>` : ""}</td><td class="num">${e.amount} ${cur}</td></tr>`;
  });
  const search = html`<form method="get" action="${at}#expenses" role="search" aria-label="Find expenses">
${field("q", "Find words in the description or notes", { value: f.q ?? "", maxlength: 140, autocomplete: "off" })}
<label for="f-who">Who paid or shares it</label><select id="f-who" name="who"><option value="">Anyone</option>${people.map((p) => html`<option value="${p.handle}"${f.who === p.handle ? html` selected` : ""}>${p.handle === myHandle ? "You" : names.of(p)}</option>`)}</select>
<div class="row"><div>${field("from", "From", { type: "date", value: f.from ?? "" })}</div><div>${field("to", "To", { type: "date", value: f.to ?? "" })}</div></div>
<button type="submit" class="secondary">Show expenses</button>
</form>`;
  const older = shown.next_cursor ? html`<a href="${expensesHref(at, f, shown.next_cursor)}">Older expenses</a>` : html`<span></span>`;
  const newest = cursor && !shown.stale ? html`<a href="${expensesHref(at, f)}">Back to the newest</a>` : "";
  return html`${search}
${filtered ? html`<p>Expenses ${[f.q ? `matching “${f.q}”` : "", f.who ? `that ${f.who === myHandle ? "you" : names.of(f.who)} paid or ${f.who === myHandle ? "share" : "shares"}` : "", f.from ? `from ${f.from}` : "", f.to ? `until ${f.to}` : ""].filter(Boolean).join(", ")}. <a href="${at}#expenses">Show them all</a></p>` : ""}
${shown.stale ? html`<p class="notice" role="status">That page of the list is out of date, so the list starts again from the newest.</p>` : ""}
${
  rows.length
    ? html`<div class="scroll"><table aria-label="Expenses"><thead><tr><th scope="col">Date</th><th scope="col">Expense</th><th scope="col" class="num">Amount</th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p>${filtered ? "No expense matches." : cursor ? "No older expenses." : "No expenses yet."}</p>`
}
${shown.next_cursor || newest ? html`<nav class="pager" aria-label="More expenses">${older}${newest}</nav>` : ""}`;
}

/** GET /groups/{group_id}, and the same page with what an action answered. */
export async function renderGroup(c: WebContext, m: FormMessages = {}, pay?: PaymentForm): Promise<Response> {
  const groupId = c.params.group_id ?? "";
  if (!signedIn(c.session)) return signinPage(c, { status: 401 });
  if (!Uuid.safeParse(groupId).success) return notFoundPage();
  m = { info: DONE[c.url.searchParams.get("done") ?? ""], ...m };
  const ctx = await actingAs(c, c.session.agentId);
  // NOT_FOUND for a group the human is not in: routes.ts answers it with the page any unknown address gets.
  const balances = await groupBalanceView(ctx, groupId);
  const group = await groupView(c.tx, groupId, ctx.actor.agentId);
  const people = memberRefs(group.members);
  const f = filtersOf(c.url, new Set(people.map((p) => p.handle)));
  // The newest expenses say what waits for confirmation; the list shows the page of the address (its cursor, filters).
  const newest = await listExpenses(ctx, { group_id: groupId, limit: RECENT });
  const shown = await expensePage(ctx, groupId, people, f, c.url.searchParams.get("cursor") ?? undefined, newest);
  const expenses = newest.expenses;
  const { payments, next_cursor: morePayments } = await listPayments(ctx, { group_id: groupId, limit: RECENT });
  const series = await listRecurring(ctx, groupId);
  const cur = group.currency;
  // Everyone the page names, by their names: members (placeholders by the id that stands for their handle), and
  // anyone else the expenses and payments shown name (a former member).
  const names = new Names([
    ...people,
    ...payments.flatMap((p) => [p.from, p.to]),
    ...shown.expenses.map((e) => e.created_by),
    ...balances.pending_payments.flatMap((p) => [p.from, p.to]),
  ]).with(people);
  const placeholders = new Set(group.members.filter((x) => x.agent === null).map((x) => x.member_id));
  const who = (r: Person) => names.of(r);
  const waiting = expenses.map((e) => ({ e, who: waitingFor(e, placeholders) })).filter((w) => w.who.length);
  const description = group.settings.description?.untrusted_content;
  const me = ctx.actor.agentId;
  const myHandle = ctx.actor.handle;
  const at = `/groups/${group.group_id}`;
  // A suggestion already counts the pending payments; one that matches a pending payment (the same two, the same
  // amount) is a further payment, and its button says so (else it would be refused as recorded twice).
  const further = (t: (typeof balances.settle_up)[number]): Record<string, string> =>
    balances.pending_payments.some(
      (p) => p.from.agent_id === t.from.agent_id && p.to.agent_id === t.to.agent_id && p.amount_minor === t.amount_minor && !p.original,
    )
      ? { second_payment: "1" }
      : {};
  // Either side of a suggested transfer records it: the payer (the payee then confirms it), or the payee, whose
  // record counts at once (also for a friend without an account, who paid cash).
  const settle = (t: (typeof balances.settle_up)[number]) => {
    if (t.from.agent_id === me && !isPlaceholderRef(t.to))
      return button(c, `${at}/payments`, { to: t.to.handle, amount_minor: String(t.amount_minor), ...further(t) }, "Record this payment", {
        // The accessible name starts with the visible words (WCAG 2.5.3), then says which payment.
        ariaLabel: `Record this payment: you paid ${names.short(t.to)} ${t.amount} ${cur}`,
      });
    if (t.to.agent_id !== me) return "";
    const payer = names.short(t.from);
    const from: Record<string, string> = isPlaceholderRef(t.from) ? { from_member_id: t.from.agent_id } : { from: t.from.handle };
    return button(c, `${at}/payments`, { ...from, amount_minor: String(t.amount_minor), ...further(t) }, `Record that ${payer} paid you`, {
      ariaLabel: `Record that ${payer} paid you ${t.amount} ${cur}`,
    });
  };
  const answerPayment = (p: (typeof balances.pending_payments)[number]) =>
    p.to.agent_id === me
      ? html` ${button(c, `${at}/payments/respond`, { payment_id: p.payment_id, action: "confirm" }, "Confirm", { ariaLabel: `Confirm the payment of ${p.amount} from ${who(p.from)}` })} ${button(c, `${at}/payments/respond`, { payment_id: p.payment_id, action: "reject" }, "Reject", { secondary: true, ariaLabel: `Reject the payment of ${p.amount} from ${who(p.from)}` })}`
      : "";
  const answerExpense = (e: Expense, who: string[]) =>
    who.includes(myHandle)
      ? html` ${button(c, `${at}/expenses/respond`, { expense_id: e.expense_id, action: "confirm" }, "Confirm", { ariaLabel: `Confirm “${e.description.untrusted_content}”` })} <a href="${at}/expenses/${e.expense_id}#f-reason">Dispute<span class="muted"> (say why)</span></a>`
      : "";
  // A dispute needs its reason, so it is asked on the expense's page.
  const waitingForMe = waiting.filter((w) => w.who.includes(myHandle)).map((w) => w.e.expense_id);
  const confirmAll =
    waitingForMe.length > 1
      ? form(
          `${at}/expenses/confirm-all`,
          c.session.csrfToken,
          html`${waitingForMe.map((id) => html`<input type="hidden" name="expense_id" value="${id}">`)}`,
          `Confirm all ${waitingForMe.length} expenses waiting for you`,
          { idempotencyKey: formKey(c, `${at}/expenses/confirm-all ${waitingForMe.join(",")}`) },
        )
      : "";
  const voidable = (p: (typeof payments)[number]) =>
    p.state === "confirmed" && (p.from.agent_id === me || p.to.agent_id === me)
      ? html` ${button(c, `${at}/payments/respond`, { payment_id: p.payment_id, action: "void" }, "Void", { secondary: true, ariaLabel: `Void the payment of ${p.amount} from ${who(p.from)} to ${who(p.to)}` })}`
      : "";
  // Everyone who can pay or be paid: the human first, then the other members, then friends without an account (by
  // member_id), by name.
  const rank = (p: PaymentParty) => (p.key === myHandle ? 0 : p.key.length > 32 ? 2 : 1);
  const parties: PaymentParty[] = people
    .map((p) => ({ key: p.handle, label: p.handle === myHandle ? `${names.of(p)} (you)` : names.of(p) }))
    .sort((a, b) => rank(a) - rank(b) || compareText(a.label, b.label));
  const counted = balances.settle_up_counts_pending.length;
  const claim = c.url.searchParams.get("claim");
  const claimUrl = claim ? new URL(claimPath(claim), c.url).href : null;
  const newName = again(m, "placeholder", "name");
  // Who added a placeholder, or the owner, may replace its claim link (an expired or lost one).
  const renewable = group.archived ? new Set<string>() : await renewableLinks(c.tx, group.group_id, me);
  // What an expense means for the reader: "you owe 20.00 EUR", "you lent 40.00 EUR".
  const mine = (e: Expense) => youLine(myNet(e, myHandle), (minor) => `${formatAmount(minor, cur)} ${cur}`, e.kind === "refund");
  const answered = (who: string[]) =>
    `${list(who.map((h) => (h === myHandle ? "you" : names.of(h))))} ${who.length === 1 && who[0] !== myHandle ? "has" : "have"} not confirmed it yet`;
  return page(
    group.name,
    html`${alert(m.error)}${notice(m.info)}<p>${group.kind === "direct" ? "A direct ledger" : "A group"} in ${cur}, ${count(group.member_count, "member")}${group.archived ? html`, <span class="badge">archived</span>` : ""}. Your balance: <strong>${group.my_balance}</strong>.</p>
${description ? html`<p><span class="muted">Description, written by the group's members:</span> ${description}</p>` : ""}
${group.archived ? "" : html`<a class="add" href="${at}/expenses/new">Add an expense</a>`}
<p><a href="#record-payment">Record a payment</a> · <a href="#expenses">All expenses</a> · <a href="${at}/activity">Activity</a></p>
<h2>Balances</h2>
${balanceChart(balances.members!, names)}
<ul>${balances.members!.map((m) => html`<li>${balanceSentence(names.of(m.agent), m)}</li>`)}</ul>
<h2>To settle up</h2>
${
  balances.settle_up!.length
    ? html`<ul>${balances.settle_up!.map((t) => html`<li>${transferSentence(t, cur, who)} ${settle(t)}</li>`)}</ul>
<p class="muted">${capitalised(settleUpNote(balances))}. Payments count in the balances once the payee confirms them.${counted ? ` ${pendingCounted(counted)}` : ""}</p>`
    : html`<p>Everyone is settled up${counted ? " once the payments waiting for confirmation are confirmed" : ""}.</p>${counted ? html`<p class="muted">${pendingCounted(counted)}</p>` : ""}`
}
<h2>Waiting for confirmation</h2>
${
  balances.pending_payments.length || waiting.length
    ? html`<ul>${balances.pending_payments.map((p) => html`<li>${paymentSentence(p, who)}${answerPayment(p)}</li>`)}${waiting.map(({ e, who }) => html`<li>${e.kind === "refund" ? "Refund " : ""}“${e.description.untrusted_content}” (${e.amount} ${cur}, added by ${e.created_by.handle === myHandle ? "you" : names.of(e.created_by)}; ${mine(e)}): ${answered(who)}${answerExpense(e, who)}</li>`)}</ul>${confirmAll}`
    : html`<p>Nothing is waiting.</p>`
}
<h2 id="spending">Spending</h2>
${await spendingSection(ctx, c, groupId, at, cur, names)}
<h2 id="expenses">Expenses</h2>
${expenseSection(c, at, cur, names, myHandle, people, f, shown)}
<h2>Recurring expenses</h2>
${
  series.length
    ? html`<ul aria-label="Recurring expenses">${series.map(
        (e) =>
          html`<li><a href="${at}/expenses/${e.expense_id}">“${e.description.untrusted_content}”</a> (${e.amount} ${cur}, ${e.repeat}${e.repeat_until ? `, until ${e.repeat_until}` : ""}; each time ${mine(e)}): next on ${e.next_occurrence} ${button(c, `${at}/recurring/stop`, { expense_id: e.expense_id }, "Stop", { secondary: true, ariaLabel: `Stop repeating “${e.description.untrusted_content}”` })}</li>`,
      )}</ul>`
    : html`<p>No recurring expense.</p>`
}
<h2>Recent payments</h2>
${
  payments.length
    ? html`<table><thead><tr><th scope="col">Date</th><th scope="col">Payment</th></tr></thead><tbody>${payments.map((p) => html`<tr><td class="date">${p.created_at.slice(0, 10)}</td><td>${paymentSentence(p, who)}${voidable(p)}</td></tr>`)}</tbody></table>${morePayments ? html`<p class="muted">The ${RECENT} most recent; <a href="${at}/activity">the group's activity</a> has every one, and the CSV too.</p>` : ""}`
    : html`<p>No payments yet.</p>`
}
<h2 id="record-payment">Record a payment</h2>
${parties.length > 1 ? html`<p class="muted">A payment between you and another member, either way: one you made counts once they confirm it; one you received counts at once (a friend without an account who paid you cash too).</p>${paymentForm(c, at, parties, myHandle, cur, pay)}` : html`<p>Nobody else is in the group.</p>`}
<h2 id="members">Members</h2>
<ul>${group.members.map((x) => html`<li>${x.agent ? nameWithHandle(x.agent) : html`${x.name} <span class="badge">no account yet</span>`}${x.role === "owner" ? html` <span class="muted">(owner)</span>` : ""}${renewable.has(x.member_id) ? html` ${button(c, `${at}/placeholders/link`, { member_id: x.member_id }, "New link", { secondary: true, ariaLabel: `New link for ${x.name} to take their place` })}` : ""}</li>`)}</ul>
${
  claimUrl
    ? html`<p><label for="f-claim-url">Link for them to take their place (shown once; copy it now and send it by any channel):</label>
<input id="f-claim-url" name="claim_url" value="${claimUrl}" readonly></p>
<p><button type="button" class="secondary" data-copy="f-claim-url" hidden>Copy link</button> <span class="muted" role="status" data-copy-status="f-claim-url"></span></p>${claimMailForm(c, at, claim!)}`
    : ""
}
${
  group.kind === "group" && !group.archived
    ? form(
        `${at}/placeholders`,
        c.session.csrfToken,
        html`<input type="hidden" name="form" value="placeholder">${field("name", "Add someone without an account", {
          required: true,
          maxlength: 80,
          value: newName.value,
          error: newName.error,
          autocomplete: "off",
          hint: "Their name. They join expenses and balances at once, and get a link to take their place with an account of their own.",
        })}`,
        "Add by name",
        { idempotencyKey: formKey(c, `${at}/placeholders`) },
      )
    : ""
}
<h2>Export</h2>
<p><a href="/groups/${group.group_id}/export.csv" download>Download the whole ledger as CSV</a> (one row per expense share and per payment). Descriptions and notes in it were written by the group's members.</p>
<p><a href="/groups/${group.group_id}/settings">Group settings</a>: rename, archive, invite a contact</p>
<p><a href="/groups">All your groups</a></p>`,
    { status: m.status, scripts: claimUrl ? ["/assets/copy.js"] : [] },
  );
}

/**
 * The page of expenses the address asks for: its cursor and filters; the newest when it asks for none. A cursor
 * that no longer reads (from an old link) starts the list again from the newest, said so.
 */
async function expensePage(
  ctx: DomainContext,
  groupId: string,
  people: Person[],
  f: ExpenseFilters,
  cursor: string | undefined,
  newest: { expenses: Expense[]; next_cursor: string | null },
): Promise<{ expenses: Expense[]; next_cursor: string | null; stale: boolean }> {
  // A member by member_id (a placeholder has no handle to name it by): its ref's agent_id.
  const filters = {
    search: f.q,
    involving_member: f.who === undefined ? undefined : people.find((p) => p.handle === f.who)?.agent_id,
    since_date: f.from,
    until_date: f.to,
  };
  if (!cursor && !f.q && !f.who && !f.from && !f.to) return { ...newest, stale: false };
  try {
    return { ...(await listExpenses(ctx, { group_id: groupId, limit: RECENT, cursor, ...filters })), stale: false };
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== "VALIDATION_ERROR" || cursor === undefined) throw err;
    return { ...(await listExpenses(ctx, { group_id: groupId, limit: RECENT, ...filters })), stale: true };
  }
}

/** GET /groups/{group_id}/activity: everything that happened in the group, newest first, a page at a time. */
export async function renderActivity(c: WebContext): Promise<Response> {
  const groupId = c.params.group_id ?? "";
  if (!signedIn(c.session)) return signinPage(c, { status: 401 });
  if (!Uuid.safeParse(groupId).success) return notFoundPage();
  const ctx = await actingAs(c, c.session.agentId);
  const group = await groupView(c.tx, groupId, ctx.actor.agentId);
  const at = `/groups/${group.group_id}`;
  const cursor = c.url.searchParams.get("cursor") ?? undefined;
  let stale = false;
  let read: Awaited<ReturnType<typeof listActivity>>;
  try {
    read = await listActivity(ctx, { group_id: groupId, limit: ACTIVITY_PAGE, cursor });
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== "VALIDATION_ERROR" || cursor === undefined) throw err;
    stale = true;
    read = await listActivity(ctx, { group_id: groupId, limit: ACTIVITY_PAGE });
  }
  const names = new Names(read.entries.map((e) => e.actor)).with(memberRefs(group.members));
  const entries = read.entries.map(
    (e) =>
      html`<li><span class="muted">${formatTime(e.created_at)}</span> ${e.refs.expense_id ? html`<a href="${at}/expenses/${e.refs.expense_id}">${activityText(e.summary_md, names)}</a>` : activityText(e.summary_md, names)}</li>`,
  );
  return page(
    `Activity in ${group.name}`,
    html`<p><a href="${at}">Back to the group</a></p>
<p class="muted">Everything that happened in the group, newest first. Words in quotes were written by the group's members.</p>
${stale ? html`<p class="notice" role="status">That page of the list is out of date, so the list starts again from the newest.</p>` : ""}
${entries.length ? html`<ul class="cards" aria-label="Activity">${entries}</ul>` : html`<p>Nothing has happened in this group yet.</p>`}
${read.next_cursor || (cursor && !stale) ? html`<nav class="pager" aria-label="More activity">${read.next_cursor ? html`<a href="${at}/activity?cursor=${encodeURIComponent(read.next_cursor)}">Older activity</a>` : html`<span></span>`}${cursor && !stale ? html`<a href="${at}/activity">Back to the newest</a>` : ""}</nav>` : ""}`,
  );
}

const ACTIVITY_PAGE = 30;

/** GET /assets/copy.js: the Copy link button beside a claim link shown once (the field alone without JavaScript). */
export const serveCopyScript = () => serveScript(copyScript);

/** GET /groups/{group_id}/export.csv: what export_group gives an agent, as a file. */
/**
 * The CSV download, streamed: a batch of the ledger is read only when the client has taken the one before, so the
 * server holds one batch whatever the group's size. Each batch is a read transaction of its own, membership checked
 * again: one transaction held open for the whole download would hold a reader connection for as long as the slowest
 * client takes (a few of them would stall every read). The price is that a change made during the download lands in
 * it or not by where it falls: each row present throughout comes exactly once, except an expense whose date changes
 * meanwhile, which may come twice or not at all.
 */
export async function exportCsv(c: WebContext): Promise<Response> {
  const groupId = c.params.group_id ?? "";
  if (!signedIn(c.session)) return signinPage(c, { error: "Sign in first.", status: 401 });
  if (!Uuid.safeParse(groupId).success) return notFoundPage();
  const { svc, now } = c;
  const agentId = c.session.agentId;
  const group = await requireMember(c.tx, groupId, agentId);
  const encoder = new TextEncoder();
  let at: ExportCursor | null = EXPORT_START;
  const body = new ReadableStream<Uint8Array>(
    {
      start: (controller) => controller.enqueue(encoder.encode(csvHeader())),
      async pull(controller) {
        if (!at) return controller.close();
        const from: ExportCursor = at;
        const { text, next } = await svc.db.read(async (tx) => {
          const g = await requireMember(tx, groupId, agentId);
          const batch = await ledgerBatch(tx, g, from);
          return { text: csvBatch(g.currency, batch), next: batch.next };
        });
        at = next;
        controller.enqueue(encoder.encode(text));
      },
    },
    // Nothing read ahead of the client beyond the batch being sent.
    { highWaterMark: 0 },
  );
  return new Response(body, {
    headers: {
      "Content-Type": "text/csv; charset=utf-8",
      "Content-Disposition": `attachment; filename="${exportFile(group, now, "csv").filename}"`,
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
    },
  });
}

/**
 * The group page's actions, each one tool call as the browser's client (framework.ts toolForm): done, back to the
 * page (a reload repeats nothing); refused, the page again with the tool's message.
 */
const groupAction = (tool: string, args: (f: URLSearchParams) => Record<string, unknown>, done: string) =>
  toolForm({
    tool,
    form: tool,
    args,
    done: (_data, { group_id }) => `/groups/${group_id}?done=${encodeURIComponent(done)}`,
    show: renderGroup,
  });

const field_ = (f: URLSearchParams, name: string) => f.get(name) ?? undefined;

/**
 * POST /groups/{group_id}/payments: record_payment by the signed-in human as payer or payee, from a settle-up
 * suggestion's button (amount_minor, and `to` or `from`) or the record-a-payment form (who paid and who was paid,
 * amount, currency and rate, note; refused, its errors beside its fields). A placeholder member is named by its
 * member_id (a handle is at most 32 characters, a member_id 36).
 */
export async function postPayment(a: ActionContext): Promise<Response> {
  const groupId = a.params.group_id ?? "";
  if (!Uuid.safeParse(groupId).success) return notFoundPage();
  const f = a.form;
  const given = (name: string) => (f.get(name)?.trim() ? f.get(name)!.trim() : undefined);
  const args: Record<string, unknown> = { group_id: groupId };
  for (const side of ["from", "to"] as const) {
    const key = given(side) ?? given(`${side}_member_id`);
    if (key !== undefined) args[key.length > 32 ? `${side}_member_id` : side] = key;
  }
  // Amounts as the person writes them ("12,50"), read as the tool reads them.
  const comma = decimalCommaOf(a.req);
  const amount = (name: string) => (given(name) === undefined ? undefined : typedAmount(given(name)!, comma));
  if (f.has("amount_minor")) args.amount_minor = Number(f.get("amount_minor"));
  else args.amount = amount("amount");
  const currency = given("currency")?.toUpperCase();
  if (currency) args.currency = currency;
  if (given("exchange_rate")) args.exchange_rate = amount("exchange_rate");
  if (given("note")) args.note = f.get("note");
  if (f.get("second_payment")) args.second_payment = true;
  const result = await a.call("record_payment", args);
  if (result.ok) return seeOther(`/groups/${groupId}?done=${(result.data.payment as { state: string }).state === "confirmed" ? "received" : "payment"}`);
  if (result.error.code === "NOT_FOUND") return notFoundPage();
  const errors = fieldErrors(result.error, [], [], false);
  for (const side of ["from", "to"]) if (errors[`${side}_member_id`]) errors[side] ??= errors[`${side}_member_id`]!;
  const twice = result.error.code === "CONFLICT" && (result.error.details as { pending_payment_id?: string } | undefined)?.pending_payment_id !== undefined;
  const pay = f.get("form") === "payment" ? { values: f, errors, twice } : undefined;
  // The refusal names people as the page does: by their names.
  return a.show(async (c) => {
    const names = new Names(memberRefs((await groupView(c.tx, groupId, a.agentId)).members));
    return renderGroup(c, { error: errorText(result.error, names), status: result.error.status }, pay);
  });
}
/** POST /groups/{group_id}/payments/respond: respond_payment (confirm or reject a payment to the human). */
export const postPaymentAnswer = groupAction("respond_payment", (f) => ({ payment_id: field_(f, "payment_id"), action: field_(f, "action") }), "answered");
/** POST /groups/{group_id}/recurring/stop: stop_recurring (the series adds no more occurrences). */
export const postStopRecurring = groupAction("stop_recurring", (f) => ({ expense_id: field_(f, "expense_id") }), "stopped");
/** POST /groups/{group_id}/expenses/respond: respond_expense (confirm or dispute an expense the human is in). */
export const postExpenseAnswer = groupAction("respond_expense", (f) => ({ expense_id: field_(f, "expense_id"), action: field_(f, "action") }), "answered");

/**
 * POST /groups/{group_id}/expenses/confirm-all: respond_expense confirm on each expense the page listed as waiting
 * for the human, each call with its own key derived from the form's. Stops at the first refusal: those before it
 * are done, and the page says which failed.
 */
export async function postConfirmAll(a: ActionContext): Promise<Response> {
  const groupId = a.params.group_id ?? "";
  if (!Uuid.safeParse(groupId).success) return notFoundPage();
  const formKey = a.form.get("idempotency_key") ?? "";
  const ids = [...new Set(a.form.getAll("expense_id"))];
  let done = 0;
  for (const expense_id of ids) {
    const result = await a.call("respond_expense", { expense_id, action: "confirm" }, formKey ? formKeyFor(formKey, expense_id) : undefined);
    if (!result.ok) {
      if (result.error.code === "NOT_FOUND") return notFoundPage();
      const message = `${done} of ${ids.length} confirmed; then: ${errorText(result.error)}`;
      return a.show((c) => renderGroup(c, { error: message, status: result.error.status }));
    }
    done++;
  }
  return seeOther(`/groups/${groupId}?done=confirmed`);
}

/** POST /groups/{group_id}/placeholders/link: create_group_invite with a placeholder's member_id; the page shows its new claim link once. */
export const postPlaceholderLink = toolForm({
  tool: "create_group_invite",
  form: "placeholder-link",
  args: (f, { group_id }) => ({ group_id, member_id: required(f, "member_id") }),
  done: (data, { group_id }) => `/groups/${group_id}?done=placeholder-link&claim=${encodeURIComponent(data.invite.code)}#members`,
  show: renderGroup,
});

/** POST /groups/{group_id}/placeholders: create_group_invite with a name (a friend without an account); the page then shows the claim link once. */
export const postPlaceholder = toolForm({
  tool: "create_group_invite",
  form: "placeholder",
  args: (f, { group_id }) => ({ group_id, name: required(f, "name") }),
  done: (data, { group_id }) => `/groups/${group_id}?done=placeholder&claim=${encodeURIComponent(data.invite.code)}#members`,
  show: renderGroup,
});
