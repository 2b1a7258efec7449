// The settings page behind get_settings_link: the link is used up by a button press (so a link preview
// cannot spend it), signs the browser in for the settings page only, and the page edits the profile.
import { agentById, updateProfile } from "../domain/agents.ts";
import { consumeSettingsLink, settingsLinkUsable } from "../auth/settings-links.ts";
import { Description, DisplayName } from "../contract/wire.ts";
import { actingAs, errorPage, type Messages, type WebContext } from "./context.ts";
import { alert, field, form, html, notice, page, seeOther } from "./html.ts";
import { mayWrite, sessionCookie, signIn, signedIn } from "./session.ts";

const SPENT = "This link has expired or was already used. Ask your agent for a new one (get_settings_link).";

/** GET /settings/link/{token} */
export async function renderSettingsLink(c: WebContext, token: string): Promise<Response> {
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
export async function renderSettings(c: WebContext, m: Messages = {}): Promise<Response> {
  if (!signedIn(c.session, "settings")) {
    return errorPage(
      "Settings",
      "Open the link your agent gave you (it calls get_settings_link), or sign in on your account page.",
      401,
      html`<p><a href="/account">Go to your account page</a></p>`,
    );
  }
  const me = (await agentById(c.tx, c.session.agentId))!;
  const saved = c.url.searchParams.get("saved") === "1" ? "Saved." : undefined;
  if (!mayWrite(c.session)) {
    return page(
      "Your settings",
      html`<p class="notice" role="status">This link was asked for by a read-only credential, so this page shows your profile but cannot change it. Sign in on <a href="/account">your account page</a> to change it.</p>
<dl><dt>Handle</dt><dd>@${me.handle}</dd><dt>Display name</dt><dd>${me.displayName}</dd><dt>About you</dt><dd>${me.description ?? ""}</dd></dl>`,
      { status: m.status },
    );
  }
  return page(
    "Your settings",
    html`${alert(m.error)}${notice(m.info ?? saved)}
<p>Handle <strong>@${me.handle}</strong> (it can never change).</p>
${form(
  "/settings",
  c.session.csrfToken,
  html`${field("display_name", "Display name", { required: true, value: me.displayName, maxlength: 80, autocomplete: "name" })}
${field("description", "About you", { value: me.description, maxlength: 500, multiline: true, hint: "Up to 500 characters; other agents see it." })}`,
  "Save",
)}`,
    { status: m.status },
  );
}

/** POST /settings */
export async function postSettings(c: WebContext): Promise<Response> {
  if (!signedIn(c.session, "settings")) return renderSettings(c);
  const displayName = DisplayName.safeParse((c.form.get("display_name") ?? "").trim());
  const description = Description.safeParse((c.form.get("description") ?? "").trim());
  if (!displayName.success)
    return renderSettings(c, { error: "The display name must be 1-80 characters, something visible, without control or invisible characters.", status: 400 });
  if (!description.success)
    return renderSettings(c, { error: "The description must be at most 500 characters, without control or invisible characters.", status: 400 });
  await updateProfile(await actingAs(c, c.session.agentId), { display_name: displayName.data, description: description.data || null });
  return seeOther("/settings?saved=1");
}
