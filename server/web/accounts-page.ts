// Accounts for people: sign up with a handle and a password or a passkey, sign in with either (or the code in the
// agent's inbox, or the identity provider), and on /account add passkeys, set the password, sign out everywhere.
// An operator's reset link (svc users reset-link) signs a person in once. A password sign-in answers the same,
// with the same work, whether or not the handle exists. Passwords are hashed and checked with no transaction open
// (slowForm in framework.ts): before, a short write reads the hash and counts the guess; after, a short write acts.
// A factor set in a browser whose sign-in descends from another client is tied to it (session.ts factorOrigin).
import { and, eq, isNull, sql } from "drizzle-orm";
import { scalar } from "../../db/client.ts";
import { clients, type WebauthnChallenge } from "../../db/schema/index.ts";
import {
  authenticationOptions,
  checkAssertion,
  checkRegistration,
  type NewPasskey,
  passkeyAnswering,
  passkeysOf,
  recordPasskeyUse,
  registrationOptions,
  savePasskey,
  type StoredPasskey,
} from "../auth/passkeys.ts";
import {
  GUESSES_PER_ADDRESS,
  GUESSES_PER_HANDLE,
  hashPassword,
  MIN_PASSWORD,
  passwordGuessKeys,
  passwordMatches,
  passwordOf,
  passwordProblem,
  storePassword,
} from "../auth/passwords.ts";
import { checkAttempts, forgetAttempt, recordAttempt } from "../domain/attempts.ts";
import { consumeResetLink, resetLinkUsable } from "../auth/reset-links.ts";
import { endClient } from "../auth/credentials.ts";
import { MINUTE } from "../clock.ts";
import { isReservedHandle } from "../contract/handles.ts";
import { DisplayName, HANDLE_PATTERN, plainText } from "../contract/wire.ts";
import { agentByHandle, agentById, type AgentRow } from "../domain/agents.ts";
import { handleTaken } from "../domain/join.ts";
import { AppError } from "../errors.ts";
import { errorPage, FLOWS, formatTime, nextField, nextOf, withNext, type Messages, type WebContext } from "./context.ts";
import { alert, field, form, html, notice, page, seeOther, type Markup } from "./html.ts";
import passkeyScript from "./passkey.js" with { type: "text" };
import { browserName, factorOrigin, mayWrite, sessionCookie, signedIn, signInOf, signOut, updateSession } from "./session.ts";
import { CLEAR_SITE_DATA } from "./webapp.ts";
import { createHandleFromForm, sentFlow, signInAs, signinBlock, type RenderFlow } from "./signin.ts";

// Changing the password without the current one needs a sign-in this recent that descends from no client (a reset
// link, a passkey, the provider: a second factor), never one with a code an agent's key read.
export const FRESH_MS = 10 * MINUTE;
const PasskeyName = plainText(1, 40);
const WRONG = "The handle or the password is not right.";
const NO_PASSKEY = "The passkey could not be checked. Try again, or use another way to sign in.";

/** For `/`: what a browser without a session is offered. */
export const accountOffer = (): Markup => html`<p class="actions"><a href="/signup">Create an account</a> <a href="/signin">Sign in</a></p>`;

const normaliseHandle = (text: string | null) => (text ?? "").trim().replace(/^@/, "").toLowerCase().slice(0, 64);
const typed = (c: WebContext, name: string) => c.form.get(name) ?? undefined;
const credentialField = html`<input type="hidden" name="credential" value="">`;
const passkeyStatus = html`<p class="muted" role="status" data-passkey-status></p>`;

/**
 * Counts a password guess before it is checked (the check runs later, outside the transaction), so that guesses sent
 * at once cannot pass the limits together; RATE_LIMITED, which says nothing about the handle, once either is used up.
 * A guess found right is given back (forgiveGuess): the limits count wrong passwords.
 */
