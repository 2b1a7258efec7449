// /account/merge: joining a handle made twice into the other one (server/domain/handle-merge.ts). Only while this
// browser session holds a provider login that verified the e-mail both handles share: a handle signed in by an
// inbox code alone could otherwise hand its keys the other handle's powers. A confirmation page first says what
// moves, what ends, and what still blocks it; nothing changes before the human presses the button.
import { agentById, type AgentRow } from "../domain/agents.ts";
import { handlesWithVerifiedEmail, mergeHandles, mergePreview, verifiedEmails } from "../domain/handle-merge.ts";
import { renderAccount } from "./account-page.ts";
import { errorPage, type WebContext } from "./context.ts";
import { form, html, page } from "./html.ts";
import { signedIn } from "./session.ts";
import { signInAs } from "./signin.ts";
import { withoutAgentAsides } from "./wording.ts";

interface Pair {
  keep: AgentRow;
  retire: AgentRow;
}

const back = html`<p><a href="/account">Back to your account</a></p>`;

/** The two handles named by `params`, when they are this human's to join; otherwise why not, as a page. */
async function pairOf(c: WebContext, params: URLSearchParams): Promise<Pair | Response> {
  if (!signedIn(c.session)) return errorPage("Join two handles", "Sign in on your account page first.", 401, back);
  const issuer = c.svc.config.oidc?.issuer;
  const login = c.session.providerLogin;
  const me = (await agentById(c.tx, c.session.agentId))!;
  if (
    !issuer ||
    !login ||
    login.issuer !== issuer ||
    !login.emailVerified ||
    !login.email ||
    !(await verifiedEmails(c.tx, me.agentId, issuer)).includes(login.email)
  ) {
    return errorPage(
      "Join two handles",
      "To join two handles, first sign in with your identity provider in this browser: it shows that you hold the e-mail both share.",
      403,
      back,
    );
  }
  const keep = params.get("keep");
  const retire = params.get("retire");
  const otherHandle = keep === me.handle ? retire : retire === me.handle ? keep : null;
  const other =
    otherHandle === null ? undefined : (await handlesWithVerifiedEmail(c.tx, issuer, login.email, me.agentId)).find((a) => a.handle === otherHandle);
  if (!other) return errorPage("Join two handles", "These are not two of your handles sharing the e-mail you signed in with.", 404, back);
  return keep === me.handle ? { keep: me, retire: other } : { keep: other, retire: me };
}

/** GET /account/merge?keep=...&retire=...: what the join would do, or what must be finished first. */
export async function renderMerge(c: WebContext): Promise<Response> {
  const pair = await pairOf(c, c.url.searchParams);
  if (pair instanceof Response) return pair;
  const { keep, retire } = pair;
  const preview = await mergePreview(c.tx, c.now, retire);
  const fields = html`<input type="hidden" name="keep" value="${keep.handle}"><input type="hidden" name="retire" value="${retire.handle}">`;
  return page(
    `Join @${retire.handle} into @${keep.handle}`,
    html`<p>You keep <strong>@${keep.handle}</strong> (${keep.displayName}). <strong>@${retire.handle}</strong> is retired: it can no longer sign in or be found, and nobody can register it again. Its history (expenses, payments, messages) keeps its name. This cannot be undone.</p>
<h2>Apps that will act as @${keep.handle}</h2>
${
  preview.clients.length
    ? html`<ul>${preview.clients.map((cl) => html`<li>${cl.name} <span class="muted">(${cl.kind === "oauth" ? "OAuth app" : "API key"})</span></li>`)}</ul>
<p class="muted">Their keys keep working. OAuth apps get a new token for @${keep.handle} at their next refresh, or sign in again.</p>`
    : html`<p>No app is connected to @${retire.handle}.</p>`
}
${
  preview.contacts.length
    ? html`<h2>Contacts that end</h2>
<p>@${retire.handle}'s contacts and contact requests with ${preview.contacts.map((h, i) => html`${i ? ", " : ""}<strong>@${h}</strong>`)} end, as if removed; they are not told. Add them again from @${keep.handle} if you like.</p>`
    : ""
}
${
  preview.blockers.length
    ? html`<h2>First, finish these</h2>
<ul>${preview.blockers.map((b) => html`<li>${withoutAgentAsides(b)}</li>`)}</ul>
<p>Your agents can do each of these with the tool named. Then come back to this page.</p>`
    : form("/account/merge", c.session.csrfToken, fields, `Join @${retire.handle} into @${keep.handle}`)
}
${back}`,
    { status: preview.blockers.length ? 409 : 200 },
  );
}

/**
 * POST /account/merge: everything is checked again in the transaction that does it. Something left to finish
 * (only possible if it appeared after the confirmation page) is a CONFLICT naming it, and nothing is kept.
 */
export async function postMerge(c: WebContext): Promise<Response> {
  const pair = await pairOf(c, c.form);
  if (pair instanceof Response) return pair;
  const { keep, retire } = pair;
  // The provider login vouches for both handles (the same verified e-mail), so this browser stays signed in, as the kept one.
  if (c.session.agentId === retire.agentId) await signInAs(c, keep.agentId, { parentClientId: null }, "merge", c.session.providerLogin);
  const moved = await mergeHandles(c.tx, c.now, keep, retire);
  return renderAccount(c, {
    info: `@${retire.handle} is joined into @${keep.handle}: ${moved} ${moved === 1 ? "app now acts" : "apps now act"} as @${keep.handle}, and @${retire.handle} is retired.`,
  });
}
