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
import { balanceSentence, paymentSentence, settleUpNote, transferSentence, whoIs } from "../contract/ledger-wording.ts";
import { claimPath, renewableLinks } from "../domain/ledger/groups/placeholders.ts";
import { claimMailForm } from "./email-pages.ts";
import type { Expense } from "../contract/ledger.ts";
import { Uuid } from "../contract/wire.ts";
import { compareText } from "../domain/ledger/money/splits.ts";
import { actingAs, notFoundPage, type Messages, type WebContext } from "./context.ts";
import { fieldErrors, formKeyFor, type FieldErrors } from "./expense-pages.ts";
import { formKey } from "./form-keys.ts";
import copyScript from "./copy.js" with { type: "text" };
import { alert, field, form, html, notice, page, seeOther, serveScript, type Markup } from "./html.ts";
import type { ActionContext } from "./pages.ts";
import { again, button, required, toolForm, type FormMessages } from "./web-actions.ts";
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
    : html`<p>You are in no group yet. Ask your agent to create one (create_group) or to accept an invitation.</p>`
}
${next_cursor ? html`<p><a href="/groups?cursor=${encodeURIComponent(next_cursor)}">More groups</a></p>` : ""}
<p><a href="/groups/new">New group</a></p>`,
    { status: m.status },
  );
}

/** The balances as a diverging bar chart: owed to the right (green), owing to the left (red), the amount on the other side. */
function balanceChart(members: { agent: { handle: string; agent_id: string; display_name: string }; balance_minor: number; balance: string }[]): Markup {
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
    return html`<text x="0" y="${y + 18}">${label(isPlaceholderRef(m.agent) ? m.agent.display_name : m.agent.handle)}</text>
<rect class="${owed ? "owed" : "owes"}" x="${x}" y="${y + 5}" width="${width}" height="${ROW - 10}" rx="2"></rect>
<text x="${owed || m.balance_minor === 0 ? axis - 6 : axis + 6}" y="${y + 18}" text-anchor="${owed || m.balance_minor === 0 ? "end" : "start"}">${text}</text>`;
  });
  const summary = members.map((m) => balanceSentence(whoIs(m.agent), m)).join("; ");
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
async function spendingSection(ctx: DomainContext, c: WebContext, groupId: string, at: string, cur: string): Promise<Markup> {
  const asked = c.url.searchParams.get("spending");
  const by: SpendingBy = SPENDING_BY.find((b) => b === asked) ?? "category";
  const [totals] = (await spending(ctx, { group_id: groupId, by })).currencies;
  if (!totals?.count) return html`<p>Nothing spent yet.</p>`;
  const links = SPENDING_BY.map((b) =>
    b === by ? html`<strong>${SPENDING_LABELS[b]}</strong>` : html`<a href="${at}?spending=${b}#spending">${SPENDING_LABELS[b]}</a>`,
  );
  return html`<p>${totals.total} ${cur} over ${totals.count} ${totals.count === 1 ? "expense" : "expenses"}, refunds taken off. ${links.map((l, i) => (i ? html` · ${l}` : l))}</p>
${spendingChart(totals.rows, by, cur)}${by === "member" ? html`<p class="muted">What each member paid; their shares: ${totals.rows.map((r) => `${r.key} ${r.amount}`).join(", ")} ${cur}.</p>` : ""}`;
}

/** What the settle-up section says of the pending payments it counts (get_balances settle_up_counts_pending). */
const pendingCounted = (n: number) =>
  `The ${n === 1 ? "payment" : `${n} payments`} waiting for confirmation ${n === 1 ? "is" : "are"} counted as if confirmed, so ${n === 1 ? "it is" : "they are"} not suggested again; if one is rejected, what it paid is owed again.`;

/** A placeholder member (a friend with no account yet) as a ref: its handle is its id. */
const isPlaceholderRef = (r: { handle: string; agent_id: string }) => r.handle === r.agent_id;

/**
 * Participants of an expense (who paid or shares it) who have neither confirmed nor disputed its current version, its
 * creator aside; placeholders (`names` has them) answer nothing.
 */
function waitingFor(e: Expense, names: Map<string, string>): string[] {
  const answered = new Set(e.responses.filter((r) => r.version === e.version).map((r) => r.agent.handle));
  const involved = new Set([...e.paid_by.map((p) => p.handle), ...e.shares.map((s) => s.handle)]);
  return [...involved].filter((h) => h !== e.created_by.handle && !answered.has(h) && !names.has(h)).sort();
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
${field("amount", "Amount", { id: "f-pay-amount", value: v("amount"), required: true, error: e.amount, hint: "A decimal such as 20.00." })}
${field("currency", "Currency", { id: "f-pay-currency", value: v("currency") || cur, maxlength: 3, error: e.currency })}
${field("exchange_rate", "Exchange rate", { id: "f-pay-rate", value: v("exchange_rate"), error: e.exchange_rate, hint: `Only for another currency: how many ${cur} one unit of it is worth.` })}
${field("note", "Note", { id: "f-pay-note", value: v("note"), maxlength: 500, error: e.note })}
${sent?.twice ? html`<div><input type="checkbox" id="f-pay-second" name="second_payment" value="1"> <label for="f-pay-second">It is a second payment, not the one already waiting</label></div>` : ""}`;
  return form(`${at}/payments`, c.session.csrfToken, fields, "Record the payment", { idempotencyKey: formKey(c, `${at}/payments`) });
}