async function chargeGuess(c: WebContext, handle: string, address: string): Promise<void> {
  const [byHandle, byAddress] = passwordGuessKeys(handle, address);
  await checkAttempts(c.tx, c.now, byHandle, GUESSES_PER_HANDLE);
  await checkAttempts(c.tx, c.now, byAddress, GUESSES_PER_ADDRESS);
  await recordAttempt(c.tx, c.now, byHandle, GUESSES_PER_HANDLE);
  await recordAttempt(c.tx, c.now, byAddress, GUESSES_PER_ADDRESS);
}

async function forgiveGuess(c: WebContext, handle: string, address: string): Promise<void> {
  const [byHandle, byAddress] = passwordGuessKeys(handle, address);
  await forgetAttempt(c.tx, c.now, byHandle, GUESSES_PER_HANDLE);
  await forgetAttempt(c.tx, c.now, byAddress, GUESSES_PER_ADDRESS);
}

const minutesOf = (err: AppError) => {
  const minutes = Math.max(1, Math.ceil((err.retryAfter ?? 60) / 60));
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
};

/** GET /assets/passkey.js: the one script, for the pages that offer passkeys. */
export const servePasskeyScript = () =>
  new Response(passkeyScript, {
    headers: { "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff" },
  });

/** GET /signup */
export async function renderSignup(c: WebContext, m: Messages = {}): Promise<Response> {
  const invite = c.svc.config.inviteOnly
    ? field("platform_invite_code", "Invite code for this server", { required: true, maxlength: 200, value: typed(c, "platform_invite_code") })
    : "";
  return page(
    "Create an account",
    html`${alert(m.error)}${notice(m.info)}
${signedIn(c.session) ? html`<p class="notice" role="status">This browser is signed in already; creating an account signs it in as the new handle.</p>` : ""}
<form method="post" action="/signup">
<input type="hidden" name="csrf" value="${c.session.csrfToken}">${nextField(c)}
${field("handle", "Handle", { required: true, value: typed(c, "handle"), maxlength: 32, pattern: "[a-z0-9][a-z0-9_\\-]{2,31}", autocomplete: "username", hint: "3-32 characters: a-z, 0-9, _ and -. It can never change." })}
${field("display_name", "Display name", { required: true, value: typed(c, "display_name"), maxlength: 80, autocomplete: "name" })}
${invite}
<h2>With a password</h2>
${field("password", "Password", { type: "password", autocomplete: "new-password", maxlength: 256, hint: `At least ${MIN_PASSWORD} characters; a few unrelated words make a good one. Very common passwords are refused.` })}
<button type="submit" name="method" value="password">Create account with a password</button>
<h2>Or with a passkey</h2>
<p>Your device (or password manager) keeps the key; you unlock it with your fingerprint, face or screen lock.</p>
${credentialField}${passkeyStatus}
<button type="submit" name="method" value="passkey" data-passkey="signup" class="secondary">Create account with a passkey</button>
</form>
<p>Have an account? <a href="${withNext("/signin", nextOf(c))}">Sign in</a>.</p>`,
    { status: m.status },
  );
}

/** A passkey's answer to a ceremony, with the challenge it must answer (used up when the form was read). */
interface PasskeyAnswer {
  base: string;
  now: Date;
  challenge: WebauthnChallenge | null;
  answer: string;
}

/** The challenge this browser waits with, used up whatever the answer; what checking the answer needs (no database). */
async function takeChallenge(c: WebContext): Promise<PasskeyAnswer> {
  const challenge = c.session.webauthnChallenge;
  c.session = await updateSession(c.tx, c.session, { webauthnChallenge: null });
  return { base: c.base, now: c.now, challenge, answer: c.form.get("credential") ?? "" };
}

type NewAccount = ({ method: "passkey" } & PasskeyAnswer) | { method: "password"; password: string };

/**
 * POST /signup, first step: the passkey's challenge is used up, or the password checked; the passkey's answer is then
 * checked, or the password hashed, outside any transaction (signupWork) before postSignup makes the handle.
 */
