// A group's expense pages: add one (/groups/{g}/expenses/new), see one with its history (/groups/{g}/expenses/{e}),
// change it (.../edit), delete, restore, confirm or dispute it, and confirm all that wait for the human at once.
// Reads are the domain functions the read tools use, as the signed-in agent; every change is a tool call through
// invoke() as the browser's client (pages.ts action), so a field the tool refuses comes back beside its input with
// what was typed kept. Text written by other agents is shown quoted and escaped (untrusted_content).
import { createHash } from "node:crypto";
import { CATEGORIES, REPEATS, SPLIT_MODES, type Expense, type ExpenseHistoryEntry } from "../contract/ledger.ts";
import { Uuid } from "../contract/wire.ts";
import { getExpense } from "../domain/ledger/expenses/expenses.ts";
import { attachmentsOf, sniffType, type AttachmentWire } from "../domain/ledger/expenses/attachments.ts";
import { attachmentLinkSigner } from "../auth/attachment-links.ts";
import { ATTACHMENT_MEDIA_TYPES } from "../contract/ledger.ts";
import { groupView } from "../domain/ledger/groups/groups.ts";
import { requireMember } from "../domain/ledger/groups/membership.ts";
import type { AppError } from "../errors.ts";
import { actingAs, formatTime, notFoundPage, type Messages, type WebContext } from "./context.ts";
import { alert, field, form, html, Markup, notice, page, seeOther } from "./html.ts";
import { toolForm, type ActionContext } from "./framework.ts";
import { signedIn } from "./session.ts";
import { formKey } from "./form-keys.ts";
import { changedWords, count, decimalCommaOf, errorText, issueText, list, memberRefs, myNet, Names, typedAmount, youLine } from "./wording.ts";
import { formatAmount } from "../domain/ledger/money/amounts.ts";

const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** Field name -> what the tool said is wrong with it. */
export type FieldErrors = Record<string, string>;

const SPLIT_LABELS: Record<(typeof SPLIT_MODES)[number], string> = {
  equal: "Equally among the members ticked",
  exact: "Exact amounts (each member's amount)",
  percent: "Percentages (summing to 100)",
  shares: "Shares (e.g. 2 and 1)",
  adjustment: "Equally among those ticked, plus or minus each one's adjustment",
};
/** Modes whose members are the ones given a value; equal and adjustment split among the members ticked. */
const VALUE_MODES = new Set(["exact", "percent", "shares"]);

const DONE: Record<string, string> = {
  updated: "Expense changed.",
  deleted: "Expense deleted: it no longer counts in the balances. Restore it to count it again.",
  restored: "Expense restored: it counts in the balances again.",
  answered: "Your answer is saved.",
  attached: "The file is kept with the expense.",
  detached: "The file is deleted.",
};

const today = (c: WebContext) => c.now.toISOString().slice(0, 10);

/** A select with a label and, when the tool refused its value, the error beside it. */
function select(name: string, label: string, options: readonly (readonly [string, string])[], value: string | null, error?: string): Markup {
  const id = `f-${name}`;
  return html`<label for="${id}">${label}</label><select id="${id}" name="${name}"${error ? html` aria-invalid="true" aria-describedby="${id}-error"` : ""}>${options.map(
    ([v, text]) => html`<option value="${v}"${v === value ? new Markup(" selected") : ""}>${text}</option>`,
  )}</select>${error ? html`<small id="${id}-error" class="field-error">${error}</small>` : ""}`;
}

/** A fieldset's own error (the payers' sum, the split's), read out with its legend. */
const groupError = (name: string, error?: string) => (error ? html`<p id="f-${name}-error" class="field-error">${error}</p>` : "");
const describedBy = (name: string, error?: string) => (error ? html` aria-describedby="f-${name}-error"` : "");

interface ExpenseFormOptions {
  to: string;
  submit: string;
  members: string[];
  groupCurrency: string;
  values: URLSearchParams;
  errors: FieldErrors;
  hidden?: Record<string, string>;
  /** How to name a member key on the page: by their names (placeholders are keyed by member_id). */
  labels: Names;
  /** The reader's member key ("you" in the summary line). */
  me: string;
  /** The form's idempotency key: the view's own for a form that creates (form-keys.ts), so Back never adds it twice. */
  idempotencyKey: string;
}

