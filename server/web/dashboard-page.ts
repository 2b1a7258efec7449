// `/` for a signed-in browser: what the human owes and is owed (per currency, and per friend across groups: the
// answer of get_balances without group_id, with a button to pay a friend across groups), what waits for their
// decision, and the newest news of the inbox.
// Reads are the domain functions the read tools use, as the signed-in agent, in the page's read transaction. The
// inbox is read with inspect(), which marks nothing and moves no cursor: opening a page must not make an item look
// seen to the human's agents, who read the same inbox.
import { counterpartySentence } from "../contract/ledger-wording.ts";
import type { InboxItem } from "../contract/wire.ts";
import { inspect, JOIN_CODE_ITEM } from "../domain/inbox.ts";
import { counterpartyBalances } from "../domain/ledger/balances/balances.ts";
import { agentById, refsByHandles, type AgentRow } from "../domain/agents.ts";
import { memberGroup } from "../domain/ledger/groups/membership.ts";
import { listGroups } from "../domain/ledger/groups/groups.ts";
import { actingAs, formatTime, type WebContext } from "./context.ts";
import { alert, html, notice, page } from "./html.ts";
import { handlesOf, itemText, Names, type ItemWords } from "./wording.ts";
import type { WebSession } from "./session.ts";
import { button, required } from "./web-actions.ts";
import { toolForm, type FormMessages } from "./framework.ts";

// A balance reads "+40.00 EUR" or "-40.00 EUR"; the sentence says which way.
const unsigned = (balance: string) => balance.replace(/^[+-]/, "");

/** How many inbox items the pages read (the newest live ones). */
export const INBOX_PAGE = 100;
const RECENT = 8;

/** The human's inbox, newest first, without sign-in codes (a code connects a browser; pages never show one). */
export async function inboxItems(c: WebContext, agentId: string): Promise<{ items: InboxItem[]; unread: number; requires_action: number }> {
  const res = await inspect(await actingAs(c, agentId), INBOX_PAGE);
  return { ...res, items: res.items.filter((i) => i.type !== JOIN_CODE_ITEM) };
}

export const waitingForDecision = (items: InboxItem[]) => items.filter((i) => i.requires_action && !i.resolved);

/** An ask already answered (a contact request accepted, an invitation joined): nothing is left to do or to read. */
export const answered = (i: InboxItem) => i.requires_action && i.resolved;

/** What the items' sentences name (wording.ts itemText): the people by their names, the groups by theirs. */
export async function itemWords(c: WebContext, agentId: string, items: InboxItem[]): Promise<ItemWords> {
  const byHandle = await refsByHandles(c.tx, items.flatMap(handlesOf));
  const groups = new Map<string, string>();
  for (const id of new Set(items.flatMap((i) => (i.refs.group_id ? [i.refs.group_id] : [])))) {
    const g = await memberGroup(c.tx, id, agentId);
    if (g) groups.set(id, g.name);
  }
  return { names: new Names([...items.map((i) => i.from), ...byHandle.values()]), groups };
}

/** Where an item is acted on: the inbox for what it answers itself, the group or plan page for the rest. */
export function whereToAct(i: InboxItem): string {
  if (i.type === "contact.request") return "/contacts";
  if (i.type.startsWith("ledger.") && i.refs.group_id) return `/groups/${i.refs.group_id}`;
  if (i.type.startsWith("plan.") && i.refs.plan_id) return `/plans/${i.refs.plan_id}`;
  return `/inbox#item-${i.item_id}`;
}

/** POST /payments/across: record_payment without group_id, all the human owes a friend in one currency, across groups. */
export const postPayAcrossGroups = toolForm({
  tool: "record_payment",
  form: "pay",
  args: (f) => ({ to: required(f, "to"), currency: required(f, "currency") }),
  done: (data) => `/?done=paid-${data.parts.length}`,
  show: (c, m) => renderDashboard(c, c.session as WebSession & { agentId: string }, m),
});

/** The button paying a friend what the human owes them in one currency, in every group both are in. */
const payAcross = (c: WebContext, p: { agent: { handle: string }; currency: string; to_settle_minor: number }, name: string) =>
  p.to_settle_minor < 0
    ? html` ${button(c, "/payments/across", { to: p.agent.handle, currency: p.currency }, "Record paying it", {
        ariaLabel: `Record paying it: you paid ${name} what you owe them in ${p.currency}, across your groups`,
      })}`
    : "";

