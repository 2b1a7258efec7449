// Human sign-in: the one sign-in form every page shows (signinBlock: a password, a passkey, a one-time code left in
// the handle's inbox or sent by text message, a link by e-mail, the configured OpenID Connect provider), and the steps
// of the code and the provider.
import { agentForIdentity, linkIdentity } from "../auth/identities.ts";
import { finishOidc, type OidcFlow, type OidcIdentity } from "../auth/oidc.ts";
import { createHmac } from "node:crypto";
import { requireWrite } from "../../db/client.ts";
import { iso, later } from "../clock.ts";
import {
  decoyCode,
  MAX_ATTEMPTS,
  pendingCode,
  sendSigninCode,
  sendSigninCodeBySms,
  SIGNIN_CODE_TTL_MS,
  verifySigninCode,
  type Purpose,
  type Verification,
} from "../domain/signin-codes.ts";
import { sendSms } from "../auth/sms.ts";
import { DEFAULTS } from "../config.ts";
import { chargeSmsAsk } from "../domain/text-messages.ts";
import { AppError } from "../errors.ts";
import { agentByHandle, agentById } from "../domain/agents.ts";
import { isReservedHandle } from "../contract/handles.ts";
import { createAgent, handleTaken, joinById } from "../domain/join.ts";
import { consumePlatformInvite } from "../domain/platform-invites.ts";
import { constantTimeEqual } from "../auth/secrets.ts";
import { Description, DisplayName, Handle, HANDLE_PATTERN } from "../contract/wire.ts";
import type { Services } from "../services.ts";
import { FLOWS, isFlow, nextOf, returnPath, withNext, type Flow, type Messages, type WebContext } from "./context.ts";
import { field, form, html, seeOther, type Markup } from "./html.ts";
import { CLEAR_SITE_DATA } from "./webapp.ts";
import { factorOrigin, mayWrite, readCookie, sessionCookie, signIn, signOut, signedIn, updateSession, type Origin, type WebSession } from "./session.ts";

export type RenderFlow = (c: WebContext, flow: Flow, m: Messages) => Promise<Response>;

/** Where the sign-in forms of a page sit: the level of their headings, the handle to prefill, where a sign-in returns. */
export interface SigninOptions {
  /** The level of each way's heading: 2 on a page about signing in, 3 under a page's own "I already have a handle". */
  level?: 2 | 3;
  /** The page to come back to once signed in, when it is not the address's `?next=` (a page that asks to sign in). */
  next?: string;
}

/**
 * The one sign-in form of every page that signs a person in (/signin, /account, /join, the OAuth sign-in before
 * consent, the claim page, the pages that need a signed-in person): every way in, each a form of its own. The handle
 * and password come first, in a form whose first button signs in with the password, so Enter in the password field
 * does that; the same handle asks for a one-time code in the handle's inbox (or by text message) with the buttons
 * after it. Then a passkey, a link by e-mail when the server sends e-mail, and the identity provider when one is set.
 * While a code waits for this browser, its form comes first. Every form carries the flow and the return path, so a
 * refused step shows the same page again and a sign-in ends where it began (pages.ts renderFlow).
 */
