// /inbox: what waits for the human's decision, with its buttons where the page can answer (contact requests, group
// invitations) and a link to where it is answered otherwise; then the rest, newest first. Others' words are always
// in a quoted block naming the writer. Read with inspect() (dashboard-page.ts inboxItems), which marks nothing and
// moves no cursor: only "Mark as seen" (ack_inbox, through invoke()) changes what the agents' inbox counts.
import { formKey } from "./form-keys.ts";
import type { InboxItem } from "../contract/wire.ts";
import { CONFIRMATION_ITEM } from "../domain/inbox.ts";
import { memberGroup } from "../domain/ledger/groups/membership.ts";
import type { WebContext } from "./context.ts";
import { formatTime } from "./context.ts";
import { answered, inboxItems, itemWords, waitingForDecision, whereToAct } from "./dashboard-page.ts";
import { count, itemText, type ItemWords } from "./wording.ts";
import { alert, form, html, notice, page } from "./html.ts";
import { signedIn } from "./session.ts";
import { signinBlock } from "./signin.ts";
import { button, quoted } from "./web-actions.ts";
import { toolForm, type FormMessages } from "./framework.ts";

const DONE: Record<string, string> = {
  seen: "Marked as seen.",
  confirmed: "Confirmed.",
  declined: "Invitation declined.",
};

function actions(c: WebContext, i: InboxItem, words: ItemWords) {
  const from = i.from ? words.names.of(i.from) : "";
  if (i.type === "contact.request" && i.refs.handle) {
    const who = i.from ? words.names.of(i.from) : `@${i.refs.handle}`;
    return html`${button(c, "/contacts/respond", { handle: i.refs.handle, action: "accept" }, "Accept", { ariaLabel: `Accept ${who}` })} ${button(c, "/contacts/respond", { handle: i.refs.handle, action: "decline" }, "Decline", { secondary: true, ariaLabel: `Decline ${who}` })}`;
  }
  if (i.type === "group.invitation" && i.refs.invite_id) {
    return html`${button(c, "/inbox/group-invite", { invite_id: i.refs.invite_id, action: "accept" }, "Join the group", { ariaLabel: from ? `Join the group ${from} invited you to` : "Join the group" })} ${button(c, "/inbox/group-invite", { invite_id: i.refs.invite_id, action: "decline" }, "Decline", { secondary: true, ariaLabel: `Decline the invitation from ${from || "the group"}` })}`;
  }
  return html`<a href="${whereToAct(i)}">Answer it on its page</a>`;
}

const itemCard = (c: WebContext, i: InboxItem, waiting: boolean, words: ItemWords) =>
  html`<li id="item-${i.item_id}"><span class="muted">${formatTime(i.created_at)}${i.seen ? "" : html` <span class="badge">new</span>`}</span>
<span>${itemText(i, words)}</span>${quoted(i, i.from ? words.names.of(i.from) : "another member")}${waiting ? html`<div>${actions(c, i, words)}</div>` : ""}</li>`;

/**
 * Expenses of one group waiting for the human's confirmation, as one card: how many, a link to the group, and one
 * button that confirms them all (respond_expense with expense_ids).
 */
function confirmationCard(c: WebContext, groupId: string, name: string | null, items: InboxItem[], words: ItemWords) {
  const ids = items.map((i) => i.refs.expense_id!).slice(0, 100);
  // One expense is said as its sentence (what it means for the reader), its notes quoted; several as one line.
  const said =
    items.length === 1
      ? html`<span>${itemText(items[0]!, words)}</span>${quoted(items[0]!, items[0]!.from ? words.names.of(items[0]!.from) : "another member")}`
      : html`<span>${count(items.length, "expense")} in ${name === null ? "a group" : html`“${name}”`} to confirm.</span>`;
  return html`<li id="group-${groupId}">${said}
<div><a href="/groups/${groupId}">See them on the group's page</a> ${button(c, "/inbox/confirm-all", { expense_ids: ids.join(",") }, `Confirm all ${ids.length}`, { ariaLabel: `Confirm all ${ids.length} expenses of the group` })}</div></li>`;
}