/** GET /groups/{group_id}, and the same page with what an action answered. */
export async function renderGroup(c: WebContext, groupId: string, m: FormMessages = {}, pay?: PaymentForm): Promise<Response> {
  if (!signedIn(c.session)) return signinPage(c, { status: 401 });
  if (!Uuid.safeParse(groupId).success) return notFoundPage();
  m = { info: DONE[c.url.searchParams.get("done") ?? ""], ...m };
  const ctx = await actingAs(c, c.session.agentId);
  // NOT_FOUND for a group the human is not in: routes.ts answers it with the page any unknown address gets.
  const balances = await groupBalanceView(ctx, groupId);
  const group = await groupView(c.tx, groupId, ctx.actor.agentId);
  const { expenses, next_cursor: moreExpenses } = await listExpenses(ctx, { group_id: groupId, limit: RECENT });
  const { payments, next_cursor: morePayments } = await listPayments(ctx, { group_id: groupId, limit: RECENT });
  const series = await listRecurring(ctx, groupId);
  const cur = group.currency;
  // Placeholder members (no account yet) by the id that stands for their handle.
  const names = new Map(group.members.filter((x) => x.agent === null).map((x) => [x.member_id, `${x.name} (no account yet)`]));
  const name = (handle: string) => names.get(handle) ?? handle;
  const waiting = expenses.map((e) => ({ e, who: waitingFor(e, names) })).filter((w) => w.who.length);
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
        ariaLabel: `Record that you paid ${t.to.handle} ${t.amount} ${cur}`,
      });
    if (t.to.agent_id !== me) return "";
    const payer = isPlaceholderRef(t.from) ? t.from.display_name : t.from.handle;
    const who: Record<string, string> = isPlaceholderRef(t.from) ? { from_member_id: t.from.agent_id } : { from: t.from.handle };
    return button(c, `${at}/payments`, { ...who, amount_minor: String(t.amount_minor), ...further(t) }, `Record that ${payer} paid you`, {
      ariaLabel: `Record that ${payer} paid you ${t.amount} ${cur}`,
    });
  };
  const answerPayment = (p: (typeof balances.pending_payments)[number]) =>
    p.to.agent_id === me
      ? html` ${button(c, `${at}/payments/respond`, { payment_id: p.payment_id, action: "confirm" }, "Confirm", { ariaLabel: `Confirm the payment of ${p.amount} from ${p.from.handle}` })} ${button(c, `${at}/payments/respond`, { payment_id: p.payment_id, action: "reject" }, "Reject", { secondary: true, ariaLabel: `Reject the payment of ${p.amount} from ${p.from.handle}` })}`
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
      ? html` ${button(c, `${at}/payments/respond`, { payment_id: p.payment_id, action: "void" }, "Void", { secondary: true, ariaLabel: `Void the payment of ${p.amount} from ${p.from.handle} to ${p.to.handle}` })}`
      : "";
  // Everyone who can pay or be paid: the human first, then the other members by handle, then friends without an
  // account (by member_id) by name.
  const rank = (p: PaymentParty) => (p.key === myHandle ? 0 : p.key.length > 32 ? 2 : 1);
  const parties: PaymentParty[] = group.members
    .map((x) =>
      x.agent
        ? { key: x.agent.handle, label: x.agent.handle === myHandle ? `${x.agent.handle} (you)` : x.agent.handle }
        : { key: x.member_id, label: `${x.name} (no account yet)` },
    )
    .sort((a, b) => rank(a) - rank(b) || compareText(a.label, b.label));
  const counted = balances.settle_up_counts_pending.length;
  const claim = c.url.searchParams.get("claim");
  const claimUrl = claim ? new URL(claimPath(claim), c.url).href : null;
  const newName = again(m, "placeholder", "name");
  // Who added a placeholder, or the owner, may replace its claim link (an expired or lost one).
  const renewable = group.archived ? new Set<string>() : await renewableLinks(c.tx, group.group_id, me);
  return page(
    group.name,
    html`${alert(m.error)}${notice(m.info)}<p>${group.kind === "direct" ? "A direct ledger" : "A group"} in ${cur}, ${group.member_count} ${group.member_count === 1 ? "member" : "members"}${group.archived ? html`, <span class="badge">archived</span>` : ""}. Your balance: <strong>${group.my_balance}</strong>.</p>
${description ? html`<p><span class="muted">Description, written by the group's members:</span> ${description}</p>` : ""}
<p><a href="${at}/expenses/new">Add an expense</a> · <a href="#record-payment">Record a payment</a></p>
<h2>Balances</h2>
${balanceChart(balances.members!)}
<ul>${balances.members!.map((m) => html`<li>${balanceSentence(whoIs(m.agent), m)}</li>`)}</ul>
<h2>To settle up</h2>
${
  balances.settle_up!.length
    ? html`<ul>${balances.settle_up!.map((t) => html`<li>${transferSentence(t, cur)} ${settle(t)}</li>`)}</ul>
<p class="muted">${capitalised(settleUpNote(balances))}. Payments count in the balances once the payee confirms them.${counted ? ` ${pendingCounted(counted)}` : ""}</p>`
    : html`<p>Everyone is settled up${counted ? " once the payments waiting for confirmation are confirmed" : ""}.</p>${counted ? html`<p class="muted">${pendingCounted(counted)}</p>` : ""}`
}
<h2>Waiting for confirmation</h2>
${
  balances.pending_payments.length || waiting.length
    ? html`<ul>${balances.pending_payments.map((p) => html`<li>${paymentSentence(p)}${answerPayment(p)}</li>`)}${waiting.map(({ e, who }) => html`<li>${e.kind === "refund" ? "Refund " : ""}“${e.description.untrusted_content}” (${e.amount} ${cur}, added by ${e.created_by.handle}): ${who.join(", ")} ${who.length === 1 ? "has" : "have"} not confirmed it yet${answerExpense(e, who)}</li>`)}</ul>${confirmAll}`
    : html`<p>Nothing is waiting.</p>`
}
<h2 id="spending">Spending</h2>
${await spendingSection(ctx, c, groupId, at, cur)}
<h2>Recent expenses</h2>
${
  expenses.length
    ? html`<table><thead><tr><th scope="col">Date</th><th scope="col">Expense</th><th scope="col" class="num">Amount</th></tr></thead><tbody>${expenses.map(
        (e) =>
          html`<tr><td class="date">${e.date}</td><td><a href="${at}/expenses/${e.expense_id}">“${e.description.untrusted_content}”</a><br><span class="muted">${paidBy(e, name)}</span>${e.kind === "refund" ? html` <span class="badge">refund</span>` : ""}${e.state === "disputed" ? html` <span class="badge">disputed</span>` : ""}</td><td class="num">${e.amount} ${cur}</td></tr>`,
      )}</tbody></table>${moreExpenses ? html`<p class="muted">The ${RECENT} most recent; the CSV has them all.</p>` : ""}`
    : html`<p>No expenses yet.</p>`
}
<h2>Recurring expenses</h2>
${
  series.length
    ? html`<ul aria-label="Recurring expenses">${series.map(
        (e) =>
          html`<li><a href="${at}/expenses/${e.expense_id}">“${e.description.untrusted_content}”</a> (${e.amount} ${cur}, ${e.repeat}${e.repeat_until ? `, until ${e.repeat_until}` : ""}): next on ${e.next_occurrence} ${button(c, `${at}/recurring/stop`, { expense_id: e.expense_id }, "Stop", { secondary: true, ariaLabel: `Stop repeating “${e.description.untrusted_content}”` })}</li>`,
      )}</ul>`
    : html`<p>No recurring expense.</p>`
}
<h2>Recent payments</h2>
${
  payments.length
    ? html`<table><thead><tr><th scope="col">Date</th><th scope="col">Payment</th></tr></thead><tbody>${payments.map((p) => html`<tr><td class="date">${p.created_at.slice(0, 10)}</td><td>${paymentSentence(p)}${voidable(p)}</td></tr>`)}</tbody></table>${morePayments ? html`<p class="muted">The ${RECENT} most recent; the CSV has them all.</p>` : ""}`
    : html`<p>No payments yet.</p>`
}
<h2 id="record-payment">Record a payment</h2>
${parties.length > 1 ? html`<p class="muted">A payment between you and another member, either way: one you made counts once they confirm it; one you received counts at once (a friend without an account who paid you cash too).</p>${paymentForm(c, at, parties, myHandle, cur, pay)}` : html`<p>Nobody else is in the group.</p>`}
<h2 id="members">Members</h2>
<ul>${group.members.map((x) => html`<li>${x.agent ? x.agent.handle : html`${x.name} <span class="badge">no account yet</span>`}${x.role === "owner" ? html` <span class="muted">(owner)</span>` : ""}${renewable.has(x.member_id) ? html` ${button(c, `${at}/placeholders/link`, { member_id: x.member_id }, "New link", { secondary: true, ariaLabel: `New link for ${x.name} to take their place` })}` : ""}</li>`)}</ul>
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
export async function exportCsv(c: WebContext, groupId: string): Promise<Response> {
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
 * The group page's actions, each one tool call as the browser's client (web-actions.ts, toolForm): done, back to the
 * page (a reload repeats nothing); refused, the page again with the tool's message.
 */
function groupAction(tool: string, args: (f: URLSearchParams, groupId: string) => Record<string, unknown>, done: string) {
  const run = toolForm({ tool, form: tool, args, done: (_data, groupId) => `/groups/${groupId}?done=${encodeURIComponent(done)}`, show: renderGroup });
  return async (a: ActionContext, groupId: string) => (Uuid.safeParse(groupId).success ? run(a, groupId) : notFoundPage());
}

const field_ = (f: URLSearchParams, name: string) => f.get(name) ?? undefined;

/**
 * POST /groups/{group_id}/payments: record_payment by the signed-in human as payer or payee, from a settle-up
 * suggestion's button (amount_minor, and `to` or `from`) or the record-a-payment form (who paid and who was paid,
 * amount, currency and rate, note; refused, its errors beside its fields). A placeholder member is named by its
 * member_id (a handle is at most 32 characters, a member_id 36).
 */
export async function postPayment(a: ActionContext, groupId: string): Promise<Response> {
  if (!Uuid.safeParse(groupId).success) return notFoundPage();
  const f = a.form;
  const given = (name: string) => (f.get(name)?.trim() ? f.get(name)!.trim() : undefined);
  const args: Record<string, unknown> = { group_id: groupId };
  for (const side of ["from", "to"] as const) {
    const key = given(side) ?? given(`${side}_member_id`);
    if (key !== undefined) args[key.length > 32 ? `${side}_member_id` : side] = key;
  }
  if (f.has("amount_minor")) args.amount_minor = Number(f.get("amount_minor"));
  else args.amount = given("amount");
  const currency = given("currency")?.toUpperCase();
  if (currency) args.currency = currency;
  if (given("exchange_rate")) args.exchange_rate = given("exchange_rate");
  if (given("note")) args.note = f.get("note");
  if (f.get("second_payment")) args.second_payment = true;
  const result = await a.call("record_payment", args);
  if (result.ok) return seeOther(`/groups/${groupId}?done=${(result.data.payment as { state: string }).state === "confirmed" ? "received" : "payment"}`);
  if (result.error.code === "NOT_FOUND") return notFoundPage();
  const errors = fieldErrors(result.error, [], [], false);
  for (const side of ["from", "to"]) if (errors[`${side}_member_id`]) errors[side] ??= errors[`${side}_member_id`]!;
  const twice = result.error.code === "CONFLICT" && (result.error.details as { pending_payment_id?: string } | undefined)?.pending_payment_id !== undefined;
  const pay = f.get("form") === "payment" ? { values: f, errors, twice } : undefined;
  return a.show((c) => renderGroup(c, groupId, { error: result.error.message, status: result.error.status }, pay));
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
export async function postConfirmAll(a: ActionContext, groupId: string): Promise<Response> {
  if (!Uuid.safeParse(groupId).success) return notFoundPage();
  const formKey = a.form.get("idempotency_key") ?? "";
  const ids = [...new Set(a.form.getAll("expense_id"))];
  let done = 0;
  for (const expense_id of ids) {
    const result = await a.call("respond_expense", { expense_id, action: "confirm" }, formKey ? formKeyFor(formKey, expense_id) : undefined);
    if (!result.ok) {
      if (result.error.code === "NOT_FOUND") return notFoundPage();
      const message = `${done} of ${ids.length} confirmed; then: ${result.error.message}`;
      return a.show((c) => renderGroup(c, groupId, { error: message, status: result.error.status }));
    }
    done++;
  }
  return seeOther(`/groups/${groupId}?done=confirmed`);
}

/** POST /groups/{group_id}/placeholders/link: create_group_invite with a placeholder's member_id; the page shows its new claim link once. */
export const postPlaceholderLink = toolForm({
  tool: "create_group_invite",
  form: "placeholder-link",
  args: (f, group_id) => ({ group_id, member_id: required(f, "member_id") }),
  done: (data, id) => `/groups/${id}?done=placeholder-link&claim=${encodeURIComponent(data.invite.code)}#members`,
  show: renderGroup,
});

/** POST /groups/{group_id}/placeholders: create_group_invite with a name (a friend without an account); the page then shows the claim link once. */
export const postPlaceholder = toolForm({
  tool: "create_group_invite",
  form: "placeholder",
  args: (f, group_id) => ({ group_id, name: required(f, "name") }),
  done: (data, id) => `/groups/${id}?done=placeholder&claim=${encodeURIComponent(data.invite.code)}#members`,
  show: renderGroup,
});