export async function signinBlock(c: WebContext, flow: Flow, handle?: string, o: SigninOptions = {}): Promise<Markup> {
  const h = (text: string) => (o.level === 3 ? html`<h3>${text}</h3>` : html`<h2>${text}</h2>`);
  const next = o.next ? returnPath(o.next) : nextOf(c);
  const nextInput = next ? html`<input type="hidden" name="next" value="${next}">` : "";
  // The return path (context.ts returnPath) rides along with the flow, through every form to the end.
  const flowField = html`<input type="hidden" name="flow" value="${flow}">${nextInput}`;
  const csrf = c.session.csrfToken;
  const waiting = await pendingCode(c.tx, c.now, c.session.sessionHash);
  const decoy = waiting ? null : readDecoy(c);
  // Offered whenever a sender is configured, whether or not the handle typed has a phone: the page never tells.
  const phoneButton = c.svc.config.smsWebhook
    ? html`<button type="submit" formaction="/account/signin/code" formnovalidate name="channel" value="sms" class="secondary">Send a code to my phone</button>`
    : "";
  const codeButtons = (label: string) =>
    html`<div class="row"><button type="submit" formaction="/account/signin/code" formnovalidate class="secondary">${label}</button>${phoneButton}</div>`;
  const handleField = field("handle", "Your handle", {
    id: "signin-handle",
    required: true,
    autocomplete: "username",
    maxlength: 32,
    hint: "Without the @, e.g. alice",
    // What was typed into this very form when it comes back refused (a sign-in form carries its flow).
    value: (c.form.has("flow") ? c.form.get("handle") : null) ?? handle,
  });
  // One form for the ways that start from the handle: its first button (the default, which Enter presses) signs in
  // with the password; the others ask for a code and need no password (formnovalidate).
  const handleWays = (codeLabel: string) => html`<form method="post" action="/signin/password">
<input type="hidden" name="csrf" value="${csrf}">${flowField}
${handleField}
${field("password", "Password", { id: "signin-password", type: "password", required: true, maxlength: 256, autocomplete: "current-password" })}
<button type="submit">Sign in</button>
<p class="muted">No password? We can leave a one-time code in your handle's inbox, which your agent can read to you${c.svc.config.smsWebhook ? ", or send it to the phone verified on your settings page" : ""}.</p>
${codeButtons(codeLabel)}
</form>`;
  const passkey = html`${h("With a passkey")}
<form method="post" action="/signin/passkey">
<input type="hidden" name="csrf" value="${csrf}">${flowField}
<input type="hidden" name="credential" value=""><p class="muted" role="status" data-passkey-status></p>
<button type="submit" data-passkey="signin" class="secondary">Sign in with a passkey</button>
</form>`;
  const email = c.svc.config.smtpUrl ? emailWays(c, h, flowField) : "";
  const provider = c.svc.config.oidc
    ? html`${h("With your identity provider")}<p><a href="${withNext(`/account/oidc/start?flow=${flow}`, next)}">Sign in with your identity provider</a></p>`
    : "";
  if (waiting || decoy) {
    const who = waiting ? ((await agentById(c.tx, waiting.agentId))?.handle ?? "") : decoy!.handle;
    const where =
      (waiting?.channel ?? decoy!.channel) === "sms"
        ? html`<p>If <strong>@${who}</strong> has a verified phone, we sent a one-time code to it by text message. Type it here.</p>`
        : html`<p>We left a one-time code in the inbox of <strong>@${who}</strong>. Ask your agent for it and type it here.</p>`;
    return html`${h("With the code we sent")}${where}
${form("/account/signin/verify", csrf, html`${flowField}${field("code", "One-time code", { required: true, autocomplete: "one-time-code", maxlength: 12, hint: "8 digits; dashes and spaces are ignored" })}`, "Continue")}
${h("Or with your handle and password")}
${handleWays("Send a new code")}
${passkey}${email}${provider}`;
  }
  return html`${h("With your handle and password")}
${handleWays("Send me a code")}
${passkey}${email}${provider}`;
}

/** The e-mail ways: a link that signs in, and one that resets a forgotten password (postEmailSignin). */
function emailWays(c: WebContext, h: (text: string) => Markup, flowField: Markup): Markup {
  const asked = (id: string) =>
    field("email", "Your e-mail address or handle", {
      id,
      required: true,
      autocomplete: "email",
      maxlength: 254,
      hint: "The address you confirmed on your settings page",
    });
  return html`${h("With a link by e-mail")}
<p>If you confirmed an e-mail address on your settings page, we send a link there that signs you in.</p>
${form("/signin/email", c.session.csrfToken, html`${flowField}<input type="hidden" name="purpose" value="signin">${asked("email-signin")}`, "E-mail me a link", { secondary: true })}
<details><summary>Forgot your password?</summary>
${form("/signin/email", c.session.csrfToken, html`${flowField}<input type="hidden" name="purpose" value="reset">${asked("email-reset")}`, "E-mail me a reset link", { secondary: true })}</details>`;
}

async function purposeOf(c: WebContext, flow: Flow): Promise<Purpose | null> {
  // The group pages are part of the account: the same sign-in, returning to /groups.
  if (flow === "account" || flow === "groups") return { kind: "account" };
  if (flow === "authorize") return c.session.oauthRequest ? { kind: "authorize", clientName: c.session.oauthRequest.client_name ?? "" } : null;
  const join = c.session.joinSessionId ? await joinById(c.tx, c.session.joinSessionId) : undefined;
  return join ? { kind: "join", clientName: join.clientName } : null;
}

/** The flow a sign-in form came from; a form of /signin sent without one (an older page) signs in to the account. */
export const sentFlow = (c: WebContext): Flow => {
  const flow = c.form.get("flow");
  return isFlow(flow) ? flow : "account";
};

function flowOf(c: WebContext): Flow {
  const flow = c.form.get("flow");
  if (!isFlow(flow)) throw new AppError("VALIDATION_ERROR", "This form is missing where it came from; reload the page.");
  return flow;
}

