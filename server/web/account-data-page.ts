// A person's data on /account: "Download everything" (GET /account/export, the account export as one JSON file) and
// deleting the account (GET and POST /account/delete). Deleting needs the handle typed out and the person proved
// again: the current password, a passkey, or a sign-in moments ago (FRESH_MS, as setting a new password does). A
// browser signed in through a read-only credential may download but not delete. The password is checked in a read
// transaction (argon2 holds no writer); the deletion itself is one write transaction (domain/account-deletion.ts).
import { and, eq, isNull } from "drizzle-orm";
import { clients, passkeys, type WebauthnChallenge } from "../../db/schema/index.ts";
import type { Tx } from "../../db/client.ts";
import { checkAssertion, passkeyAnswering, recordPasskeyUse, type StoredPasskey } from "../auth/passkeys.ts";
import { GUESSES_PER_ADDRESS, GUESSES_PER_HANDLE, passwordGuessKeys, passwordMatches, passwordOf } from "../auth/passwords.ts";
import { deleteAccount, deletionPlan, type DeletionGroup, type DeletionReport } from "../domain/account-deletion.ts";
import { accountExportFilename, exportAccount } from "../domain/account-export.ts";
import { agentById } from "../domain/agents.ts";
import { checkAttempts, recordAttempt } from "../domain/attempts.ts";
import { AppError } from "../errors.ts";
import { FRESH_MS } from "./accounts-page.ts";
import { errorPage, type Messages, type WebContext } from "./context.ts";
import { alert, field, html, notice, page, type Markup } from "./html.ts";
import type { ActionContext } from "./framework.ts";
import { mayWrite, openSession, SESSION_COOKIE, signedIn, updateSession } from "./session.ts";
import { CLEAR_SITE_DATA } from "./webapp.ts";

const NO_PASSKEY = "The passkey could not be checked, or it is not one of yours. Try again, or use your password.";
const READ_ONLY =
  "This browser was signed in through a read-only credential, so it cannot delete the account. Sign out, then sign in with your password, a passkey or a code, and come back.";

const normaliseHandle = (text: string | null) => (text ?? "").trim().replace(/^@/, "").toLowerCase();

/** Whether the browser's client was made within FRESH_MS: its person signed in moments ago. */
async function signedInLately(tx: Tx, clientId: string, now: Date): Promise<boolean> {
  const row = await tx
    .select({ at: clients.createdAt })
    .from(clients)
    .where(and(eq(clients.clientId, clientId), isNull(clients.revokedAt)))
    .get();
  return row !== undefined && now.getTime() - Date.parse(row.at) < FRESH_MS;
}

const hasPasskey = async (tx: Tx, agentId: string) =>
  (await tx.select({ id: passkeys.credentialId }).from(passkeys).where(eq(passkeys.agentId, agentId)).get()) !== undefined;

const groupLine = (g: DeletionGroup) => html`<li>${g.kind === "direct" ? "A direct ledger" : html`<strong>${g.name}</strong>`}: your balance ${g.balance}</li>`;

/** GET /account/export: everything as one JSON file, read as it is now (no secret in it). */
export async function renderAccountExport(c: WebContext): Promise<Response> {
  if (!signedIn(c.session))
    return errorPage("Sign in first", "Sign in on your account page to download your data.", 401, html`<p><a href="/account">Your account</a></p>`);
  const me = (await agentById(c.tx, c.session.agentId))!;
  const doc = await exportAccount(c.tx, c.now, me);
  return new Response(`${JSON.stringify(doc, null, 2)}\n`, {
    headers: {
      "Content-Type": "application/json; charset=utf-8",
      "Content-Disposition": `attachment; filename="${accountExportFilename(me.handle, c.now)}"`,
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
    },
  });
}

/** The two links /account shows in its own section. */
export const accountDataSection = (): Markup => html`<h2>Your data</h2>
<p><a href="/account/export" download>Download everything</a>: your profile, apps, contacts, inbox, mail, plans and the ledgers of your groups, as one JSON file.</p>
<p><a href="/account/delete">Delete your account</a></p>`;

