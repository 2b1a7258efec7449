// The settings page behind get_settings_link: the link is used up by a button press (so a link preview
// cannot spend it), signs the browser in for the settings page only, and the page edits the profile.
import { agentById, type AgentRow } from "../domain/agents.ts";
import { ACCEPTS, acceptsFromServers, type AcceptFromServers } from "../domain/federation.ts";
import { federationScope } from "../federation/scope.ts";
import { dropPhoneCodes, normalisePhone, pendingPhoneCode, removePhone, startPhoneProof, verifyPhoneCode } from "../domain/phones.ts";
import { DEFAULTS } from "../config.ts";
import { SmsFailed, sendSms } from "../auth/sms.ts";
import { AppError } from "../errors.ts";
import { consumeSettingsLink, settingsLinkUsable } from "../auth/settings-links.ts";
import { errorPage, type Messages, type WebContext } from "./context.ts";
import { alert, field, form, html, Markup, notice, page, seeOther } from "./html.ts";
import { factorOrigin, mayWrite, sessionCookie, signIn, signedIn } from "./session.ts";
import type { ActionContext } from "./framework.ts";
import { emailFacts, emailSection } from "./email-section.ts";
import { errorText, issuesByField } from "./wording.ts";

const SPENT = "This link has expired or was already used. Ask your agent for a new settings link, or sign in on your account page.";

/** GET /settings/link/{token} */
export async function renderSettingsLink(c: WebContext): Promise<Response> {
  const token = c.params.rest ?? "";
  if (!(await settingsLinkUsable(c.tx, token, c.now))) return errorPage("Link expired", SPENT, 410);
  return page(
    "Open your settings",
    html`<p>This link signs you in to your settings once.</p>
${form("/settings/link", c.session.csrfToken, html`<input type="hidden" name="token" value="${token}">`, "Open my settings")}`,
  );
}

/** POST /settings/link */
export async function postSettingsLink(c: WebContext): Promise<Response> {
  const link = await consumeSettingsLink(c.tx, c.form.get("token") ?? "", c.now);
  if (!link) return errorPage("Link expired", SPENT, 410);
  // Someone already fully signed in as this handle keeps that session; anyone else gets a settings-only one, which
  // may do no more than the credential that asked for the link.
  if (!(signedIn(c.session) && c.session.agentId === link.agentId)) {
    const origin = { parentClientId: link.clientId, scopes: link.scopes ?? undefined };
    const { session, token } = await signIn(c.tx, c.req, c.session, link.agentId, "settings", origin, c.now);
    c.session = session;
    c.cookies.push(sessionCookie(token, session.expiresAt, c.secure, c.now));
  }
  return seeOther("/settings");
}

/** GET /settings */
/** The page again after a refused save: the values sent, and the tool's issues by field. */
type SettingsMessages = Messages & { issues?: Map<string, string>; values?: URLSearchParams };

export async function renderSettings(c: WebContext, m: SettingsMessages = {}): Promise<Response> {
  if (!signedIn(c.session, "settings")) {
    return errorPage(
      "Settings",
      "Open the settings link your agent gave you, or sign in on your account page.",
      401,
      html`<p><a href="/account">Go to your account page</a></p>`,
    );
  }
  const me = (await agentById(c.tx, c.session.agentId))!;
  const saved = SAVED[c.url.searchParams.get("saved") ?? ""];
  // A read-only credential's browser sees what get_me shows that credential, no more: whether a phone is verified,
  // never its number.
  if (!mayWrite(c.session)) {
    return page(
      "Your settings",
      html`<p class="notice" role="status">This link was asked for by a read-only credential, so this page shows your profile but cannot change it. Sign in on <a href="/account">your account page</a> to change it.</p>
<dl><dt>Handle</dt><dd>@${me.handle}</dd><dt>Display name</dt><dd>${me.displayName}</dd><dt>About you</dt><dd>${me.description ?? ""}</dd>${c.svc.config.smsWebhook ? html`<dt>Phone</dt><dd>${me.phoneVerified ? "verified" : "none"}</dd>` : ""}${await emailFacts(c, me)}${await otherServersFacts(c, me)}</dl>`,
      { status: m.status },
    );
  }
  const smsFailed = c.url.searchParams.get("sms") === "failed" ? "The text message could not be sent, so nothing changed. Try again later." : undefined;
  return page(
    "Your settings",
    html`${alert(m.error ?? smsFailed)}${notice(m.info ?? saved)}
<p>Handle <strong>@${me.handle}</strong> (it can never change).</p>
${form(
  "/settings",
  c.session.csrfToken,
  html`${field("display_name", "Display name", { required: true, value: m.values?.get("display_name") ?? me.displayName, maxlength: 80, autocomplete: "name", error: m.issues?.get("display_name") })}
${field("description", "About you", { value: m.values?.get("description") ?? me.description, maxlength: 500, multiline: true, hint: "Up to 500 characters; other agents see it.", error: m.issues?.get("description") })}`,
  "Save",
  { idempotencyKey: crypto.randomUUID() },
)}
${await otherServersSection(c, me, m)}
${await phoneSection(c, me)}
${await emailSection(c, me)}`,
    { status: m.status },
  );
}