/** What the page says after a payment across groups (?done=paid-N, N its parts). */
function paidNotice(done: string | null): string | undefined {
  const parts = done?.match(/^paid-(\d+)$/)?.[1];
  if (!parts) return undefined;
  return `Payment recorded across ${parts} ${parts === "1" ? "group" : "groups"}. It counts once they confirm it.`;
}

/** What a new person does first, said while they are in no group yet. */
const firstSteps = html`<h2>Start here</h2><ol>
<li><a href="/groups/new">Create a group</a> for a trip, a flat or a dinner, in its currency.</li>
<li>Add the people: a friend's handle from <a href="/contacts">contacts</a>, or just a name for someone without an account; they take their place later from a link.</li>
<li>Add what each of you paid; svc keeps the balances and says who pays whom to settle up.</li>
<li>Optional: <a href="/settings">add your e-mail address</a> to hear when something happens.</li>
</ol>`;

/** The reader's own name, as the dashboard greets them: their display name, else their handle. */
const nameOf = (me: AgentRow | undefined) => me?.displayName.trim() || me?.handle || "";

export async function renderDashboard(c: WebContext, session: WebSession & { agentId: string }, m: FormMessages = {}): Promise<Response> {
  const ctx = await actingAs(c, session.agentId);
  const balances = await counterpartyBalances(ctx);
  const { items } = await inboxItems(c, session.agentId);
  const waiting = waitingForDecision(items);
  // What happened lately, asks still open included (an expense to confirm is news too); asks already answered left out.
  const recent = items.filter((i) => !answered(i)).slice(0, RECENT);
  const words = await itemWords(c, session.agentId, [...waiting, ...recent]);
  const names = new Names(balances.counterparties.map((p) => p.agent));
  const nonZero = balances.totals.filter((t) => t.balance_minor !== 0);
  const { groups } = await listGroups(ctx, true, 1);
  return page(
    `Hello, ${nameOf(await agentById(c.tx, session.agentId))}`,
    html`${alert(m.error)}${notice(paidNotice(c.url.searchParams.get("done")))}<p>Go to <a href="/groups">your groups</a>, <a href="/contacts">contacts</a>, <a href="/inbox">inbox</a>, <a href="/plans">plans</a> or <a href="/account">account</a>.</p>
${groups.length ? "" : firstSteps}
<h2>Balances</h2>
${
  nonZero.length
    ? html`<ul aria-label="In total">${nonZero.map((t) => html`<li>${t.balance_minor > 0 ? html`You are owed <strong>${unsigned(t.balance)}</strong> in total` : html`You owe <strong>${unsigned(t.balance)}</strong> in total`}</li>`)}</ul>`
    : html`<p>You are settled up in every group.</p>`
}
${
  balances.counterparties.length
    ? html`<h3>By person</h3><ul aria-label="By person">${balances.counterparties.map(
        (p) =>
          html`<li>${counterpartySentence(p, (r) => names.of(r))}${p.to_settle_minor === p.balance_minor ? "" : html` (${unsigned(p.to_settle)} once the payments waiting for confirmation count)`}${payAcross(c, p, names.of(p.agent))}<br><span class="muted">in ${p.groups.map((g, i) => html`${i ? ", " : ""}<a href="/groups/${g.group_id}">${g.name}</a>`)}</span></li>`,
      )}</ul>
<p class="muted">“Record paying it” records one payment of all you owe that person in that currency, in each group where you owe them, oldest group first; they confirm it once.</p>`
    : ""
}
${balances.pending_payments.length ? html`<p>${balances.pending_payments.length} ${balances.pending_payments.length === 1 ? "payment waits" : "payments wait"} for confirmation: see the groups.${balances.settle_up_counts_pending.length ? " “Record paying it” counts them as if confirmed, so nothing is paid twice." : ""}</p>` : ""}
<h2>Waiting for your decision</h2>
${
  waiting.length
    ? html`<ul aria-label="Waiting for your decision">${waiting.map((i) => html`<li>${itemText(i, words)} <a href="${whereToAct(i)}">Decide</a></li>`)}</ul>`
    : html`<p>Nothing waits for you.</p>`
}
<h2>Recent activity</h2>
${
  recent.length
    ? html`<ul aria-label="Recent activity">${recent.map((i) => html`<li><span class="muted">${formatTime(i.created_at)}</span> ${itemText(i, words)}</li>`)}</ul>
<p><a href="/inbox">The whole inbox</a></p>`
    : html`<p>Nothing has happened yet.</p>`
}`,
    { status: m.status },
  );
}