/** How a split reads in the form's one-line summary: "split equally among everyone". */
function splitWords(mode: string, among: string[], everyone: number, name: (h: string) => string): string {
  if (mode === "equal") return among.length === everyone ? "split equally among everyone" : `split equally among ${list(among.map(name))}`;
  return (
    {
      exact: "split by exact amounts",
      percent: "split by percentages",
      shares: "split by shares",
      adjustment: "split equally with adjustments",
    }[mode] ?? "split"
  );
}

/**
 * The form's one line, for a phone: who paid and how it is split ("Paid by you, split equally among everyone"),
 * then only what differs from the usual (another currency, another day, a refund, a repeat).
 */
function expenseSummary(c: WebContext, o: ExpenseFormOptions, v: (name: string) => string): string {
  const l = (h: string) => (h === o.me ? "you" : o.labels.of(h));
  const refund = v("kind") === "refund";
  const payer = v("paid_by") === "several" ? "several people" : l(v("paid_by") || o.me);
  const mode = v("split_mode") || "equal";
  const among = o.members.filter((h) => o.values.has(`in_${h}`));
  const parts = [`${refund ? "Received by" : "Paid by"} ${payer}`, splitWords(mode, among, o.members.length, l)];
  const currency = v("currency").toUpperCase();
  if (currency && currency !== o.groupCurrency) parts.push(`in ${currency}`);
  if (v("date") && v("date") !== today(c)) parts.push(`on ${v("date")}`);
  if (v("repeat") && v("repeat") !== "none") parts.push(`repeats ${v("repeat")}`);
  return parts.join(", ");
}

/** Fields the form shows first; the rest opens from the summary line. */
const FIRST_FIELDS = new Set(["description", "amount"]);

/**
 * The expense form, without script, phone first: the description and the amount, then one line saying who paid and
 * how it is split, which opens the rest: one payer from a list or several with an amount each; the split's mode as
 * radio buttons and one row per member (ticked for an equal split, a value for the others); only the chosen mode's
 * values count (expenseArgs). The rest is shown open when one of its fields was refused.
 */
function expenseForm(c: WebContext, o: ExpenseFormOptions): Markup {
  const v = (name: string) => o.values.get(name) ?? "";
  const e = o.errors;
  const mode = v("split_mode") || "equal";
  const payer = v("paid_by");
  const l = (h: string) => o.labels.of(h);
  const open = Object.keys(e).some((name) => !FIRST_FIELDS.has(name));
  const fields = html`${Object.entries(o.hidden ?? {}).map(([k, val]) => html`<input type="hidden" name="${k}" value="${val}">`)}
${field("description", "Description", { value: v("description"), required: true, maxlength: 140, error: e.description })}
${field("amount", "Amount", { value: v("amount"), required: true, error: e.amount, hint: `Such as 12.50 or 12,50, in ${v("currency").toUpperCase() || o.groupCurrency}.` })}
<details class="more"${open ? new Markup(" open") : ""}><summary><span class="when-closed">${expenseSummary(c, o, v)} <span class="muted">(change)</span></span><span class="when-open">Who paid, the split, and more</span></summary>
${select(
  "kind",
  "Kind",
  [
    ["expense", "Expense"],
    ["refund", "Refund: money back"],
  ],
  v("kind") || "expense",
  e.kind,
)}
<p class="muted">A refund is money that came back (a returned item, a deposit): it moves the balances the other way. “Paid by” is then who received it, and the split whose money it was.</p>
${field("currency", "Currency", { value: v("currency"), maxlength: 3, error: e.currency, hint: `The group counts in ${o.groupCurrency}. Another code (such as USD) needs its rate below.` })}
${field("exchange_rate", "Exchange rate", { value: v("exchange_rate"), error: e.exchange_rate, hint: `Only for another currency: how many ${o.groupCurrency} one unit of it is worth, e.g. 0.92.` })}
${field("date", "Date", { type: "date", value: v("date"), error: e.date })}
${select(
  "category",
  "Category",
  CATEGORIES.map((k) => [k, k] as const),
  v("category") || "general",
  e.category,
)}
<fieldset${describedBy("paid_by", e.paid_by)}><legend>Paid by</legend>
${groupError("paid_by", e.paid_by)}
${select("paid_by", "Who paid", [...o.members.map((h) => [h, l(h)] as const), ["several", "Several people (amounts below)"] as const], payer, undefined)}
<p class="muted">With several people: what each paid, in the expense's currency, summing to the amount.</p>
${o.members.map((h) => field(`paid_${h}`, `${l(h)} paid`, { value: v(`paid_${h}`), error: e[`paid_${h}`] }))}
</fieldset>
<fieldset${describedBy("split", e.split)}><legend>Split</legend>
${groupError("split", e.split)}
${SPLIT_MODES.map(
  (m) =>
    html`<div><input type="radio" id="f-split-${m}" name="split_mode" value="${m}"${m === mode ? new Markup(" checked") : ""}> <label for="f-split-${m}">${SPLIT_LABELS[m]}</label></div>`,
)}
<p class="muted">An equal split counts the members ticked. Exact amounts, percentages and shares count the members given a value (blank: not in it). An adjustment is added to a ticked member's equal share.</p>
${o.members.map(
  (h) =>
    html`<div><input type="checkbox" id="f-in_${h}" name="in_${h}" value="1"${o.values.has(`in_${h}`) ? new Markup(" checked") : ""}> <label for="f-in_${h}">${l(h)} is in it</label></div>
${field(`value_${h}`, `${l(h)}: amount, percent or shares`, { value: v(`value_${h}`), error: e[`value_${h}`] })}`,
)}
</fieldset>
${select(
  "repeat",
  "Repeat",
  REPEATS.map((r) => [r, r === "none" ? "Does not repeat" : r] as const),
  v("repeat") || "none",
  e.repeat,
)}
${field("notes", "Notes", { value: v("notes"), multiline: true, maxlength: 500, error: e.notes })}
</details>`;
  return form(o.to, c.session.csrfToken, fields, o.submit, { idempotencyKey: o.idempotencyKey });
}

