// The e-mail part of the settings page (settings-page.ts): the address (added, confirmed by a link, removed) and how
// each kind of notification comes, shown only when the server sends e-mail (svc serve --smtp-url). Its forms are
// answered in email-pages.ts.
import { EMAIL_DELIVERIES, EMAIL_KINDS, type EmailDelivery, type EmailKind } from "../contract/email.ts";
import type { AgentRow } from "../domain/agents.ts";
import { emailOf, prefsOf } from "../domain/email/addresses.ts";
import type { WebContext } from "./context.ts";
import { field, form, html, Markup } from "./html.ts";

/** Whether this server sends e-mail. */
export const mailing = (c: WebContext) => Boolean(c.svc.config.smtpUrl);

const DELIVERY_TEXT: Record<EmailDelivery, string> = { immediate: "At once", daily: "In a daily e-mail", off: "Never" };

/** The settings page's address and notifications, for a browser that may change them; nothing without e-mail. */
export async function emailSection(c: WebContext, me: AgentRow): Promise<Markup | string> {
  if (!mailing(c)) return "";
  const row = await emailOf(c.tx, me.agentId);
  const waiting = row?.pendingAddress && row.pendingExpiresAt && row.pendingExpiresAt > c.now.toISOString() ? row.pendingAddress : null;
  const confirmed = row?.confirmedAt ? row.address : null;
  const parts: (Markup | string)[] = [html`<h2 id="email">E-mail</h2>`];
  if (confirmed)
    parts.push(
      html`<p>Your address: <strong>${confirmed}</strong> (confirmed). You can sign in with a link sent to it, and get the notifications you choose below. Other people never see it.</p>`,
    );
  else
    parts.push(
      html`<p>Add your address to sign in with a link sent to it, reset your password, and hear what happens by e-mail. Other people never see it.</p>`,
    );
  if (waiting)
    parts.push(html`<p class="notice" role="status">We sent a link to <strong>${waiting}</strong>. Open it to confirm the address; it works for a day.</p>
${form("/settings/email/cancel", c.session.csrfToken, html``, "Cancel this address", { secondary: true })}`);
  parts.push(
    form(
      "/settings/email",
      c.session.csrfToken,
      field("email", confirmed ? "New e-mail address" : "E-mail address", { type: "email", required: true, autocomplete: "email", maxlength: 254 }),
      "Send a confirmation link",
    ),
  );
  if (confirmed && row) {
    const prefs = prefsOf(row);
    const choices = (Object.keys(EMAIL_KINDS) as EmailKind[]).map(
      (kind) => html`<label for="f-email-${kind}">${EMAIL_KINDS[kind].label}</label>
<select id="f-email-${kind}" name="${kind}">${EMAIL_DELIVERIES.map((d) => html`<option value="${d}"${d === prefs[kind] ? new Markup(" selected") : ""}>${DELIVERY_TEXT[d]}</option>`)}</select>`,
    );
    parts.push(html`<h3>What you get by e-mail</h3>
<p class="muted">What happens within a few minutes comes in one e-mail; a daily e-mail gathers the day's news.</p>
${form("/settings/email/prefs", c.session.csrfToken, html`${choices}`, "Save what I get")}
${form("/settings/email/remove", c.session.csrfToken, html``, "Remove my address", { secondary: true })}`);
  }
  return html`${parts}`;
}

/** The address as a fact, for a page that cannot change it (a read-only link): whether there is one, never which. */
export async function emailFacts(c: WebContext, me: AgentRow): Promise<Markup | string> {
  if (!mailing(c)) return "";
  return html`<dt>E-mail</dt><dd>${(await emailOf(c.tx, me.agentId))?.confirmedAt ? "confirmed" : "none"}</dd>`;
}
