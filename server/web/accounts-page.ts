// Accounts for people: sign up with a handle and a password or a passkey, sign in with either (or the code in the
// agent's inbox, or the identity provider), and on /account add passkeys, set the password, sign out everywhere.
// An operator's reset link (svc users reset-link) signs a person in once. A password sign-in answers the same,
// with the same work, whether or not the handle exists.
import { and, eq, isNull } from "drizzle-orm";
import { clients } from "../../db/schema/index.ts";
import { checkAuthentication, checkRegistration, passkeysOf, registrationOptions, authenticationOptions, savePasskey } from "../auth/passkeys.ts";
import { GUESSES_PER_ADDRESS, GUESSES_PER_HANDLE, hasPassword, MIN_PASSWORD, passwordProblem, setPassword, verifyPassword } from "../auth/passwords.ts";
import { checkAttempts, recordAttempt } from "../domain/attempts.ts";
import { consumeResetLink, resetLinkUsable } from "../auth/reset-links.ts";
import { endClient } from "../auth/credentials.ts";
import { MINUTE } from "../clock.ts";
import { isReservedHandle } from "../contract/handles.ts";
import { DisplayName, HANDLE_PATTERN, plainText } from "../contract/wire.ts";
import { agentByHandle, agentById, type AgentRow } from "../domain/agents.ts";
import { handleTaken } from "../domain/join.ts";
import { AppError } from "../errors.ts";
import { errorPage, formatTime, nextField, nextOf, withNext, type Messages, type WebContext } from "./context.ts";
import { alert, field, form, html, notice, page, seeOther, type Markup } from "./html.ts";
import passkeyScript from "./passkey.js" with { type: "text" };
import { browserName, mayWrite, sessionCookie, signedIn, signOut, updateSession } from "./session.ts";
import { createHandleFromForm, signInAs, signinBlock } from "./signin.ts";

const SCRIPTS = ["/assets/passkey.js"];
// Setting a new password without the current one needs a sign-in this recent (a reset link gives one).
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
 * Whether the password is the agent's (agentId null: no such handle, which costs the same work). The guess limits are
 * checked first (RATE_LIMITED, which says nothing about the handle), and a wrong guess counts against both.
 */
async function guessPassword(c: WebContext, agentId: string | null, handle: string, address: string, password: string): Promise<boolean> {
  const keys = [`password:handle:${handle}`, `password:address:${address}`] as const;
  await checkAttempts(c.tx, c.now, keys[0], GUESSES_PER_HANDLE);
  await checkAttempts(c.tx, c.now, keys[1], GUESSES_PER_ADDRESS);
  if (await verifyPassword(c.tx, agentId, password)) return true;
  await recordAttempt(c.tx, c.now, keys[0], GUESSES_PER_HANDLE);
  await recordAttempt(c.tx, c.now, keys[1], GUESSES_PER_ADDRESS);
  return false;
}

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
<h2>With a passkey</h2>
<p>Your device (or password manager) keeps the key; you unlock it with your fingerprint, face or screen lock.</p>
${credentialField}${passkeyStatus}
<button type="submit" name="method" value="passkey" data-passkey="signup">Create account with a passkey</button>
<h2>Or with a password</h2>
${field("password", "Password", { type: "password", autocomplete: "new-password", maxlength: 256, hint: `At least ${MIN_PASSWORD} characters; a few unrelated words make a good one. Very common passwords are refused.` })}
<button type="submit" name="method" value="password" class="secondary">Create account with a password</button>
</form>
<p>Have an account? <a href="${withNext("/signin", nextOf(c))}">Sign in</a>.</p>`,
    { status: m.status, scripts: SCRIPTS },
  );
}

/** POST /signup: the handle is made only once the password is acceptable or the passkey checks out. */
export async function postSignup(c: WebContext): Promise<Response> {
  const method = c.form.get("method");
  if (method === "passkey") {
    const challenge = c.session.webauthnChallenge;
    c.session = await updateSession(c.tx, c.session, { webauthnChallenge: null });
    const key = await checkRegistration(c.base, c.now, challenge, "signup", c.form.get("credential") ?? "");
    if (!key)
      return renderSignup(c, {
        error: c.form.get("credential") ? NO_PASSKEY : "A passkey needs JavaScript in this browser; create the account with a password instead.",
        status: 400,
      });
    // The passkey was made naming this handle; it may not be used for another.
    if (challenge?.handle !== normaliseHandle(c.form.get("handle")))
      return renderSignup(c, { error: "The handle changed after the passkey was made; try again.", status: 400 });
    const made = await createHandleFromForm(c);
    if (!("agentId" in made)) return renderSignup(c, made);
    await savePasskey(c.tx, made.agentId, key, browserName(c.req).replace(" (web)", ""), c.now);
    return seeOther(nextOf(c) ?? "/account");
  }
  const password = c.form.get("password") ?? "";
  const problem = passwordProblem(password);
  if (problem) return renderSignup(c, { error: problem, status: 400 });
  const made = await createHandleFromForm(c);
  if (!("agentId" in made)) return renderSignup(c, made);
  await setPassword(c.tx, made.agentId, password, c.now);
  return seeOther(nextOf(c) ?? "/account");
}

/** GET /signin */
export async function renderSignin(c: WebContext, m: Messages = {}): Promise<Response> {
  return page(
    "Sign in",
    html`${alert(m.error)}${notice(m.info)}