/**
 * The tool's arguments from the form, with the handles in the order they were sent (to place errors). Every amount
 * and value is read the way the person writes numbers (`decimalComma`: "12,50"), and sent as the tool reads them.
 */
export function expenseArgs(f: URLSearchParams, members: string[], forUpdate: boolean, decimalComma: boolean) {
  const NUMBERS = /^(amount|exchange_rate|value_.+|paid_(?!by$).+)$/;
  const text = (name: string) => {
    const typed = (f.get(name) ?? "").trim();
    return NUMBERS.test(name) && typed ? typedAmount(typed, decimalComma) : typed;
  };
  // A placeholder member is keyed by its member_id (never a handle: 36 chars against at most 32).
  const who = (key: string) => (key.length > 32 ? { member_id: key } : { handle: key });
  const args: Record<string, unknown> = { description: f.get("description") ?? "" };
  for (const name of ["kind", "amount", "exchange_rate", "date", "category", "repeat"]) if (text(name)) args[name] = text(name);
  if (text("currency")) args.currency = text("currency").toUpperCase();
  if (text("notes")) args.notes = f.get("notes");
  else if (forUpdate) args.notes = null;
  let payers: string[] = [];
  if (text("paid_by") === "several") {
    payers = members.filter((h) => text(`paid_${h}`));
    args.paid_by = payers.map((handle) => ({ ...who(handle), amount: text(`paid_${handle}`) }));
  } else if (text("paid_by") && text("amount")) {
    payers = [text("paid_by")];
    args.paid_by = [{ ...who(text("paid_by")), amount: text("amount") }];
  }
  const mode = text("split_mode") || "equal";
  const among = VALUE_MODES.has(mode) ? members.filter((h) => text(`value_${h}`)) : members.filter((h) => f.has(`in_${h}`));
  args.split = {
    mode,
    among: among.map((handle) =>
      mode === "equal" || (mode === "adjustment" && !text(`value_${handle}`)) ? who(handle) : { ...who(handle), value: text(`value_${handle}`) },
    ),
  };
  return { args, among, payers };
}

/**
 * details.issues of a refused call, each beside its field: `split.among[1].value` (or zod's `split.among.1.value`)
 * is the second listed member's value input, `paid_by[0].amount` the first payer's amount.
 */
export function fieldErrors(err: AppError, among: string[], payers: string[], several: boolean): FieldErrors {
  const issues = ((err.details as { issues?: { path: string; message: string }[] } | undefined)?.issues ?? []) as { path: string; message: string }[];
  const out: FieldErrors = {};
  for (const { path, message } of issues) {
    const parts = path.replace(/\[(\d+)\]/g, ".$1").split(".");
    let name = parts[0]!;
    if (name === "amount_minor") name = "amount";
    if (name === "split" && parts[1] === "among" && parts[2] !== undefined && among[Number(parts[2])]) name = `value_${among[Number(parts[2])]}`;
    if (name === "paid_by" && parts[1] !== undefined && several && payers[Number(parts[1])]) name = `paid_${payers[Number(parts[1])]}`;
    const said = issueText(path, message);
    out[name] = out[name] ? `${out[name]} ${said}` : said;
  }
  return out;
}