export async function postSendCode(c: WebContext, render: RenderFlow, address: string): Promise<Response> {
  const flow = flowOf(c);
  const purpose = await purposeOf(c, flow);
  if (!purpose) return render(c, flow, { error: "Nothing is waiting for a sign-in here any more; start again.", status: 400 });
  const handle = (c.form.get("handle") ?? "").trim().replace(/^@/, "").toLowerCase();
  if (!HANDLE_PATTERN.test(handle)) return render(c, flow, { error: "That is not a handle: 3-32 characters of a-z, 0-9, _ and -.", status: 400 });
  const webhook = c.svc.config.smsWebhook;
  const channel = webhook && c.form.get("channel") === "sms" ? "sms" : "inbox";
  try {
    // Every ask for a text counts against the address, whatever the handle, so a refusal tells nothing about it.
    if (channel === "sms") await chargeSmsAsk(c.tx, c.now, address);
    // A handle no agent has is answered like one that exists: the code form, a code no one has (never "no such handle");
    // so is a disabled one, which no code may sign in.
    const agent = await agentByHandle(c.tx, handle);
    if (!agent || agent.disabledAt) {
      const expiresAt = await decoyCode(c.tx, c.now, c.session.sessionHash, handle);
      c.cookies.push(signinCookie(c, { handle, channel, expiresAt, attempts: 0 }, "decoy"));
      return seeOther(withNext(FLOWS[flow], nextOf(c)));
    }
    if (channel === "sms") {
      // The handle exists (checked above), so a code is stored whether or not it has a phone.
      const sent = (await sendSigninCodeBySms(c.tx, c.now, c.session.sessionHash, handle, c.svc.config.smsPerHour ?? DEFAULTS.smsPerHour))!;
      const sms = sent.sms;
      // Sent after the commit and not waited for: the answer takes as long with a phone as without one.
      if (sms)
        c.afterCommit = async () => {
          sendSms(webhook!, sms.to, sms.text).catch((err) => console.error("SMS sign-in code not sent:", err instanceof Error ? err.message : err));
          return undefined;
        };
    } else {
      await sendSigninCode(c.tx, c.now, c.session.sessionHash, handle, purpose);
    }
    // The very cookie a decoy gets (the same fields, the same lifetime), told apart only by its signature, which the
    // browser cannot check: it also ends any decoy this browser had.
    c.cookies.push(signinCookie(c, { handle, channel, expiresAt: later(c.now, SIGNIN_CODE_TTL_MS), attempts: 0 }, "code"));
  } catch (err) {
    if (err instanceof AppError && err.code === "RATE_LIMITED") return render(c, flow, { error: err.message, status: 429 });
    throw err;
  }
  return seeOther(withNext(FLOWS[flow], nextOf(c)));
}

export async function postVerifyCode(c: WebContext, render: RenderFlow): Promise<Response> {
  const flow = flowOf(c);
  const decoy = readDecoy(c);
  const result: Verification = decoy ? countTry(c, decoy, "decoy") : await verifySigninCode(c.tx, c.now, c.session.sessionHash, c.form.get("code") ?? "");
  // A wrong try at a real code changes the cookie as a try at a decoy does, so no answer tells the two apart.
  const real = decoy ? null : readSigninCookie(c, "code");
  if (real && !result.ok && result.reason === "wrong") countTry(c, real, "code");
  if (!result.ok) {
    c.audit({ event: "signin_failed", method: "code", reason: result.reason === "wrong" ? "wrong_code" : "no_code" });
    const error =
      result.reason === "wrong" && result.attemptsLeft > 0
        ? `That code is not right. ${result.attemptsLeft} ${result.attemptsLeft === 1 ? "try" : "tries"} left.`
        : "No code is waiting any more (it expired, or had too many wrong tries). Ask for a new one.";
    return render(c, flow, { error, status: 400 });
  }
  await signInAs(c, result.agentId, { parentClientId: result.readBy }, "code");
  return seeOther(nextOf(c) ?? FLOWS[flow]);
}

/**
 * The "I am new here" fields, shared by the join page and the OAuth sign-in page. Their ids differ from the
 * sign-in form's (which also has a handle field) so each label points at its own input. What the human typed is
 * kept when the page comes back with an error.
 */
export function newHandleFields(c: WebContext, prefill: { handle?: string | null; displayName?: string | null } = {}): Markup {
  const typed = (name: string) => c.form.get(name) ?? undefined;
  return html`${field("handle", "Handle", { id: "new-handle", required: true, value: typed("handle") ?? prefill.handle, maxlength: 32, pattern: "[a-z0-9][a-z0-9_\\-]{2,31}", autocomplete: "username", hint: "3-32 characters: a-z, 0-9, _ and -. It can never change." })}
${field("display_name", "Display name", { id: "new-display-name", required: true, value: typed("display_name") ?? prefill.displayName, maxlength: 80, autocomplete: "name" })}
${field("description", "About you (optional)", { id: "new-description", value: typed("description"), maxlength: 500, multiline: true })}
${c.svc.config.inviteOnly ? field("platform_invite_code", "Invite code for this server", { id: "new-invite-code", required: true, maxlength: 200 }) : ""}`;
}

