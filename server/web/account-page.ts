// /account: the human's clients (API keys, OAuth sessions, browsers) with last use, disconnect any of them (disconnect_client),
// create API keys (shown once), the sign-in provider link, and their data: download it all, or delete the account.
import { identitiesOf } from "../auth/identities.ts";
import { agentById, type AgentRow } from "../domain/agents.ts";
import { noticeClientConnected } from "../domain/clients.ts";
import { handlesWithVerifiedEmail, verifiedEmails } from "../domain/handle-merge.ts";
import { createClient, issueApiKey, listClients } from "../auth/credentials.ts";
import { federationScope } from "../federation/scope.ts";
import { plainText } from "../contract/wire.ts";
import { formatTime, type Messages, type WebContext } from "./context.ts";
import { alert, field, form, html, notice, page, seeOther, type Markup } from "./html.ts";
import type { ActionContext } from "./framework.ts";
import { signedIn } from "./session.ts";
import { signInSettings } from "./accounts-page.ts";
import { renderSignin } from "./accounts-page.ts";
import { accountDataSection } from "./account-data-page.ts";
import { errorText } from "./wording.ts";

const ClientName = plainText(1, 40);
const IN_USE_MS = 24 * 60 * 60 * 1000;
const KIND_TEXT = { api_key: "API key", oauth: "App signed in through this site (OAuth)", web: "Browser signed in to these pages" } as const;

export async function renderAccount(c: WebContext, m: Messages & { newKey?: { name: string; key: string } } = {}): Promise<Response> {
  // A browser no one is signed in to is offered the sign-in page itself, every way in.
  if (!signedIn(c.session)) return renderSignin(c, m);
  const me = (await agentById(c.tx, c.session.agentId))!;
  // This browser is one of the clients (kind web), marked as such; a client used lately is marked in use.
  const list = (await listClients({ tx: c.tx, now: c.now, actor: { ...me, clientId: c.session.clientId } })).clients;
  const names = new Map(list.map((cl) => [cl.client_id, cl.name]));
  const inUse = (at: string | null) => at !== null && c.now.getTime() - Date.parse(at) < IN_USE_MS;
  const cards = list.map(
    (
      cl,
    ) => html`<li><div><strong>${cl.name}</strong>${cl.current ? html` <span class="badge">this browser</span>` : inUse(cl.last_used_at) ? html` <span class="badge">in use</span>` : ""}</div>
<dl><dt>Kind</dt><dd>${KIND_TEXT[cl.kind]}${cl.old_key_until ? html` (the replaced key works until ${formatTime(cl.old_key_until)})` : ""}</dd>${cl.obtained_through ? html`<dt>Connected through</dt><dd>${names.get(cl.obtained_through) ?? "a client no longer connected"} (it ends with it)</dd>` : ""}<dt>Connected</dt><dd>${formatTime(cl.created_at)}</dd><dt>Last used</dt><dd>${formatTime(cl.last_used_at)}</dd></dl>
${form("/account/clients/disconnect", c.session.csrfToken, html`<input type="hidden" name="client_id" value="${cl.client_id}">`, "Disconnect", { secondary: true, ariaLabel: `Disconnect ${cl.name}` })}</li>`,
  );
  const shown = m.newKey
    ? html`<div class="notice" role="status"><p>New API key for <strong>${m.newKey.name}</strong>. Copy it now: it is not shown again.</p><p class="secret" id="new-key">${m.newKey.key}</p></div>`
    : "";
  return page(
    "Your account",
    html`${alert(m.error)}${notice(m.info)}${shown}
<p>Signed in as <strong>@${me.handle}</strong> (${me.displayName}). <a href="/groups">Your groups</a></p>
<h2>Connected apps</h2>
${
  list.length
    ? html`<p class="muted">Each app has its own key; disconnecting one stops it at once and leaves the others working. <span class="badge">in use</span> marks an app used in the last 24 hours.</p>
<ul class="cards" aria-label="Connected apps">${cards}</ul>`
    : html`<p>No app is connected.</p>`
}
<h2>New API key</h2>
<p>For an agent that cannot sign in by itself. Each key is its own client; disconnect it above to revoke it.</p>
${form("/account/keys", c.session.csrfToken, field("name", "Name of the app that will use it", { required: true, maxlength: 40 }), "Create API key")}
${await signInSettings(c, me)}
${await providerSection(c, me)}
<h2>Profile</h2>
<p><a href="/settings">Change your display name and description</a></p>
${otherServers(c, me)}
${accountDataSection()}
${form("/account/signout", c.session.csrfToken, html`<input type="hidden" name="flow" value="account">`, "Sign out", { secondary: true })}`,
    { status: m.status, scripts: ["/assets/passkey.js"] },
  );
}