/** The group the page is about, as the signed-in human sees it: NOT_FOUND (the 404 page) when they are not in it. */
async function memberGroup(c: WebContext, groupId: string) {
  await requireMember(c.tx, groupId, c.session.agentId!);
  const group = await groupView(c.tx, groupId, c.session.agentId!);
  return { group, members: group.members.map((m) => m.agent?.handle ?? m.member_id), labels: new Names(memberRefs(group.members)) };
}

const signInFirst = () => seeOther("/groups");

/** GET /groups/{group_id}/expenses/new, and the same form with what the tool refused. */
export async function renderNewExpense(c: WebContext, m: Messages = {}, sent?: URLSearchParams, errors: FieldErrors = {}): Promise<Response> {
  const groupId = c.params.group_id ?? "";
  if (!signedIn(c.session)) return signInFirst();
  if (!Uuid.safeParse(groupId).success) return notFoundPage();
  const { group, members, labels } = await memberGroup(c, groupId);
  const me = (await actingAs(c, c.session.agentId)).actor.handle;
  const values =
    sent ??
    new URLSearchParams([
      ["currency", group.currency],
      ["date", today(c)],
      ["paid_by", me],
      ["split_mode", "equal"],
      ...members.map((h) => [`in_${h}`, "1"] as [string, string]),
    ]);
  return page(
    "Add an expense",
    html`${alert(m.error)}<p>To <a href="/groups/${group.group_id}">${group.name}</a>, which counts in ${group.currency}. The others are asked to confirm it.</p>
${expenseForm(c, {
  to: `/groups/${group.group_id}/expenses/new`,
  submit: "Add the expense",
  members,
  labels,
  me,
  groupCurrency: group.currency,
  values,
  errors,
  idempotencyKey: formKey(c, `/groups/${group.group_id}/expenses/new`),
})}`,
    { status: m.status },
  );
}

/** Members of the group as the action sees them (a read of its own: an action runs outside any page transaction). */
async function membersOf(a: ActionContext, groupId: string): Promise<string[] | null> {
  return a.svc.db.read(async (tx) => {
    try {
      return (await groupView(tx, groupId, a.agentId)).members.map((m) => m.agent?.handle ?? m.member_id);
    } catch {
      return null;
    }
  });
}

/** POST /groups/{group_id}/expenses/new: add_expense. */
export async function postNewExpense(a: ActionContext): Promise<Response> {
  const groupId = a.params.group_id ?? "";
  if (!Uuid.safeParse(groupId).success) return notFoundPage();
  const members = (await membersOf(a, groupId)) ?? [];
  const { args, among, payers } = expenseArgs(a.form, members, false, decimalCommaOf(a.req));
  const result = await a.call("add_expense", { group_id: groupId, ...args });
  if (result.ok) return seeOther(`/groups/${groupId}?done=expense`);
  if (result.error.code === "NOT_FOUND") return notFoundPage();
  const errors = fieldErrors(result.error, among, payers, a.form.get("paid_by") === "several");
  return a.show((c) => renderNewExpense(c, { error: errorText(result.error), status: result.error.status }, a.form, errors));
}

/** The expense of the path, in the group of the path; null (a 404) otherwise. */
async function expenseIn(c: WebContext, groupId: string, expenseId: string) {
  if (!Uuid.safeParse(groupId).success || !Uuid.safeParse(expenseId).success) return null;
  const found = await getExpense(await actingAs(c, c.session.agentId!), expenseId);
  return found.expense.group_id === groupId ? found : null;
}

const quoted = (text: string) => html`“${text}”`;

/** Participants: who paid or shares it. */
const participants = (e: Expense) => new Set([...e.paid_by.map((p) => p.handle), ...e.shares.map((s) => s.handle)]);

function historyRow(h: ExpenseHistoryEntry, cur: string, names: Names): Markup {
  return html`<tr><td class="num">${h.version}</td><td>${capitalised(h.action)} by ${names.of(h.changed_by)}<br><span class="muted">${formatTime(h.changed_at)}</span></td><td>${h.changed_fields.length ? capitalised(changedWords(h.changed_fields)) : "—"}<br><span class="muted">${quoted(h.expense.description.untrusted_content)}, ${h.expense.amount} ${cur}${h.expense.original ? ` (${h.expense.original.amount} ${h.expense.original.currency})` : ""}</span></td></tr>`;
}