/**
 * Creates the handle the "I am new here" form describes (the rules of register_agent) and signs the browser in as
 * it. Returns the new agent's id, or what to tell the human when the form is not acceptable.
 */
export async function createHandleFromForm(c: WebContext): Promise<{ agentId: string } | Messages> {
  const handle = Handle.safeParse((c.form.get("handle") ?? "").trim().replace(/^@/, "").toLowerCase());
  const displayName = DisplayName.safeParse((c.form.get("display_name") ?? "").trim());
  const description = Description.safeParse((c.form.get("description") ?? "").trim());
  if (!handle.success) return { error: "The handle must be 3-32 characters of a-z, 0-9, _ and -, starting with a letter or digit.", status: 400 };
  if (!displayName.success)
    return { error: "The display name must be 1-80 characters, something visible, without control or invisible characters.", status: 400 };
  if (!description.success) return { error: "The description must be at most 500 characters.", status: 400 };
  if (isReservedHandle(handle.data, c.svc.config.reservedHandles)) return { error: "That handle is reserved; choose another.", status: 409 };
  if (await handleTaken(c.tx, handle.data)) return { error: "That handle is taken; choose another.", status: 409 };
  if (c.svc.config.inviteOnly) await consumePlatformInvite(c.tx, c.now, c.form.get("platform_invite_code") ?? undefined);
  const agent = await createAgent(
    c.tx,
    c.now,
    { handle: handle.data, display_name: displayName.data, description: description.data || null },
    c.svc.config.reservedHandles,
  );
  c.audit({ event: "signup", method: "web", handle: agent.handle, agent_id: agent.agentId });
  await signInAs(c, agent.agentId, { parentClientId: null }, "signup");
  return { agentId: agent.agentId };
}

/**
 * Signs the browser in under a fresh cookie; a provider login waiting for a handle is linked to it now. The session
 * remembers the provider login that vouched for this agent (`login`, or the one just linked), which joining two
 * handles needs.
 */
export async function signInAs(c: WebContext, agentId: string, origin: Origin, method: string, login: OidcIdentity | null = null): Promise<void> {
  const pendingIdentity = c.session.oidcIdentity;
  const { session, token } = await signIn(c.tx, c.req, c.session, agentId, "full", origin, c.now);
  c.session = session;
  c.cookies.push(sessionCookie(token, session.expiresAt, c.secure, c.now));
  // Linked in this browser: tied to the client it was signed in through, if any (a login chosen by whoever held it).
  // As factorOrigin would read it back: the client just made descends from origin's, if any.
  if (pendingIdentity) await linkIdentity(c.tx, pendingIdentity, agentId, origin.parentClientId ? session.clientId : null, c.now);
  const proved = login ?? pendingIdentity;
  if (proved) c.session = await updateSession(c.tx, c.session, { oidcIdentity: null, providerLogin: proved });
  c.audit({ event: "signin", method, agent_id: agentId, client_id: session.clientId ?? undefined });
}

/**
 * Forgets who is signed in (under a fresh cookie) but keeps a join or authorization in progress. The browser drops
 * this site's cache and storage, and with them every page its service worker kept for reading offline (webapp.ts):
 * on a shared device the next person sees none of them.
 */
export async function postSignOut(c: WebContext): Promise<Response> {
  const { session, token } = await signOut(c.tx, c.session, c.now);
  c.session = session;
  c.cookies.push(sessionCookie(token, session.expiresAt, c.secure, c.now));
  const flow = c.form.get("flow");
  return seeOther(isFlow(flow) ? FLOWS[flow] : "/account", CLEAR_SITE_DATA);
}

/** The provider's answer checked against this browser's pending sign-in (state), which is used up either way. */
export function checkCallback(session: WebSession | null, url: URL): { flow: OidcFlow; code: string } | { error: string } {
  const pending = session?.oidcFlow as OidcFlow | null | undefined;
  if (!pending || !constantTimeEqual(url.searchParams.get("state") ?? "", pending.state))
    return { error: "This sign-in did not start in this browser, or it was already used. Start again." };
  if (url.searchParams.get("error")) return { error: "The identity provider did not sign you in." };
  const code = url.searchParams.get("code");
  if (!code) return { error: "The identity provider sent no code. Start again." };
  return { flow: pending, code };
}