export async function prepareSignup(c: WebContext): Promise<Response | NewAccount> {
  if (c.form.get("method") === "passkey") return { method: "passkey", ...(await takeChallenge(c)) };
  const password = c.form.get("password") ?? "";
  const problem = passwordProblem(password);
  if (problem) return renderSignup(c, { error: problem, status: 400 });
  return { method: "password", password };
}

export const signupWork = (p: NewAccount) =>
  p.method === "passkey" ? checkRegistration(p.base, p.now, p.challenge, "signup", p.answer) : hashPassword(p.password);

/** POST /signup, last step: the handle is made only once the password is acceptable or the passkey checks out. */
export async function postSignup(c: WebContext, p: NewAccount, made: NewPasskey | string | null): Promise<Response> {
  if (p.method === "passkey") {
    if (!made || typeof made === "string")
      return renderSignup(c, {
        error: p.answer ? NO_PASSKEY : "A passkey needs JavaScript in this browser; create the account with a password instead.",
        status: 400,
      });
    // The passkey was made naming this handle; it may not be used for another.
    if (p.challenge?.handle !== normaliseHandle(c.form.get("handle")))
      return renderSignup(c, { error: "The handle changed after the passkey was made; try again.", status: 400 });
  }
  const created = await createHandleFromForm(c);
  if (!("agentId" in created)) return renderSignup(c, created);
  // Made with the handle, in a browser that proved nothing else: tied to no client.
  if (typeof made === "string") await storePassword(c.tx, created.agentId, made, null, c.now);
  else await savePasskey(c.tx, created.agentId, made!, browserName(c.req).replace(" (web)", ""), null, c.now);
  // A new person starts on the dashboard, which says what to do first.
  return seeOther(nextOf(c) ?? "/");
}

/** GET /signin, and /account for a browser no one is signed in to: every way in (signin.ts signinBlock). */
export async function renderSignin(c: WebContext, m: Messages = {}): Promise<Response> {
  const next = nextOf(c);
  return page(
    "Sign in",
    html`${alert(m.error)}${notice(m.info)}
${signedIn(c.session) ? html`<p class="notice" role="status">This browser is signed in already: <a href="/account">your account</a>.</p>` : ""}
${next ? html`<p>Once you are signed in, you go back to the page you came from.</p>` : ""}
${await signinBlock(c, "account")}
<p>New here? <a href="${withNext("/signup", next)}">Create an account</a>.</p>`,
    { status: m.status },
  );
}

interface PasswordGuess {
  handle: string;
  agentId: string | null;
  password: string;
  /** The stored hash, undefined when the handle or its password does not exist (a dummy is checked instead). */
  hash: string | undefined;
  /** false for a disabled handle: even the right password is answered, and counted, as a wrong one. */
  usable: boolean;
}

/** A refused sign-in shows the page its form was on again (the flow's: /signin, /join, the OAuth sign-in...). */
const refused = (c: WebContext, render: RenderFlow, m: Messages) => render(c, sentFlow(c), m);

/** Where a sign-in ends: the page a link asked for, else the flow's (the account for /signin). */
const signedInTo = (c: WebContext) => seeOther(nextOf(c) ?? FLOWS[sentFlow(c)]);

/** POST /signin/password, first step: the guess is counted and the hash read; passwordMatches checks it outside. */
export async function prepareSignInPassword(c: WebContext, address: string, render: RenderFlow): Promise<Response | PasswordGuess> {
  const handle = normaliseHandle(c.form.get("handle"));
  const agent = HANDLE_PATTERN.test(handle) ? await agentByHandle(c.tx, handle) : undefined;
  try {
    await chargeGuess(c, handle, address);
  } catch (err) {
    if (!(err instanceof AppError && err.code === "RATE_LIMITED")) throw err;
    c.audit({ event: "signin_failed", method: "password", handle, reason: "rate_limited" });
    const res = await refused(c, render, {
      error: `Too many wrong passwords for this handle or from your address. Wait ${minutesOf(err)}, or sign in another way.`,
      status: 429,
    });
    res.headers.set("Retry-After", String(err.retryAfter ?? 60));
    return res;
  }
  const stored = agent ? await passwordOf(c.tx, agent.agentId) : undefined;
  return { handle, agentId: agent?.agentId ?? null, password: c.form.get("password") ?? "", hash: stored?.hash, usable: !agent?.disabledAt };
}