/** GET /groups/{group_id}/expenses/{expense_id}: the expense, its answers and history, and its actions. */
export async function renderExpense(c: WebContext, m: Messages = {}, errors: FieldErrors = {}, sent?: URLSearchParams): Promise<Response> {
  const groupId = c.params.group_id ?? "";
  if (!signedIn(c.session)) return signInFirst();
  const found = await expenseIn(c, groupId, c.params.expense_id ?? "");
  if (!found) return notFoundPage();
  m = { info: DONE[c.url.searchParams.get("done") ?? ""], ...m };
  const { expense: e, history } = found;
  const me = (await actingAs(c, c.session.agentId)).actor.handle;
  const names = new Names([...history.map((h) => h.changed_by), ...e.responses.map((r) => r.agent), e.created_by]).with(
    memberRefs((await groupView(c.tx, groupId, c.session.agentId)).members),
  );
  const l = (h: string) => names.of(h);
  const at = `/groups/${groupId}/expenses/${e.expense_id}`;
  const cur = e.currency;
  const answers = e.responses.filter((r) => r.version === e.version);
  const mine = answers.find((r) => r.agent.handle === me);
  const canAnswer = !e.deleted && participants(e).has(me) && e.created_by.handle !== me;
  const answer = canAnswer
    ? html`<h2>Your answer</h2>${mine ? html`<p>You ${mine.action === "confirm" ? "confirmed" : "disputed"} this version.</p>` : ""}
${form(`${at}/respond`, c.session.csrfToken, html`<input type="hidden" name="action" value="confirm">`, "Confirm", { idempotencyKey: formKey(c, `${at}/respond confirm`), ariaLabel: `Confirm “${e.description.untrusted_content}”` })}
${form(
  `${at}/respond`,
  c.session.csrfToken,
  html`<input type="hidden" name="action" value="dispute">${field("reason", "Why you dispute it", { multiline: true, maxlength: 500, error: errors.reason, value: sent?.get("reason") })}`,
  "Dispute",
  { secondary: true, idempotencyKey: crypto.randomUUID(), ariaLabel: `Dispute “${e.description.untrusted_content}”` },
)}`
    : "";
  const files = await attachmentsOf(c.tx, [e.expense_id], await attachmentLinkSigner(c.tx, c.svc.config.baseUrl, c.now));
  const title = `${e.kind === "refund" ? "Refund" : "Expense"}: “${e.description.untrusted_content}”`;
  return page(
    title,
    html`${alert(m.error)}${notice(m.info)}<p class="muted">Written by the group's members: the description and notes are quoted as they wrote them.</p>
<ul class="cards"><li><dl>
<dt>For you</dt><dd><strong>${capitalised(youLine(myNet(e, me), (minor) => `${formatAmount(minor, cur)} ${cur}`, e.kind === "refund"))}</strong></dd>
<dt>Amount</dt><dd><strong>${e.amount} ${cur}</strong>${e.kind === "refund" ? html` <span class="badge">refund</span>` : ""}${e.deleted ? html` <span class="badge">deleted</span>` : ""}${e.state === "disputed" ? html` <span class="badge">disputed</span>` : ""}</dd>
${e.original ? html`<dt>Given as</dt><dd>${e.original.amount} ${e.original.currency} at ${e.original.exchange_rate} ${cur} per ${e.original.currency}${e.exchange_rate_source ? html` <span class="muted">(reference rate: ${e.exchange_rate_source})</span>` : ""}</dd>` : ""}
<dt>Date</dt><dd>${e.date}</dd>
<dt>Category</dt><dd>${e.category}</dd>
<dt>Repeats</dt><dd>${e.repeat === "none" ? "no" : html`${e.repeat}${e.repeat_until ? `, until ${e.repeat_until}` : ""}${e.next_occurrence ? `, next on ${e.next_occurrence}` : ", no more occurrences"}`}</dd>
<dt>Added by</dt><dd>${e.created_by.handle === me ? "You" : names.of(e.created_by)}, ${formatTime(e.created_at)}</dd>
<dt>Version</dt><dd>${e.version}</dd>
${e.notes ? html`<dt>Notes</dt><dd>${quoted(e.notes.untrusted_content)}</dd>` : ""}
</dl></li></ul>
<h2>${e.kind === "refund" ? "Received by" : "Paid by"}</h2>
<ul>${e.paid_by.map((p) => html`<li>${l(p.handle)}: ${p.amount} ${cur}</li>`)}</ul>
<h2>Shares</h2>
<p class="muted">Split: ${SPLIT_LABELS[e.split.mode].toLowerCase()}.</p>
<ul>${e.shares.map((s) => {
      const given = e.split.among.find((x) => x.handle === s.handle)?.value;
      return html`<li>${l(s.handle)}: ${s.amount} ${cur}${given !== undefined && (e.split.mode !== "exact" || e.original) ? html` <span class="muted">(${e.split.mode === "percent" ? `${given}%` : e.split.mode === "shares" ? count(Number(given), "share") : given})</span>` : ""}</li>`;
    })}</ul>
<h2>Confirmations</h2>
${
  answers.length
    ? html`<ul>${answers.map((r) => html`<li>${r.agent.handle === me ? "You" : names.of(r.agent)} ${r.action === "confirm" ? "confirmed" : "disputed"} it${r.reason ? html`: ${quoted(r.reason.untrusted_content)}` : ""} <span class="muted">(${formatTime(r.responded_at)})</span></li>`)}</ul>`
    : html`<p>Nobody has answered this version yet.</p>`
}
${answer}
${receipts(c, at, me, e, files, names)}
<h2>Change it</h2>
${
  e.deleted
    ? form(`${at}/restore`, c.session.csrfToken, html``, "Restore", {
        idempotencyKey: formKey(c, `${at}/restore`),
        ariaLabel: `Restore “${e.description.untrusted_content}”`,
      })
    : html`<p><a href="${at}/edit">Edit this expense</a></p>${form(`${at}/delete`, c.session.csrfToken, html``, "Delete", {
        secondary: true,
        idempotencyKey: formKey(c, `${at}/delete`),
        // Joined, not one template: a template starting "Delete ${" reads as SQL to the SQL scan (security.test.ts).
        ariaLabel: ["Delete", `“${e.description.untrusted_content}”`].join(" "),
      })}`
}
<h2>History</h2>
<div class="scroll"><table><thead><tr><th scope="col" class="num">Version</th><th scope="col">What, who, when</th><th scope="col">What changed</th></tr></thead><tbody>${history.map((h) => historyRow(h, cur, names))}</tbody></table></div>
<p><a href="/groups/${groupId}">Back to the group</a></p>`,
    { status: m.status },
  );
}