${signedIn(c.session) ? html`<p class="notice" role="status">This browser is signed in already: <a href="/account">your account</a>.</p>` : ""}
<h2>With a passkey</h2>
<form method="post" action="/signin/passkey">
<input type="hidden" name="csrf" value="${c.session.csrfToken}">${nextField(c)}
${credentialField}${passkeyStatus}
<button type="submit" data-passkey="signin">Sign in with a passkey</button>
</form>
<h2>With a password</h2>
${form(
  "/signin/password",
  c.session.csrfToken,
  html`${nextField(c)}${field("handle", "Handle", { id: "signin-handle", required: true, value: typed(c, "handle"), maxlength: 32, autocomplete: "username", hint: "Without the @, e.g. alice" })}
${field("password", "Password", { id: "signin-password", type: "password", required: true, maxlength: 256, autocomplete: "current-password" })}`,
  "Sign in",
)}
<h2>With a code in your agent's inbox</h2>
${await signinBlock(c, "account")}
<p>New here? <a href="${withNext("/signup", nextOf(c))}">Create an account</a>.</p>`,
    { status: m.status, scripts: SCRIPTS },
  );
}

/** POST /signin/password */
export async function postSignInPassword(c: WebContext, address: string): Promise<Response> {
  const handle = normaliseHandle(c.form.get("handle"));
  const agent = HANDLE_PATTERN.test(handle) ? await agentByHandle(c.tx, handle) : undefined;
  let ok: boolean;
  try {
    ok = await guessPassword(c, agent?.agentId ?? null, handle, address, c.form.get("password") ?? "");
  } catch (err) {
    if (!(err instanceof AppError && err.code === "RATE_LIMITED")) throw err;
    const minutes = Math.max(1, Math.ceil((err.retryAfter ?? 60) / 60));
    const res = await renderSignin(c, {
      error: `Too many wrong passwords for this handle or from your address. Wait ${minutes} minute${minutes === 1 ? "" : "s"}, or sign in another way.`,
      status: 429,
    });
    res.headers.set("Retry-After", String(err.retryAfter ?? 60));
    return res;
  }
  if (!ok || !agent) return renderSignin(c, { error: WRONG, status: 401 });
  await signInAs(c, agent.agentId, { parentClientId: null });
  return seeOther(nextOf(c) ?? "/account");
}

/** POST /signin/passkey */
export async function postSignInPasskey(c: WebContext): Promise<Response> {
  const challenge = c.session.webauthnChallenge;
  c.session = await updateSession(c.tx, c.session, { webauthnChallenge: null });
  const agentId = await checkAuthentication(c.tx, c.base, c.now, challenge, c.form.get("credential") ?? "");
  if (!agentId) return renderSignin(c, { error: NO_PASSKEY, status: 401 });
  await signInAs(c, agentId, { parentClientId: null });
  return seeOther(nextOf(c) ?? "/account");
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
  const withPassword = await hasPassword(c.tx, me.agentId);
  const fresh = await freshSignIn(c);
  return html`<h2 id="sign-in">How you sign in</h2>