/** GET /inbox */
export async function renderInbox(c: WebContext, m: FormMessages = {}): Promise<Response> {
  if (!signedIn(c.session))
    return page("Your inbox", html`<p>Sign in to see your inbox.</p>${await signinBlock(c, "account", undefined, { next: "/inbox" })}`, { status: m.status });
  m = { info: DONE[c.url.searchParams.get("done") ?? ""], ...m };
  const { items: all } = await inboxItems(c, c.session.agentId);
  // An ask already answered (accepted, joined, confirmed) has nothing left to do: the page leaves it out.
  const items = all.filter((i) => !answered(i));
  const waiting = waitingForDecision(items);
  const rest = items.filter((i) => !waiting.includes(i));
  const words = await itemWords(c, c.session.agentId, items);
  // Expenses to confirm: one card per group (with its "Confirm all"); the other asks one card each.
  const toConfirm = Map.groupBy(
    waiting.filter((i) => i.type === CONFIRMATION_ITEM && i.refs.group_id && i.refs.expense_id),
    (i) => i.refs.group_id!,
  );
  const single = waiting.filter((i) => !(i.type === CONFIRMATION_ITEM && i.refs.group_id && i.refs.expense_id));
  const cards = [];
  for (const [groupId, list] of toConfirm)
    cards.push(confirmationCard(c, groupId, (await memberGroup(c.tx, groupId, c.session.agentId))?.name ?? null, list, words));
  cards.push(...single.map((i) => itemCard(c, i, true, words)));
  const unseen = items.filter((i) => !i.seen);
  // Asks already answered are not shown, and are marked seen with the rest: nothing of them is left to read.
  const quiet = all.filter((i) => answered(i) && !i.seen);
  return page(
    "Your inbox",
    html`${alert(m.error)}${notice(m.info)}
<p class="muted">Words in a quoted block were written by the person named under it, not by this server.</p>
<h2>Waiting for your decision</h2>
${cards.length ? html`<ul class="cards" aria-label="Waiting for your decision">${cards}</ul>` : html`<p>Nothing waits for you.</p>`}
<h2>Everything else</h2>
${rest.length ? html`<ul class="cards" aria-label="Everything else">${rest.map((i) => itemCard(c, i, false, words))}</ul>` : html`<p>Nothing here.</p>`}
${
  unseen.length
    ? form(
        "/inbox/seen",
        c.session.csrfToken,
        html`<input type="hidden" name="item_ids" value="${[...unseen, ...quiet]
          .slice(0, 100)
          .map((i) => i.item_id)
          .join(",")}">`,
        `Mark ${count(Math.min(unseen.length, 100), "item")} as seen`,
        { secondary: true, idempotencyKey: formKey(c, "/inbox/seen") },
      )
    : ""
}`,
    { status: m.status },
  );
}

/** POST /inbox/seen: ack_inbox seen for the items the page showed unseen. */
export const postInboxSeen = toolForm({
  tool: "ack_inbox",
  form: "seen",
  // The ids the page showed unseen, in one field: exactly those, not whatever arrived since.
  args: (f) => ({ item_ids: (f.get("item_ids") ?? "").split(",").filter(Boolean), action: "seen" }),
  done: () => "/inbox?done=seen",
  show: renderInbox,
});

/** POST /inbox/group-invite: respond_group_invite; joined, the group's page. */
export const postGroupInvite = toolForm({
  tool: "respond_group_invite",
  form: "invite",
  args: (f) => ({ invite_id: f.get("invite_id") ?? "", action: f.get("action") ?? "" }),
  done: (data) => (data.group ? `/groups/${data.group.group_id}` : "/inbox?done=declined"),
  show: renderInbox,
});

/** POST /inbox/confirm-all: respond_expense confirm with the expense_ids of one group's card, in one call. */
export const postConfirmExpenses = toolForm({
  tool: "respond_expense",
  form: "confirm",
  args: (f) => ({ expense_ids: (f.get("expense_ids") ?? "").split(",").filter(Boolean), action: "confirm" }),
  done: () => "/inbox?done=confirmed",
  show: renderInbox,
});