/** The files kept with the expense (links that expire), a delete button on those the human may delete, and the upload form. */
function receipts(c: WebContext, at: string, me: string, e: Expense, files: AttachmentWire[], names: Names): Markup {
  const size = (n: number) => (n < 1024 ? `${n} bytes` : n < 1024 * 1024 ? `${Math.round(n / 1024)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`);
  const remove = (f: AttachmentWire) =>
    f.uploaded_by.handle === me || e.created_by.handle === me
      ? form(`${at}/attachments/delete`, c.session.csrfToken, html`<input type="hidden" name="attachment_id" value="${f.attachment_id}">`, "Delete", {
          inline: true,
          secondary: true,
          idempotencyKey: formKey(c, `${at}/attachments/delete ${f.attachment_id}`),
          // Joined, not one template: "Delete ${" reads as SQL to the SQL scan (security.test.ts).
          ariaLabel: ["Delete the file", f.filename.untrusted_content].join(" "),
        })
      : "";
  const list = files.length
    ? html`<ul aria-label="Receipts">${files.map((f) => html`<li><a href="${f.url}" rel="noopener noreferrer">${quoted(f.filename.untrusted_content)}</a> <span class="muted">(${f.media_type}, ${size(f.size_bytes)}, added by ${f.uploaded_by.handle === me ? "you" : names.of(f.uploaded_by)})</span> ${remove(f)}</li>`)}</ul>`
    : html`<p>No receipt yet.</p>`;
  const upload = e.deleted
    ? ""
    : html`<form method="post" action="${at}/attachments" enctype="multipart/form-data">
<input type="hidden" name="csrf" value="${c.session.csrfToken}">
<input type="hidden" name="idempotency_key" value="${formKey(c, `${at}/attachments`)}">
<label for="f-file">A receipt (PNG, JPEG, WebP, HEIC or PDF)</label><input id="f-file" type="file" name="file" required accept="${ATTACHMENT_MEDIA_TYPES.join(",")}">
<button type="submit">Upload</button>
</form>`;
  return html`<h2>Receipts</h2>
<p class="muted">Only the group's members see these files; file names were written by whoever added them.</p>
${list}${upload}`;
}