export async function exchangeAtProvider(svc: Services, flow: OidcFlow, code: string, now: Date): Promise<OidcIdentity | { error: string }> {
  try {
    return await finishOidc(svc.config.oidc!, svc.config.baseUrl, flow, code, now);
  } catch (err) {
    console.error("OpenID Connect sign-in failed:", err instanceof Error ? err.message : err);
    return { error: "The identity provider's answer could not be verified. Start again." };
  }
}

/**
 * After the provider vouched for a login: sign in as its linked handle; or link it to the handle already signed in;
 * or keep it in the session until the human proves or creates a handle.
 */
export async function applyIdentity(c: WebContext, identity: OidcIdentity): Promise<void> {
  // Every way on writes; the callback's page starts in a read transaction (a write statement there fails inside the
  // query builder, where it would not be taken for NeedsWrite: linking a login while signed in answered 500).
  requireWrite(c.tx);
  const linked = await agentForIdentity(c.tx, identity);
  if (linked) {
    c.session = await updateSession(c.tx, c.session, { oidcIdentity: null });
    // A login linked through a client signs in a browser obtained through it, which ends with it.
    await signInAs(c, linked.agentId, { parentClientId: linked.setThrough }, "provider", identity);
  } else if (signedIn(c.session) && mayWrite(c.session)) {
    await linkIdentity(c.tx, identity, c.session.agentId, await factorOrigin(c.tx, c.session), c.now);
    c.session = await updateSession(c.tx, c.session, { providerLogin: identity });
  } else {
    c.session = await updateSession(c.tx, c.session, { oidcIdentity: identity });
  }
}

/**
 * The code a browser waits for after asking for a handle no agent has: kept in a cookie signed with the server's form
 * key and bound to the session, so the pages answer exactly as for a real code (its form, its wrong tries, its end)
 * and never tell whether the handle exists. No code is ever right. A real code's browser gets the same cookie signed
 * as "code" (the database holds that code; the cookie only makes the answers alike): only a "decoy" one is a decoy.
 */
interface Decoy {
  handle: string;
  channel: "inbox" | "sms";
  expiresAt: string;
  attempts: number;
}
type CookieKind = "decoy" | "code";
const DECOY_COOKIE = "svc_signin";

function signCookie(c: WebContext, payload: string, kind: CookieKind): string {
  return createHmac("sha256", c.svc.formKey).update(`${c.session.sessionHash}|${kind}|${payload}`).digest("base64url");
}

/** The Set-Cookie of a decoy or a real code's twin, or (null) the one that ends it. */
function signinCookie(c: WebContext, d: Decoy | null, kind: CookieKind): string {
  const flags = `Path=/; HttpOnly; SameSite=Lax${c.secure ? "; Secure" : ""}`;
  if (!d) return `${DECOY_COOKIE}=; ${flags}; Max-Age=0`;
  const payload = Buffer.from(JSON.stringify(d)).toString("base64url");
  const maxAge = Math.max(0, Math.floor((Date.parse(d.expiresAt) - c.now.getTime()) / 1000));
  return `${DECOY_COOKIE}=${payload}.${signCookie(c, payload, kind)}; ${flags}; Max-Age=${maxAge}`;
}

function readSigninCookie(c: WebContext, kind: CookieKind): Decoy | null {
  // What this very answer sets (a try just counted, a decoy just ended) wins over what the browser sent.
  const set = c.cookies.findLast((k) => k.startsWith(`${DECOY_COOKIE}=`));
  const value = set ? set.slice(DECOY_COOKIE.length + 1).split(";")[0]! : (readCookie(c.req, DECOY_COOKIE) ?? "");
  const [payload, mac] = value.split(".");
  if (!payload || !mac || !constantTimeEqual(mac, signCookie(c, payload, kind))) return null;
  const d = JSON.parse(Buffer.from(payload, "base64url").toString()) as Decoy;
  return d.expiresAt > iso(c.now) && d.attempts < MAX_ATTEMPTS ? d : null;
}

const readDecoy = (c: WebContext) => readSigninCookie(c, "decoy");

/** A wrong code counted down in the cookie: a decoy's every try (no code is right), a real code's wrong ones alike. */
function countTry(c: WebContext, d: Decoy, kind: CookieKind): Verification {
  const attempts = d.attempts + 1;
  c.cookies.push(signinCookie(c, attempts < MAX_ATTEMPTS ? { ...d, attempts } : null, kind));
  return { ok: false, reason: "wrong", attemptsLeft: MAX_ATTEMPTS - attempts };
}
