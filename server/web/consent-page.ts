// The authorization endpoint and the consent page: the request is checked, kept in the browser session while
// the human signs in, and answered with a code (or access_denied) at the client's registered redirect URI.
import { agentById } from "../domain/agents.ts";
import { checkAuthorizationRequest, issueCode, type AuthorizationRequest } from "../auth/oauth.ts";
import { errorPage, type Messages, type WebContext } from "./context.ts";
import { alert, form, html, notice, page, seeOther } from "./html.ts";
import { signedIn, updateSession } from "./session.ts";
import { createHandleFromForm, newHandleFields, signinBlock } from "./signin.ts";

const SCOPE_TEXT: Record<string, string> = {
  "svc:read": "Read your profile, contacts, inbox, groups, expenses and messages",
  "svc:write": "Act for you: send contact requests and messages, add expenses and payments, answer invitations",
  offline_access: "Stay connected for up to 30 days without asking you again",
};

/** RFC 9207: the issuer travels with the answer so the client can tell which server sent it. */
function redirectTo(redirectUri: string, params: Record<string, string | undefined>, issuer: string): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  url.searchParams.set("iss", issuer);
  return url.toString();
}

/** Where the consent form's redirect may lead; form-action must allow it or the browser stops the redirect. */
function redirectTarget(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === "http:" || url.protocol === "https:" ? url.origin : url.protocol;
}

/** GET /oauth/authorize */
export async function authorize(c: WebContext): Promise<Response> {
  const check = await checkAuthorizationRequest(c.tx, c.url.searchParams, c.base);
  if (check.kind === "fatal") return errorPage("Cannot continue", check.message, 400, html`<p>Nothing was shared. Go back to the app and try again.</p>`);
  if (check.kind === "redirect") {
    return seeOther(redirectTo(check.redirectUri, { error: check.error, error_description: check.description, state: check.state }, c.base));
  }
  // The id ties the consent form to this request, so a page left open for another request cannot approve this one.
  c.session = await updateSession(c.tx, c.session, { oauthRequest: { ...check.request, id: crypto.randomUUID() } });
  return seeOther("/oauth/consent");
}

type PendingRequest = AuthorizationRequest & { id: string };
const requestOf = (c: WebContext) => c.session.oauthRequest as PendingRequest | null;
const decisionFields = (r: PendingRequest, decision: string) =>
  html`<input type="hidden" name="request_id" value="${r.id}"><input type="hidden" name="decision" value="${decision}">`;

/** GET /oauth/consent, and the same page after a failed sign-in step. */
export async function renderConsent(c: WebContext, m: Messages = {}): Promise<Response> {
  const r = requestOf(c);
  if (!r) return errorPage("Nothing to approve", "No app is waiting for your approval in this browser. Start again from the app.", 400);
  const host = new URL(r.redirect_uri).host || new URL(r.redirect_uri).protocol;
  const cancel = form("/oauth/consent", c.session.csrfToken, decisionFields(r, "deny"), "Deny", { secondary: true });
  const opts = { status: m.status, formTargets: [redirectTarget(r.redirect_uri)] };
  if (!signedIn(c.session)) {
    return page(
      `Sign in to continue to ${r.client_name}`,
      html`${alert(m.error)}${notice(m.info)}
<p><strong>${r.client_name}</strong> wants to use svc as you. Sign in with your handle, or create one here; then you decide what it may do.</p>
<h2>I already have a handle</h2>
${await signinBlock(c, "authorize", undefined, { level: 3 })}
<h2>I am new here</h2>
${form("/oauth/signup", c.session.csrfToken, newHandleFields(c), "Create my handle and continue")}
<h2>This was not me</h2>
${cancel}`,
      opts,
    );
  }
  const me = (await agentById(c.tx, c.session.agentId))!;
  // A name is whatever the app claims; the host publishing its metadata document is the one thing a URL client_id proves.
  const publisher = r.client_host
    ? html`<p>Its details are published by <strong>${r.client_host}</strong>; the name is the one it gives itself there.</p>`
    : "";
  return page(
    `Allow ${r.client_name}?`,
    html`${alert(m.error)}${notice(m.info)}
<p><strong>${r.client_name}</strong> wants to act as <strong>@${me.handle}</strong> (${me.displayName}). After you answer you go back to <strong>${host}</strong>.</p>
${publisher}
<h2>It will be able to</h2>
<ul>${r.scope.split(" ").map((s) => html`<li>${SCOPE_TEXT[s] ?? s} <span class="muted">(${s})</span></li>`)}</ul>
<div class="actions">${form("/oauth/consent", c.session.csrfToken, decisionFields(r, "approve"), "Allow")}${cancel}</div>
<p class="muted">You can disconnect it at any time on your account page.</p>
${form("/account/signout", c.session.csrfToken, html`<input type="hidden" name="flow" value="authorize">`, `Not @${me.handle}? Use another handle`, { link: true })}`,
    opts,
  );
}

/** POST /oauth/signup: "I am new here" on the sign-in page; the new handle is signed in and comes back to consent. */
export async function postSignup(c: WebContext): Promise<Response> {
  if (!requestOf(c)) return renderConsent(c);
  const created = await createHandleFromForm(c);
  if (!("agentId" in created)) return renderConsent(c, created);
  return seeOther("/oauth/consent");
}

/** POST /oauth/consent */
export async function postConsent(c: WebContext): Promise<Response> {
  const r = requestOf(c);
  if (!r || c.form.get("request_id") !== r.id) {
    return errorPage(
      "Nothing to approve",
      "No app is waiting for this approval in this browser (another request may have replaced it). Start again from the app.",
      400,
    );
  }
  const decision = c.form.get("decision");
  if (decision === "deny") {
    c.session = await updateSession(c.tx, c.session, { oauthRequest: null });
    return seeOther(redirectTo(r.redirect_uri, { error: "access_denied", error_description: "The user refused.", state: r.state }, c.base));
  }
  if (decision !== "approve") return renderConsent(c, { error: "Choose Allow or Deny.", status: 400 });
  if (!signedIn(c.session)) return renderConsent(c, { error: "Sign in first.", status: 401 });
  // The grant is obtained through this browser's client, and ends with it (or with what it was obtained through).
  const code = await issueCode(c.tx, r, c.session.agentId, c.session.clientId, c.now);
  c.session = await updateSession(c.tx, c.session, { oauthRequest: null });
  return seeOther(redirectTo(r.redirect_uri, { code, state: r.state }, c.base));
}