/** POST .../attachments: add_attachment with the file sent (multipart), through invoke() as every form's call. */
export async function postAttachment(a: ActionContext): Promise<Response> {
  const groupId = a.params.group_id ?? "";
  const expenseId = a.params.expense_id ?? "";
  if (!Uuid.safeParse(groupId).success || !Uuid.safeParse(expenseId).success) return notFoundPage();
  const file = a.files.get("file");
  const bytes = file ? Buffer.from(await file.arrayBuffer()) : Buffer.alloc(0);
  const result = await a.call("add_attachment", {
    expense_id: expenseId,
    filename: file?.name || "receipt",
    // What the browser declares is often empty (HEIC); the tool checks the content against the type sent either way.
    media_type: sniffType(bytes) ?? file?.type ?? "",
    content_base64: bytes.toString("base64"),
  });
  if (result.ok) return seeOther(`/groups/${groupId}/expenses/${expenseId}?done=attached`);
  if (result.error.code === "NOT_FOUND") return notFoundPage();
  return a.show((c) => renderExpense(c, { error: errorText(result.error), status: result.error.status }));
}

/** POST .../attachments/delete: delete_attachment. */
export async function postDeleteAttachment(a: ActionContext): Promise<Response> {
  const groupId = a.params.group_id ?? "";
  const expenseId = a.params.expense_id ?? "";
  if (!Uuid.safeParse(groupId).success || !Uuid.safeParse(expenseId).success) return notFoundPage();
  const result = await a.call("delete_attachment", { attachment_id: a.form.get("attachment_id") ?? "" });
  if (result.ok) return seeOther(`/groups/${groupId}/expenses/${expenseId}?done=detached`);
  if (result.error.code === "NOT_FOUND") return notFoundPage();
  return a.show((c) => renderExpense(c, { error: errorText(result.error), status: result.error.status }));
}

/** The edit form's values from the expense as it is: the amounts as they were given (another currency and its rate). */
function valuesOf(e: Expense): URLSearchParams {
  const v = new URLSearchParams();
  v.set("kind", e.kind ?? "expense");
  v.set("description", e.description.untrusted_content);
  v.set("amount", e.original ? e.original.amount : e.amount);
  v.set("currency", e.original ? e.original.currency : e.currency);
  if (e.original) v.set("exchange_rate", e.original.exchange_rate);
  v.set("date", e.date);
  v.set("category", e.category);
  v.set("repeat", e.repeat);
  if (e.notes) v.set("notes", e.notes.untrusted_content);
  if (e.paid_by.length === 1) v.set("paid_by", e.paid_by[0]!.handle);
  else {
    v.set("paid_by", "several");
    for (const p of e.paid_by) v.set(`paid_${p.handle}`, p.amount);
  }
  v.set("split_mode", e.split.mode);
  for (const s of e.split.among) {
    v.set(`in_${s.handle}`, "1");
    if (s.value !== undefined) v.set(`value_${s.handle}`, String(s.value));
  }
  return v;
}

/**
 * What the edit page says when a save was refused because the expense changed since the form was made (`from`, the
 * version the form was made from): who changed it and what, in plain words. The form then carries the current
 * version, with what the person typed kept, so saving again puts their changes over the current one.
 */
function changedMeanwhile(e: Expense, history: ExpenseHistoryEntry[], from: number, me: string, names: Names): string {
  const since = history.filter((h) => h.version > from);
  const who = [...new Set(since.map((h) => h.changed_by.handle))];
  const fields = [...new Set(since.flatMap((h) => (h.action === "updated" ? h.changed_fields : [h.action])))];
  const by =
    who.length && who.every((h) => h === me)
      ? "You changed this expense meanwhile (in another window, or before going back)"
      : `Someone else${who.length ? ` (${list(who.filter((h) => h !== me).map((h) => names.of(h)))})` : ""} changed this expense while you were editing it`;
  return `${by}: it is now version ${e.version}, and your form was made from version ${from}${fields.length ? `; changed since: ${changedWords(fields)}` : ""}. Nothing of yours was saved. Your changes are still in the form below: check the expense as it is now, then save again to apply them to version ${e.version}.`;
}

/**
 * GET /groups/{group_id}/expenses/{expense_id}/edit, and the same form with what the tool refused. `conflictFrom`: the
 * save was refused because the expense had changed since version conflictFrom; the form then carries the current
 * version (else every save would fail the same way) and the page says what happened.
 */