export const checkGuess = (g: PasswordGuess) => passwordMatches(g.hash, g.password);

/**
 * POST /signin/password, last step: signed in when the password matched the hash that is still stored. A password set
 * through a client signs in a browser obtained through that client, which ends with it.
 */
export async function postSignInPassword(c: WebContext, g: PasswordGuess, ok: boolean, address: string, render: RenderFlow): Promise<Response> {
  const stored = ok && g.agentId ? await passwordOf(c.tx, g.agentId) : undefined;
  // A disabled handle never confirms a password: right or wrong, the answer (and the guess counted) is the wrong one's.
  if (!stored || stored.hash !== g.hash || !g.usable) {
    c.audit({ event: "signin_failed", method: "password", handle: g.handle, reason: "wrong_password" });
    return refused(c, render, { error: WRONG, status: 401 });
  }
  await forgiveGuess(c, g.handle, address);
  await signInAs(c, g.agentId!, { parentClientId: stored.setThrough }, "password");
  return signedInTo(c);
}

type PasskeySignIn = PasskeyAnswer & { key: StoredPasskey | null };

/** POST /signin/passkey, first step: the challenge used up, the passkey the answer names read. */
export async function prepareSignInPasskey(c: WebContext): Promise<PasskeySignIn> {
  const taken = await takeChallenge(c);
  return { ...taken, key: await passkeyAnswering(c.tx, taken.answer) };
}

/** The answer's signature checked, outside any transaction: the passkey's new counter, or null. */
export const passkeyWork = async (p: PasskeySignIn) => (p.key ? checkAssertion(p.base, p.now, p.challenge, p.answer, p.key) : null);

/** POST /signin/passkey, last step. A passkey added through a client signs in a browser obtained through it, which ends with it. */
export async function postSignInPasskey(c: WebContext, p: PasskeySignIn, counter: number | null, render: RenderFlow): Promise<Response> {
  if (!p.key || counter === null || !(await recordPasskeyUse(c.tx, p.key, counter, c.now))) {
    c.audit({ event: "signin_failed", method: "passkey", agent_id: p.key?.agentId, reason: "passkey_not_accepted" });
    return refused(c, render, { error: NO_PASSKEY, status: 401 });
  }
  await signInAs(c, p.key.agentId, { parentClientId: p.key.setThroughClientId }, "passkey");
  return signedInTo(c);
}

const jsonAnswer = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", "Cache-Control": "no-store" } });

/** POST /passkeys/options (the script's fetch, CSRF token included): WebAuthn options, the challenge kept in the session. */
export async function postPasskeyOptions(c: WebContext): Promise<Response> {
  const purpose = c.form.get("purpose");
  if (purpose === "signin") {
    const { options, challenge } = await authenticationOptions(c.base, c.now);
    c.session = await updateSession(c.tx, c.session, { webauthnChallenge: challenge });
    return jsonAnswer({ options });
  }
  let who: { handle: string; displayName: string; agentId?: string };
  if (purpose === "add") {
    if (!signedIn(c.session) || !mayWrite(c.session)) return jsonAnswer({ error: "Sign in first." }, 401);
    const me = (await agentById(c.tx, c.session.agentId))!;
    who = { handle: me.handle, displayName: me.displayName, agentId: me.agentId };
  } else if (purpose === "signup") {
    const handle = normaliseHandle(c.form.get("handle"));
    const displayName = DisplayName.safeParse((c.form.get("display_name") ?? "").trim());
    if (!HANDLE_PATTERN.test(handle)) return jsonAnswer({ error: "Type a handle first: 3-32 characters of a-z, 0-9, _ and -." }, 400);
    if (!displayName.success) return jsonAnswer({ error: "Type a display name first." }, 400);
    if (isReservedHandle(handle, c.svc.config.reservedHandles)) return jsonAnswer({ error: "That handle is reserved; choose another." }, 409);
    if (await handleTaken(c.tx, handle)) return jsonAnswer({ error: "That handle is taken; choose another." }, 409);
    who = { handle, displayName: displayName.data };
  } else {
    return jsonAnswer({ error: "Unknown passkey step." }, 400);
  }
  const { options, challenge } = await registrationOptions(c.tx, c.base, c.now, who, purpose);
  c.session = await updateSession(c.tx, c.session, { webauthnChallenge: challenge });
  return jsonAnswer({ options });
}