/** GET /account/delete: what deleting does, and the form that does it. */
export async function renderDeleteAccount(c: WebContext, m: Messages = {}): Promise<Response> {
  if (!signedIn(c.session))
    return errorPage("Sign in first", "Sign in on your account page to delete your account.", 401, html`<p><a href="/account">Your account</a></p>`);
  const me = (await agentById(c.tx, c.session.agentId))!;
  if (!mayWrite(c.session)) return page("Delete your account", html`${alert(m.error)}<p class="notice" role="status">${READ_ONLY}</p>`, { status: m.status });
  const plan = await deletionPlan(c.tx, me);
  const fresh = await signedInLately(c.tx, c.session.clientId, c.now);
  const withPassword = (await passwordOf(c.tx, me.agentId)) !== undefined;
  const withPasskey = await hasPasskey(c.tx, me.agentId);
  const proof = fresh
    ? html`<p class="muted">You signed in moments ago, so no password is needed.</p>`
    : html`${withPassword ? field("current", "Your current password", { id: "delete-current", type: "password", maxlength: 256, autocomplete: "current-password" }) : ""}
${withPasskey ? html`<input type="hidden" name="credential" value=""><p class="muted" role="status" data-passkey-status></p><button type="submit" class="secondary" data-passkey="signin">Delete it, confirming with a passkey</button>` : ""}
${withPassword || withPasskey ? "" : html`<p class="notice" role="status">To prove it is you, sign out and sign in again (with a code in your agent's inbox, or your identity provider), then come back within ${FRESH_MS / 60_000} minutes.</p>`}`;
  return page(
    "Delete your account",
    html`${alert(m.error)}${notice(m.info)}
<p>This deletes <strong>@${me.handle}</strong> for good. It cannot be undone. <a href="/account/export" download>Download everything</a> first if you want to keep it.</p>
<h2>What stays</h2>
${
  plan.kept.length
    ? html`<p>In these groups you stay as a former member, under your name, so that the others' balances and history stay right. Your balance stays as it is; they can still record what you paid them.</p><ul>${plan.kept.map(groupLine)}</ul>`
    : html`<p>You share no group with anyone.</p>`
}
<h2>What goes</h2>
<ul>
${plan.removed.length ? html`<li>Groups nobody else is in, with their expenses and receipts:<ul>${plan.removed.map(groupLine)}</ul></li>` : ""}
<li>Your apps, keys and browser sessions, passkeys, password and phone</li>
<li>Your contacts (${plan.contacts}), your inbox, the mail nobody else holds (${plan.envelopes}), the plans you organised (${plan.plans})</li>
</ul>
<p>${plan.told ? `${plan.told} ${plan.told === 1 ? "person is" : "people are"} told: the other members of your groups and your contacts.` : "Nobody needs telling: you have no contacts and share no group."} Your handle is never given to anyone else.</p>
<h2>Delete it</h2>
<form method="post" action="/account/delete">
<input type="hidden" name="csrf" value="${c.session.csrfToken}">
${field("confirm_handle", "Type your handle to confirm", { id: "delete-handle", required: true, maxlength: 40, autocomplete: "off", hint: `${me.handle}, without the @` })}
${proof}
${fresh || withPassword ? html`<button type="submit">Delete my account for good</button>` : ""}
</form>`,
    { status: m.status, scripts: withPasskey && !fresh ? ["/assets/passkey.js"] : [] },
  );
}

type Proof = "password" | "passkey" | "fresh" | "wrong";
/** What the read found: the proof to check outside any transaction (a password's hash, a passkey's answer). */
type ToCheck =
  | { clientId: string; proof: "fresh" }
  | { clientId: string; proof: "password"; hash: string }
  | { clientId: string; proof: "passkey"; key: StoredPasskey | null; challenge: WebauthnChallenge | null };

/**
 * POST /account/delete (through action(): rate limited, CSRF and sign-in checked). First a read: the handle typed,
 * and the proof (the password verified here, outside any write); then one write: the browser still signed in as
 * the same client, a passkey verified, the account deleted. The browser ends signed out.
 */
export async function postDeleteAccount(a: ActionContext, address: string): Promise<Response> {
  const now = a.svc.config.clock.now();
  const again = (m: Messages) => a.show((c) => renderDeleteAccount(c, m));
  const credential = a.form.get("credential") ?? "";
  const read = await a.svc.db.read(async (tx): Promise<Messages | ToCheck> => {
    const { session } = await openSession(tx, a.req, now, a.svc.formKey);
    if (!signedIn(session) || session.agentId !== a.agentId) return { error: "Sign in first.", status: 401 };
    if (!mayWrite(session)) return { error: READ_ONLY, status: 403 };
    const me = (await agentById(tx, a.agentId))!;
    if (normaliseHandle(a.form.get("confirm_handle")) !== me.handle)
      return { error: `Type your handle, ${me.handle}, to confirm; nothing was deleted.`, status: 400 };
    if (credential) return { clientId: session.clientId, proof: "passkey", key: await passkeyAnswering(tx, credential), challenge: session.webauthnChallenge };
    if (await signedInLately(tx, session.clientId, now)) return { clientId: session.clientId, proof: "fresh" };
    const password = a.form.get("current") ?? "";
    const stored = await passwordOf(tx, me.agentId);
    if (!password || !stored)
      return { error: "Give your current password or use a passkey (or sign in again, then come back); nothing was deleted.", status: 400 };
    try {
      const [byHandle, byAddress] = passwordGuessKeys(me.handle, address);
      await checkAttempts(tx, now, byHandle, GUESSES_PER_HANDLE);
      await checkAttempts(tx, now, byAddress, GUESSES_PER_ADDRESS);
    } catch (err) {
      if (err instanceof AppError && err.code === "RATE_LIMITED")
        return { error: "Too many wrong passwords; wait, or sign in again another way.", status: 429 };
      throw err;
    }
    return { clientId: session.clientId, proof: "password", hash: stored.hash };
  });
  if (!("proof" in read)) return again(read);
  // The slow part (a password's hash, a passkey's signature) checked with no transaction open.
  const counter = read.proof === "passkey" && read.key ? await checkAssertion(a.svc.config.baseUrl, now, read.challenge, credential, read.key) : null;
  const proof: Proof = read.proof === "password" ? ((await passwordMatches(read.hash, a.form.get("current") ?? "")) ? "password" : "wrong") : read.proof;
  const checked = { clientId: read.clientId, proof };
  const done = await a.svc.db.tx(async (tx): Promise<Messages | DeletionReport> => {
    const { session } = await openSession(tx, a.req, now, a.svc.formKey);
    if (!signedIn(session) || session.agentId !== a.agentId || session.clientId !== checked.clientId || !mayWrite(session))
      return { error: "This browser is no longer signed in as before; sign in again.", status: 401 };
    const me = (await agentById(tx, a.agentId))!;
    if (checked.proof === "wrong") {
      // Counted in a transaction of its own that commits: a wrong guess must cost one, as on the sign-in page.
      const [byHandle, byAddress] = passwordGuessKeys(me.handle, address);
      await recordAttempt(tx, now, byHandle, GUESSES_PER_HANDLE);
      await recordAttempt(tx, now, byAddress, GUESSES_PER_ADDRESS);
      return { error: "The current password is not right; nothing was deleted.", status: 400 };
    }
    if (checked.proof === "passkey") {
      await updateSession(tx, session, { webauthnChallenge: null });
      // The passkey is the account's, its signature held, and no other use moved its counter meanwhile.
      const key = read.proof === "passkey" ? read.key : null;
      if (!key || key.agentId !== me.agentId || counter === null || !(await recordPasskeyUse(tx, key, counter, now))) return { error: NO_PASSKEY, status: 400 };
    }
    return deleteAccount(tx, now, me);
  });
  if (!("deleted_at" in done)) return again(done);
  a.svc.audit?.({ event: "account_deleted", method: "web", handle: done.handle, agent_id: a.agentId }, address);
  const secure = a.svc.config.baseUrl.startsWith("https://");
  return page(
    "Account deleted",
    html`<p class="notice" role="status">@${done.handle} was deleted.${done.kept.length ? ` In ${done.kept.length} group${done.kept.length === 1 ? "" : "s"} you stay as a former member, so the others' balances stay right.` : ""} This browser is signed out.</p>
<p><a href="/">Home</a></p>`,
    // The pages this device kept for reading offline go with the account (webapp.ts).
    { headers: { "Set-Cookie": `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure ? "; Secure" : ""}`, ...CLEAR_SITE_DATA } },
  );
}