export async function renderEditExpense(
  c: WebContext,
  m: Messages = {},
  sent?: URLSearchParams,
  errors: FieldErrors = {},
  conflictFrom?: number,
): Promise<Response> {
  const groupId = c.params.group_id ?? "";
  if (!signedIn(c.session)) return signInFirst();
  const found = await expenseIn(c, groupId, c.params.expense_id ?? "");
  if (!found) return notFoundPage();
  const e = found.expense;
  const { group, members, labels } = await memberGroup(c, groupId);
  const everyone = [...new Set([...members, ...participants(e)])];
  const at = `/groups/${groupId}/expenses/${e.expense_id}`;
  const me = (await actingAs(c, c.session.agentId)).actor.handle;
  const error =
    conflictFrom !== undefined ? changedMeanwhile(e, found.history, conflictFrom, me, labels.with(found.history.map((h) => h.changed_by))) : m.error;
  // A refused save keeps the version it was made from, so someone else's change is never overwritten unseen; only a
  // refusal for that very reason, now said on the page, moves the form to the version shown.
  const version = conflictFrom !== undefined ? String(e.version) : (sent?.get("expected_version") ?? String(e.version));
  return page(
    "Edit the expense",
    html`${alert(error)}<p><a href="${at}">${quoted(e.description.untrusted_content)}</a>, version ${e.version}, in <a href="/groups/${groupId}">${group.name}</a>. If someone changes it meanwhile, you are told and nothing is saved.</p>
${expenseForm(c, {
  to: `${at}/edit`,
  submit: "Save the changes",
  members: everyone,
  labels,
  me,
  groupCurrency: group.currency,
  values: sent ?? valuesOf(e),
  errors,
  hidden: { expected_version: version },
  // Not the view's key: a change sent again after Back is refused by its version (and said so), not replayed.
  idempotencyKey: crypto.randomUUID(),
})}`,
    { status: m.status },
  );
}

/** POST /groups/{group_id}/expenses/{expense_id}/edit: update_expense at the version the form was made from. */
export async function postEditExpense(a: ActionContext): Promise<Response> {
  const groupId = a.params.group_id ?? "";
  const expenseId = a.params.expense_id ?? "";
  if (!Uuid.safeParse(groupId).success || !Uuid.safeParse(expenseId).success) return notFoundPage();
  const members = (await membersOf(a, groupId)) ?? [];
  const { args, among, payers } = expenseArgs(a.form, members, true, decimalCommaOf(a.req));
  const expected = Number(a.form.get("expected_version"));
  const result = await a.call("update_expense", { expense_id: expenseId, expected_version: expected, ...args });
  if (result.ok) return seeOther(`/groups/${groupId}/expenses/${expenseId}?done=updated`);
  if (result.error.code === "NOT_FOUND") return notFoundPage();
  const errors = fieldErrors(result.error, among, payers, a.form.get("paid_by") === "several");
  // The version conflict (update_expense's CONFLICT with details.current_version): the expense changed meanwhile.
  const changed = result.error.code === "CONFLICT" && typeof (result.error.details as { current_version?: unknown } | undefined)?.current_version === "number";
  return a.show((c) => renderEditExpense(c, { error: errorText(result.error), status: result.error.status }, a.form, errors, changed ? expected : undefined));
}

/** One call on the expense of the path; done, back to its page with a notice; refused, its page with the message. */
const expenseAction = (tool: string, args: (f: URLSearchParams) => Record<string, unknown>, done: string) =>
  toolForm({
    tool,
    form: tool,
    args: (f, { expense_id }) => ({ expense_id, ...args(f) }),
    done: (_data, { group_id, expense_id }) => `/groups/${group_id}/expenses/${expense_id}?done=${done}`,
    show: (c, m) => renderExpense(c, m, m.issues, m.values),
  });

/** POST .../delete: delete_expense. */
export const postDeleteExpense = expenseAction("delete_expense", () => ({}), "deleted");
/** POST .../restore: restore_expense. */
export const postRestoreExpense = expenseAction("restore_expense", () => ({}), "restored");
/** POST .../respond: respond_expense, a dispute with its reason. */
export const postRespondExpense = expenseAction(
  "respond_expense",
  (f) => ({ action: f.get("action") ?? undefined, ...(f.get("action") === "dispute" ? { reason: f.get("reason") ?? "" } : {}) }),
  "answered",
);

/**
 * The key of one of a form's several calls: derived from the form's key and what the call is about, so the form
 * sent twice repeats none of them, and still 8-128 characters whatever the form's key was.
 */
export const formKeyFor = (formKey: string, about: string) => createHash("sha256").update(`${formKey}\n${about}`).digest("hex");