/** The sign-in part of /account for a signed-in person: passkeys, the password, signing out everywhere. */
export async function signInSettings(c: WebContext, me: AgentRow): Promise<Markup> {
  const keys = await passkeysOf(c.tx, me.agentId);
  const password = await passwordOf(c.tx, me.agentId);
  const second = await secondFactor(c);
  const tied = async (setThrough: string | null) => {
    if (!setThrough) return "";
    const through = await tiedTo(c, setThrough);
    return html` <span class="muted">(set in a browser signed in through ${through}: it ends when that is disconnected)</span>`;
  };
  const listed: Markup[] = [];
  for (const k of keys)
    listed.push(html`<li><strong>${k.name}</strong>, added ${formatTime(k.createdAt)}, last used ${formatTime(k.lastUsedAt)}${await tied(k.setThrough)}</li>`);
  return html`<h2 id="sign-in">How you sign in</h2>
<h3>Passkeys</h3>
${listed.length ? html`<ul>${listed}</ul>` : html`<p>No passkey yet.</p>`}
<form method="post" action="/account/passkeys">
<input type="hidden" name="csrf" value="${c.session.csrfToken}">
${field("name", "Name for the new passkey", { id: "passkey-name", maxlength: 40, hint: "Optional, e.g. the device that keeps it" })}
${credentialField}${passkeyStatus}
<button type="submit" data-passkey="add">Add a passkey</button>
</form>
<h3>Password</h3>
${password ? html`<p>You have a password${await tied(password.setThrough)}.</p>` : ""}
${form(
  "/account/password",
  c.session.csrfToken,
  html`${password && !second ? field("current", "Current password", { id: "current-password", type: "password", required: true, maxlength: 256, autocomplete: "current-password" }) : ""}
${field("password", password ? "New password" : "Password", { id: "new-password", type: "password", required: true, maxlength: 256, autocomplete: "new-password", hint: `At least ${MIN_PASSWORD} characters. Very common passwords are refused.` })}`,
  password ? "Change password" : "Set password",
)}
<h3>Sign out everywhere</h3>
${form("/account/signout-everywhere", c.session.csrfToken, html``, "Sign out every browser", { secondary: true })}
<p class="muted">Ends every browser signed in as @${me.handle}, this one too. API keys and apps connected through OAuth keep working; disconnect them above.</p>`;
}

/** What a factor tied to the browser client `setThrough` ends with: the first client of the line it descends from. */
async function tiedTo(c: WebContext, setThrough: string): Promise<string> {
  const root = await scalar<string>(
    c.tx,
    sql`WITH RECURSIVE line(id, parent, name, depth) AS (
      SELECT client_id, parent_client_id, name, 0 FROM clients WHERE client_id = ${setThrough}
      UNION ALL SELECT c.client_id, c.parent_client_id, c.name, l.depth + 1 FROM clients c JOIN line l ON c.client_id = l.parent
    ) SELECT name FROM line ORDER BY depth DESC LIMIT 1`,
  );
  return root ?? "another client";
}