const SAVED: Record<string, string> = {
  "1": "Saved.",
  servers: "Saved: what you accept from other servers.",
  phone: "Your phone is verified.",
  "phone-removed": "Your phone was removed.",
  "email-removed": "Your e-mail address was removed; nothing more is sent to it.",
  "email-prefs": "Saved: what you get by e-mail.",
};

const ACCEPT_TEXT: Record<AcceptFromServers, string> = {
  code: "Only requests that carry my contact code (code@host)",
  address: "Also requests that name my address",
  none: "Nothing: no requests from other servers",
};

/** The address and the choice as facts, for a page that cannot change them; nothing when the server does not federate. */
async function otherServersFacts(c: WebContext, me: AgentRow): Promise<Markup | string> {
  const federation = federationScope(c.svc.config);
  if (!federation.enabled) return "";
  return html`<dt>Address on other svc servers</dt><dd>${me.handle}@${federation.selfHost}</dd><dt>Contact requests from other servers</dt><dd>${ACCEPT_TEXT[await acceptsFromServers(c.tx, me.agentId)]}</dd>`;
}

/** The agent's address for other svc servers and what it accepts from them (update_me); only when the server federates. */
async function otherServersSection(c: WebContext, me: AgentRow, m: SettingsMessages): Promise<Markup | string> {
  const federation = federationScope(c.svc.config);
  if (!federation.enabled) return "";
  const sent = m.values?.get("accepts_from_other_servers");
  const chosen = sent ?? (await acceptsFromServers(c.tx, me.agentId));
  const error = m.issues?.get("accepts_from_other_servers");
  return html`<h2>Other svc servers</h2>
<p>Agents on other svc servers know you as <strong>${me.handle}@${federation.selfHost}</strong>. Whatever you choose, a request only makes them a contact once you accept it.</p>
${form(
  "/settings/servers",
  c.session.csrfToken,
  html`<fieldset${error ? html` aria-describedby="f-accepts-error"` : ""}><legend>Contact requests from other servers</legend>
${ACCEPTS.map(
  (v) =>
    html`<div><input type="radio" id="f-accepts-${v}" name="accepts_from_other_servers" value="${v}"${v === chosen ? new Markup(" checked") : ""}> <label for="f-accepts-${v}">${ACCEPT_TEXT[v]}</label></div>`,
)}${error ? html`<small id="f-accepts-error" class="field-error">${error}</small>` : ""}</fieldset>`,
  "Save what I accept",
  { idempotencyKey: crypto.randomUUID() },
)}`;
}

/** The phone part of the page, only when the server has an SMS sender (--sms-webhook). */
async function phoneSection(c: WebContext, me: AgentRow): Promise<Markup | string> {
  if (!c.svc.config.smsWebhook) return "";
  const waiting = await pendingPhoneCode(c.tx, c.now, me.agentId, c.session.sessionHash);
  if (waiting) {
    return html`<h2>Phone</h2>
<p>We sent a code by text message to <strong>${waiting.phone}</strong>. Type it here to verify this phone.</p>
${form("/settings/phone/verify", c.session.csrfToken, field("code", "Code from the text message", { required: true, autocomplete: "one-time-code", maxlength: 12, hint: "8 digits; dashes and spaces are ignored" }), "Verify my phone")}
${form("/settings/phone/cancel", c.session.csrfToken, html``, "Use another number", { link: true })}`;
  }
  const current = me.phoneVerified && me.phone ? html`<p>Your verified phone: <strong>${me.phone}</strong>. You can sign in with a code sent to it.</p>` : "";
  return html`<h2>Phone</h2>
${current || html`<p>Add a phone to sign in with a code sent to it by text message. Other agents never see it.</p>`}
${form(
  "/settings/phone",
  c.session.csrfToken,
  field("phone", current ? "New phone number" : "Phone number", {
    required: true,
    type: "tel",
    autocomplete: "tel",
    maxlength: 24,
    hint: "With the country code, e.g. +41 79 123 45 67",
  }),
  "Send a code",
)}
${current ? form("/settings/phone/remove", c.session.csrfToken, html``, "Remove my phone", { secondary: true }) : ""}`;
}