/** The handle's address for other svc servers, when this server exchanges with them; the choice is on /settings. */
function otherServers(c: WebContext, me: AgentRow): Markup | string {
  const federation = federationScope(c.svc.config);
  if (!federation.enabled) return "";
  return html`<p>On other svc servers you are <strong>${me.handle}@${federation.selfHost}</strong>. <a href="/settings">Choose what you accept from them</a></p>`;
}

async function providerSection(c: WebContext, me: AgentRow): Promise<Markup | string> {
  const oidc = c.svc.config.oidc;
  if (!oidc) return "";
  const linked = await identitiesOf(c.tx, me.agentId);
  const twins = [];
  for (const email of await verifiedEmails(c.tx, me.agentId, oidc.issuer)) {
    for (const agent of await handlesWithVerifiedEmail(c.tx, oidc.issuer, email, me.agentId)) twins.push({ agent, email });
  }
  const login = c.session.providerLogin;
  // Joining needs the provider to have vouched in this very session for the e-mail both handles share.
  const proved = (email: string) => login?.issuer === oidc.issuer && login.emailVerified && login.email === email;
  const offers = twins.map(({ agent, email }) =>
    proved(email)
      ? html`<li><strong>@${agent.handle}</strong> (${agent.displayName}): <a href="/account/merge?keep=${me.handle}&amp;retire=${agent.handle}">keep @${me.handle}, retire @${agent.handle}</a> or <a href="/account/merge?keep=${agent.handle}&amp;retire=${me.handle}">keep @${agent.handle}, retire @${me.handle}</a></li>`
      : html`<li><strong>@${agent.handle}</strong> (${agent.displayName}): <a href="/account/oidc/start?flow=account">sign in with your identity provider</a> in this browser to join the two (it shows that you hold the e-mail now).</li>`,
  );
  return html`<h2>Identity provider</h2>
${
  linked.length
    ? html`<p>Linked${linked[0]!.email ? html` as ${linked[0]!.email}` : ""}${linked[0]!.emailVerified ? " (e-mail verified)" : ""}. You can sign in with it.</p>`
    : html`<p><a href="/account/oidc/start?flow=account">Link your identity provider</a> to sign in with it next time.</p>`
}
${
  twins.length
    ? html`<h2>A handle made twice?</h2>
<p class="notice" role="status">Your verified e-mail is also verified on ${twins.map((t, i) => html`${i ? ", " : ""}<strong>@${t.agent.handle}</strong>`)}. If that handle is yours too, you can join the two: the apps of the handle you retire then act as the one you keep. You see what changes before anything happens.</p>
<ul>${offers}</ul>`
    : ""
}`;
}

export async function postCreateKey(c: WebContext): Promise<Response> {
  if (!signedIn(c.session)) return renderAccount(c, { error: "Sign in first.", status: 401 });
  const name = ClientName.safeParse((c.form.get("name") ?? "").trim());
  if (!name.success)
    return renderAccount(c, { error: "The name must be 1-40 characters, something visible, without control or invisible characters.", status: 400 });
  // The key is obtained through this browser: it ends with it, and may do no more than it.
  const clientId = await createClient(c.tx, c.session.agentId, name.data, "api_key", c.now, { parent: c.session.clientId, maxKeys: c.svc.config.quotas.keys });
  const key = await issueApiKey(c.tx, clientId, c.now, c.session.scopes ?? "");
  c.audit({ event: "key_created", method: "web", agent_id: c.session.agentId, client_id: clientId });
  await noticeClientConnected(c.tx, c.now, { agentId: c.session.agentId, clientId, name: name.data, kind: "api_key", via: "account_page" });
  return renderAccount(c, { newKey: { name: name.data, key } });
}

/** POST /account/clients/disconnect: disconnect_client through invoke() as this browser; this browser itself signs out instead. */
export async function postDisconnect(a: ActionContext): Promise<Response> {
  const result = await a.call("disconnect_client", { client_id: a.form.get("client_id") ?? "" });
  if (result.ok) return seeOther("/account");
  const error =
    result.error.code === "CONFLICT"
      ? "That is this browser: to end its session, sign out."
      : result.error.code === "NOT_FOUND"
        ? "That app is not connected to your handle."
        : errorText(result.error);
  return a.show((c) => renderAccount(c, { error, status: result.error.status }));
}