/**
 * Whether this browser's sign-in stands for a second factor: it is recent (FRESH_MS) and descends from no client (a
 * reset link, a passkey, the phone, the provider, the password itself, sign-up); a code an agent's key read never does.
 */
async function secondFactor(c: WebContext): Promise<boolean> {
  const signIn = await signInOf(c.tx, c.session);
  return signIn !== undefined && signIn.parentClientId === null && c.now.getTime() - Date.parse(signIn.at) < FRESH_MS;
}

type RenderAccount = (c: WebContext, m: Messages) => Promise<Response>;

type PasskeyToAdd = PasskeyAnswer & { agentId: string; handle: string };

/** POST /account/passkeys, first step: the challenge used up; checkRegistration checks the answer outside any transaction. */
export async function prepareAddPasskey(c: WebContext, render: RenderAccount): Promise<Response | PasskeyToAdd> {
  if (!signedIn(c.session)) return render(c, { error: "Sign in first.", status: 401 });
  const me = (await agentById(c.tx, c.session.agentId))!;
  return { ...(await takeChallenge(c)), agentId: me.agentId, handle: me.handle };
}

export const addPasskeyWork = (p: PasskeyToAdd) => checkRegistration(p.base, p.now, p.challenge, "add", p.answer);

/** POST /account/passkeys, last step: a passkey added in a browser obtained through a client is tied to it. */
export async function postAddPasskey(c: WebContext, p: PasskeyToAdd, key: NewPasskey | null, render: RenderAccount): Promise<Response> {
  if (!signedIn(c.session) || c.session.agentId !== p.agentId) return render(c, { error: "Sign in first.", status: 401 });
  // The challenge names the handle it was made for: a browser signed in as someone else since may not use it.
  if (!key || p.challenge?.handle !== p.handle) return render(c, { error: NO_PASSKEY, status: 400 });
  const named = PasskeyName.safeParse((c.form.get("name") ?? "").trim());
  const name = named.success ? named.data : browserName(c.req).replace(" (web)", "");
  await savePasskey(c.tx, p.agentId, key, name, await factorOrigin(c.tx, c.session), c.now);
  c.audit({ event: "passkey_added", agent_id: p.agentId, client_id: c.session.clientId ?? undefined });
  return render(c, { info: "Passkey added." });
}

interface NewPassword {
  agentId: string;
  handle: string;
  password: string;
  /** The hash stored when the form was read (undefined: none), which must still be stored when the new one is. */
  stored: { hash: string; setThrough: string | null } | undefined;
  /** The current password typed, when this browser must prove it (a guess, counted). */
  current: string | null;
  origin: string | null;
}

/**
 * POST /account/password, first step. Changing a password needs the current one, unless this browser's sign-in stands
 * for a second factor (secondFactor); setting the first one needs neither. The new password is hashed, and the current
 * one checked, outside any transaction (passwordWork); postSetPassword stores it.
 */
export async function prepareSetPassword(c: WebContext, address: string, render: RenderAccount): Promise<Response | NewPassword> {
  if (!signedIn(c.session)) return render(c, { error: "Sign in first.", status: 401 });
  const me = (await agentById(c.tx, c.session.agentId))!;
  const password = c.form.get("password") ?? "";
  const problem = passwordProblem(password);
  if (problem) return render(c, { error: problem, status: 400 });
  const stored = await passwordOf(c.tx, me.agentId);
  const needsCurrent = stored !== undefined && !(await secondFactor(c));
  if (needsCurrent) {
    try {
      await chargeGuess(c, me.handle, address);
    } catch (err) {
      if (!(err instanceof AppError && err.code === "RATE_LIMITED")) throw err;
      return render(c, {
        error: `Too many wrong passwords; wait ${minutesOf(err)}, or sign out and sign in again another way (a passkey, or a reset link from the server's operator) to set a new one.`,
        status: 429,
      });
    }
  }
  return {
    agentId: me.agentId,
    handle: me.handle,
    password,
    stored,
    current: needsCurrent ? (c.form.get("current") ?? "") : null,
    origin: await factorOrigin(c.tx, c.session),
  };
}