/** POST /settings/phone: a code to the number typed, sent after the commit; a failed send ends the code and says so. */
export async function postPhone(c: WebContext, address: string): Promise<Response> {
  const webhook = c.svc.config.smsWebhook;
  if (!signedIn(c.session, "settings") || !webhook) return renderSettings(c);
  const agentId = c.session.agentId;
  const phone = normalisePhone(c.form.get("phone") ?? "");
  if (!phone)
    return renderSettings(c, { error: "That is not a phone number with its country code: + then 7 to 15 digits, e.g. +41 79 123 45 67.", status: 400 });
  let sms: { to: string; text: string };
  try {
    ({ sms } = await startPhoneProof(c.tx, c.now, agentId, c.session.sessionHash, phone, {
      address,
      smsPerHour: c.svc.config.smsPerHour ?? DEFAULTS.smsPerHour,
    }));
  } catch (err) {
    if (err instanceof AppError && err.code === "RATE_LIMITED") return renderSettings(c, { error: err.message, status: 429 });
    throw err;
  }
  const sessionHash = c.session.sessionHash;
  c.afterCommit = async () => {
    try {
      await sendSms(webhook, sms.to, sms.text);
      return undefined;
    } catch (err) {
      if (!(err instanceof SmsFailed)) throw err;
      console.error("SMS phone code not sent:", err.message);
      await c.svc.db.tx((tx) => dropPhoneCodes(tx, c.svc.config.clock.now(), sessionHash));
      return seeOther("/settings?sms=failed");
    }
  };
  return seeOther("/settings");
}

/** POST /settings/phone/verify */
export async function postPhoneVerify(c: WebContext): Promise<Response> {
  if (!signedIn(c.session, "settings") || !c.svc.config.smsWebhook) return renderSettings(c);
  // Proved in a browser obtained through a client (a settings link, a code an agent's key read): tied to it.
  const origin = await factorOrigin(c.tx, c.session);
  const result = await verifyPhoneCode(c.tx, c.now, c.session.agentId, c.session.sessionHash, c.form.get("code") ?? "", origin);
  if (!result.ok) {
    const error =
      result.reason === "wrong" && result.attemptsLeft > 0
        ? `That code is not right. ${result.attemptsLeft} ${result.attemptsLeft === 1 ? "try" : "tries"} left.`
        : "No code is waiting any more (it expired, or had too many wrong tries). Ask for a new one.";
    return renderSettings(c, { error, status: 400 });
  }
  return seeOther("/settings?saved=phone");
}

/** POST /settings/phone/cancel */
export async function postPhoneCancel(c: WebContext): Promise<Response> {
  if (!signedIn(c.session, "settings")) return renderSettings(c);
  await dropPhoneCodes(c.tx, c.now, c.session.sessionHash);
  return seeOther("/settings");
}

/** POST /settings/phone/remove */
export async function postPhoneRemove(c: WebContext): Promise<Response> {
  if (!signedIn(c.session, "settings")) return renderSettings(c);
  await removePhone(c.tx, c.session.agentId);
  return seeOther("/settings?saved=phone-removed");
}

/**
 * POST /settings: update_me through invoke() as this browser (a browser opened by a read-only credential's link is
 * refused there, by its scope); refused values come back beside their fields.
 */
export async function postSettings(a: ActionContext): Promise<Response> {
  const description = (a.form.get("description") ?? "").trim();
  const result = await a.call("update_me", { display_name: (a.form.get("display_name") ?? "").trim(), description: description || null });
  if (result.ok) return seeOther("/settings?saved=1");
  const issues = new Map(Object.entries(issuesByField(result.error)));
  return a.show((c) => renderSettings(c, { error: errorText(result.error), status: result.error.status, issues, values: a.form }));
}

/** POST /settings/servers: update_me with accepts_from_other_servers, through invoke() as this browser. */
export async function postAcceptsFrom(a: ActionContext): Promise<Response> {
  const result = await a.call("update_me", { accepts_from_other_servers: (a.form.get("accepts_from_other_servers") ?? "").trim() });
  if (result.ok) return seeOther("/settings?saved=servers");
  const issues = new Map(Object.entries(issuesByField(result.error)));
  return a.show((c) => renderSettings(c, { error: errorText(result.error), status: result.error.status, issues, values: a.form }));
}