<h3>Passkeys</h3>
${
  keys.length
    ? html`<ul>${keys.map((k) => html`<li><strong>${k.name}</strong>, added ${formatTime(k.createdAt)}, last used ${formatTime(k.lastUsedAt)}</li>`)}</ul>`
    : html`<p>No passkey yet.</p>`
}
<form method="post" action="/account/passkeys">
<input type="hidden" name="csrf" value="${c.session.csrfToken}">
${field("name", "Name for the new passkey", { id: "passkey-name", maxlength: 40, hint: "Optional, e.g. the device that keeps it" })}
${credentialField}${passkeyStatus}
<button type="submit" data-passkey="add">Add a passkey</button>
</form>
<h3>Password</h3>
${form(
  "/account/password",
  c.session.csrfToken,
  html`${withPassword && !fresh ? field("current", "Current password", { id: "current-password", type: "password", required: true, maxlength: 256, autocomplete: "current-password" }) : ""}
${field("password", withPassword ? "New password" : "Password", { id: "new-password", type: "password", required: true, maxlength: 256, autocomplete: "new-password", hint: `At least ${MIN_PASSWORD} characters. Very common passwords are refused.` })}`,
  withPassword ? "Change password" : "Set password",
)}
<h3>Sign out everywhere</h3>
${form("/account/signout-everywhere", c.session.csrfToken, html``, "Sign out every browser", { secondary: true })}
<p class="muted">Ends every browser signed in as @${me.handle}, this one too. API keys and apps connected through OAuth keep working; disconnect them above.</p>`;
}

/** Whether this browser signed in within FRESH_MS (its client is that new). */
async function freshSignIn(c: WebContext): Promise<boolean> {
  if (!c.session.clientId) return false;
  const row = await c.tx.select({ at: clients.createdAt }).from(clients).where(eq(clients.clientId, c.session.clientId)).get();
  return row !== undefined && c.now.getTime() - Date.parse(row.at) < FRESH_MS;
}

type RenderAccount = (c: WebContext, m: Messages) => Promise<Response>;

/** POST /account/passkeys */
export async function postAddPasskey(c: WebContext, render: RenderAccount): Promise<Response> {
  if (!signedIn(c.session)) return render(c, { error: "Sign in first.", status: 401 });
  const me = (await agentById(c.tx, c.session.agentId))!;
  const challenge = c.session.webauthnChallenge;
  c.session = await updateSession(c.tx, c.session, { webauthnChallenge: null });
  const key = await checkRegistration(c.base, c.now, challenge, "add", c.form.get("credential") ?? "");
  // The challenge names the handle it was made for: a browser signed in as someone else since may not use it.
  if (!key || challenge?.handle !== me.handle) return render(c, { error: NO_PASSKEY, status: 400 });
  const named = PasskeyName.safeParse((c.form.get("name") ?? "").trim());
  await savePasskey(c.tx, me.agentId, key, named.success ? named.data : browserName(c.req).replace(" (web)", ""), c.now);
  return render(c, { info: "Passkey added." });
}

/** POST /account/password: the current password is needed unless this browser signed in moments ago. */
export async function postSetPassword(c: WebContext, address: string, render: RenderAccount): Promise<Response> {
  if (!signedIn(c.session)) return render(c, { error: "Sign in first.", status: 401 });
  const me = (await agentById(c.tx, c.session.agentId))!;
  if ((await hasPassword(c.tx, me.agentId)) && !(await freshSignIn(c))) {
    let ok = false;
    try {
      ok = await guessPassword(c, me.agentId, me.handle, address, c.form.get("current") ?? "");
    } catch (err) {
      if (!(err instanceof AppError && err.code === "RATE_LIMITED")) throw err;
      return render(c, { error: "Too many wrong passwords; wait, or sign out and sign in again another way to set a new one.", status: 429 });
    }
    if (!ok) return render(c, { error: "The current password is not right.", status: 400 });
  }
  const password = c.form.get("password") ?? "";
  const problem = passwordProblem(password);
  if (problem) return render(c, { error: problem, status: 400 });
  await setPassword(c.tx, me.agentId, password, c.now);
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
  return seeOther("/signin");
}

const SPENT = "This link has expired or was already used. Ask the server's operator for a new one (svc users reset-link).";

/** GET /account/reset/{token}: looking does not use the link up (a link preview cannot spend it). */
export async function renderResetLink(c: WebContext, token: string): Promise<Response> {
  if (!(await resetLinkUsable(c.tx, token, c.now))) return errorPage("Link expired", SPENT, 410);
  return page(
    "Recover your account",
    html`<p>This link signs you in once; then set a new password or add a passkey.</p>
${form("/account/reset", c.session.csrfToken, html`<input type="hidden" name="token" value="${token}">`, "Sign me in")}`,
  );
}

/** POST /account/reset */
export async function postResetLink(c: WebContext): Promise<Response> {
  const agentId = await consumeResetLink(c.tx, c.form.get("token") ?? "", c.now);
  if (!agentId) return errorPage("Link expired", SPENT, 410);
  await signInAs(c, agentId, { parentClientId: null });
  return seeOther("/account#sign-in");
}