/** The slow part of a password change: the current password checked (when it must be), then the new one hashed. */
export async function passwordWork(p: NewPassword): Promise<string | null> {
  if (p.current !== null && !(await passwordMatches(p.stored?.hash, p.current))) return null;
  return hashPassword(p.password);
}

/**
 * POST /account/password, last step: the new hash is stored when the password is still the one the form was checked
 * against. It is tied to what the proof was tied to: the current password's client when it was typed (proving a
 * password no client set unties it), else this browser's (factorOrigin).
 */
export async function postSetPassword(c: WebContext, p: NewPassword, hash: string | null, address: string, render: RenderAccount): Promise<Response> {
  if (hash === null) return render(c, { error: "The current password is not right.", status: 400 });
  if (!signedIn(c.session) || c.session.agentId !== p.agentId) return render(c, { error: "Sign in first.", status: 401 });
  const now = await passwordOf(c.tx, p.agentId);
  if (now?.hash !== p.stored?.hash) return render(c, { error: "Your password was changed meanwhile; reload the page and try again.", status: 409 });
  if (p.current !== null) await forgiveGuess(c, p.handle, address);
  const setThrough = p.origin === null ? null : p.current !== null ? p.stored!.setThrough : p.origin;
  await storePassword(c.tx, p.agentId, hash, setThrough, c.now);
  c.audit({
    event: "password_changed",
    method: p.current !== null ? "current_password" : "fresh_sign_in",
    agent_id: p.agentId,
    client_id: c.session.clientId ?? undefined,
  });
  return render(c, { info: "Password saved." });
}

/** POST /account/signout-everywhere: every web client of the handle ends; keys and OAuth apps stay. */
export async function postSignOutEverywhere(c: WebContext): Promise<Response> {
  if (!signedIn(c.session)) return seeOther("/signin");
  const browsers = await c.tx
    .select({ id: clients.clientId })
    .from(clients)
    .where(and(eq(clients.agentId, c.session.agentId), eq(clients.kind, "web"), isNull(clients.revokedAt)));
  for (const b of browsers) await endClient(c.tx, b.id, c.now);
  const { session, token } = await signOut(c.tx, c.session, c.now);
  c.session = session;
  c.cookies.push(sessionCookie(token, session.expiresAt, c.secure, c.now));
  return seeOther("/signin", CLEAR_SITE_DATA);
}

const SPENT =
  "This link has expired or was already used. Ask for a new one on the sign-in page (by e-mail, if you confirmed an address), or ask the server's operator.";

/** GET /account/reset/{token}: looking does not use the link up (a link preview cannot spend it). */
export async function renderResetLink(c: WebContext): Promise<Response> {
  const token = c.params.rest ?? "";
  const link = await resetLinkUsable(c.tx, token, c.now);
  if (!link) return errorPage("Link expired", SPENT, 410);
  const signin = link.purpose === "signin";
  return page(
    signin ? "Sign in" : "Recover your account",
    html`<p>${signin ? "This link signs you in once." : "This link signs you in once; then set a new password or add a passkey."}</p>
${form("/account/reset", c.session.csrfToken, html`<input type="hidden" name="token" value="${token}">${nextField(c)}`, "Sign me in")}`,
  );
}

/**
 * POST /account/reset: an operator's link, or one sent by e-mail. A reset lands where the password is set; a sign-in
 * link on the page it was asked from (or the dashboard).
 */
export async function postResetLink(c: WebContext): Promise<Response> {
  const link = await consumeResetLink(c.tx, c.form.get("token") ?? "", c.now);
  if (!link) return errorPage("Link expired", SPENT, 410);
  await signInAs(c, link.agentId, { parentClientId: link.setThrough }, link.purpose === "signin" ? "email_link" : "reset_link");
  return seeOther(link.purpose === "signin" ? (nextOf(c) ?? "/") : "/account#sign-in");
}
