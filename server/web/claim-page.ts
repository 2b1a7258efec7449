// /claim/{code}: the one-time link a group member sends a friend they added by name (a placeholder member). The
// page says which group and name it is and what taking it over means; a signed-in person takes it over with one
// button (join_group with the claim code, through invoke() as the browser's client); anyone else signs in here (the
// sign-in form of every page) or creates an account first, and comes back here (the forms and links carry `next`,
// context.ts returnPath).
import { formatBalance } from "../domain/ledger/money/amounts.ts";
import { claimExpiredMessage, isClaimCode, placeholderByCode } from "../domain/ledger/groups/placeholders.ts";
import { groupBalances } from "../domain/ledger/balances/balances.ts";
import { AppError } from "../errors.ts";
import { actingAs, errorPage, withNext, type Messages, type WebContext } from "./context.ts";
import { alert, form, html, page, seeOther } from "./html.ts";
import type { ActionContext } from "./framework.ts";
import { signedIn } from "./session.ts";
import { signinBlock } from "./signin.ts";
import { errorText } from "./wording.ts";

const SPENT = "This link was already used, or it is not a link to take a place in a group. Ask whoever sent it for a new one.";

/** GET /claim/{code} */
export async function renderClaim(c: WebContext, m: Messages = {}): Promise<Response> {
  const code = c.params.code ?? "";
  if (!isClaimCode(code)) return errorPage("Link not valid", SPENT, 404);
  let found: Awaited<ReturnType<typeof placeholderByCode>>;
  try {
    found = await placeholderByCode(c.tx, code, c.now);
  } catch (err) {
    if (err instanceof AppError && err.code === "NOT_FOUND") return errorPage("Link not valid", SPENT, 404);
    throw err;
  }
  const { p, g } = found;
  if (found.expired) return errorPage("Link expired", claimExpiredMessage(p.name, p.claimExpiresAt!), 410);
  const balance = (await groupBalances(c.tx, g.groupId)).get(p.memberId) ?? 0n;
  const what = html`<p>You were added as <strong>${p.name}</strong> to the group <strong>${g.name}</strong> (${g.currency}) by someone who shares costs with you. The group's current balance for ${p.name} is <strong>${formatBalance(balance, g.currency)}</strong>.</p>
<p>Taking this place makes its expenses, payments and balance yours; you can then confirm or dispute each expense. This link works until ${p.claimExpiresAt ? p.claimExpiresAt.slice(0, 10) : "it is used"}.</p>`;
  if (!signedIn(c.session)) {
    const here = `/claim/${encodeURIComponent(code)}`;
    return page(
      "Take your place in a group",
      html`${alert(m.error)}${what}
<p>Sign in below, or <a href="${withNext("/signup", here)}">create an account</a>; either way you come back to this page to take the place.</p>
${await signinBlock(c, "account", undefined, { next: here })}`,
      { status: m.status },
    );
  }
  const me = (await actingAs(c, c.session.agentId)).actor.handle;
  return page(
    "Take your place in a group",
    html`${alert(m.error)}${what}
${form(`/claim/${encodeURIComponent(code)}`, c.session.csrfToken, html``, `Take over ${p.name} as @${me}`, { idempotencyKey: crypto.randomUUID() })}
<p class="muted">Not @${me}? <a href="/account">Sign out</a> first, then open this link again.</p>`,
    { status: m.status },
  );
}

/** POST /claim/{code}: join_group with the claim code, then the group's page. */
export async function postClaim(a: ActionContext): Promise<Response> {
  const code = a.params.code ?? "";
  const result = await a.call("join_group", { invite_code: code });
  if (result.ok) return seeOther(`/groups/${(result.data as { group: { group_id: string } }).group.group_id}`);
  if (result.error.code === "NOT_FOUND") return errorPage("Link not valid", SPENT, 404);
  return a.show((c) => renderClaim(c, { error: errorText(result.error), status: result.error.status }));
}
