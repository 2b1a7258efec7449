// enter_url of join_network: the human types the app's user code, then proves their handle (or creates one);
// the app's next finish_join poll then gets its key.
import { agentById } from "../domain/agents.ts";
import { connectJoin, createAgent, denyJoin, formatUserCode, handleTaken, joinById, joinStatus, normaliseUserCode, pendingJoinByUserCode, type JoinRow } from "../domain/join.ts";
import { consumePlatformInvite } from "../domain/platform-invites.ts";
import { Description, DisplayName, Handle } from "../tools/schemas.ts";
import type { Messages, WebContext } from "./context.ts";
import { alert, field, form, html, notice, page, seeOther, type Markup } from "./html.ts";
import { signinBlock, signInAs } from "./signin.ts";
import { signedIn, updateSession } from "./session.ts";

async function currentJoin(c: WebContext): Promise<JoinRow | null> {
  return c.session.joinSessionId ? ((await joinById(c.tx, c.session.joinSessionId)) ?? null) : null;
}

function codeForm(c: WebContext): Markup {
  // A code in the link is shown only in its canonical form, so nothing from the address is echoed back.
  const prefilled = normaliseUserCode(c.url.searchParams.get("user_code") ?? "");
  return form(
    "/join",
    c.session.csrfToken,
    field("user_code", "Code shown by your app", { required: true, value: prefilled ? formatUserCode(prefilled) : "", autocomplete: "off", maxlength: 20, hint: "Eight letters, like BCDF-GHJK" }),
    "Continue",
  );
}

async function finished(c: WebContext, join: JoinRow): Promise<Markup | null> {
  const status = joinStatus(join, c.now);
  if (status === "connected") {
    const agent = await agentById(c.tx, join.agentId!);
    return html`<p class="notice" role="status"><strong>${join.clientName}</strong> is now connected to <strong>@${agent?.handle ?? ""}</strong>${join.created ? " (your new handle)" : ""}. Go back to the app: it finishes by itself.</p>`;
  }
  if (status === "denied") return html`<p class="notice" role="status">You refused to connect <strong>${join.clientName}</strong>. Nothing was connected.</p>`;
  if (status === "expired") return html`<p class="error" role="alert">This request from <strong>${join.clientName}</strong> expired. Ask the app to start again.</p>`;
  return null;
}

export async function renderJoin(c: WebContext, m: Messages = {}): Promise<Response> {
  const join = await currentJoin(c);
  const done = join ? await finished(c, join) : null;
  if (!join || done) {
    return page("Connect an app", html`${alert(m.error)}${notice(m.info)}${done ?? ""}
<p>An app asked to join your svc handle. Type the code it showed you.</p>
${codeForm(c)}`, { status: m.status });
  }
  const deny = form("/join/deny", c.session.csrfToken, html``, "Refuse", { secondary: true });
  if (signedIn(c.session)) {
    const me = (await agentById(c.tx, c.session.agentId))!;
    return page(`Connect ${join.clientName}`, html`${alert(m.error)}${notice(m.info)}
<p><strong>${join.clientName}</strong> asks to act as <strong>@${me.handle}</strong> (${me.displayName}) with its own key. Approve only if you just started this from that app.</p>
<div class="row">${form("/join/approve", c.session.csrfToken, html``, `Connect to @${me.handle}`)}${deny}</div>
${form("/account/signout", c.session.csrfToken, html`<input type="hidden" name="flow" value="join">`, "Use another handle", { secondary: true })}`, { status: m.status });
  }
  const identity = c.session.oidcIdentity;
  const creating = html`${field("handle", "Handle", { required: true, value: join.suggestedHandle, maxlength: 32, pattern: "[a-z0-9][a-z0-9_\\-]{2,31}", autocomplete: "username", hint: "3-32 characters: a-z, 0-9, _ and -. It can never change." })}
${field("display_name", "Display name", { required: true, value: join.displayName, maxlength: 80, autocomplete: "name" })}
${field("description", "About you (optional)", { maxlength: 500, multiline: true })}
${c.svc.config.inviteOnly ? field("platform_invite_code", "Invite code for this server", { required: true, maxlength: 200 }) : ""}`;
  return page(`Connect ${join.clientName}`, html`${alert(m.error)}${notice(m.info)}
<p><strong>${join.clientName}</strong> asks to join your svc handle.</p>
${identity ? html`<p class="notice" role="status">You signed in with your identity provider${identity.email ? html` as ${identity.email}` : ""}, but that login is not linked to a handle yet. Prove your handle below once, or create one; the login is linked to it.</p>` : ""}
<h2>I already have a handle</h2>
${await signinBlock(c, "join")}
<h2>I am new here</h2>
${form("/join/create", c.session.csrfToken, creating, "Create my handle and connect")}
<h2>This was not me</h2>
${deny}`, { status: m.status });
}

export async function postUserCode(c: WebContext): Promise<Response> {
  const join = await pendingJoinByUserCode(c.tx, c.form.get("user_code") ?? "", c.now);
  if (!join) return renderJoin(c, { error: "That code is not valid, or it has expired. Check it, or ask the app to start again.", status: 400 });
  c.session = await updateSession(c.tx, c.session, { joinSessionId: join.sessionId });
  return seeOther("/join");
}

async function pendingJoin(c: WebContext): Promise<JoinRow | Response> {
  const join = await currentJoin(c);
  if (!join || joinStatus(join, c.now) !== "pending") return renderJoin(c, { error: "There is no request waiting here any more.", status: 409 });
  return join;
}

export async function postApprove(c: WebContext): Promise<Response> {
  const join = await pendingJoin(c);
  if (join instanceof Response) return join;
  if (!signedIn(c.session)) return renderJoin(c, { error: "Sign in first.", status: 401 });
  await connectJoin(c.tx, join.sessionId, c.session.agentId, false, c.now);
  return seeOther("/join");
}

export async function postDeny(c: WebContext): Promise<Response> {
  const join = await pendingJoin(c);
  if (join instanceof Response) return join;
  await denyJoin(c.tx, join.sessionId, c.now);
  return seeOther("/join");
}

export async function postCreate(c: WebContext): Promise<Response> {
  const join = await pendingJoin(c);
  if (join instanceof Response) return join;
  const handle = Handle.safeParse((c.form.get("handle") ?? "").trim().toLowerCase());
  const displayName = DisplayName.safeParse((c.form.get("display_name") ?? "").trim());
  const description = Description.safeParse((c.form.get("description") ?? "").trim());
  if (!handle.success) return renderJoin(c, { error: "The handle must be 3-32 characters of a-z, 0-9, _ and -, starting with a letter or digit.", status: 400 });
  if (!displayName.success) return renderJoin(c, { error: "The display name must be 1-80 characters without control characters.", status: 400 });
  if (!description.success) return renderJoin(c, { error: "The description must be at most 500 characters.", status: 400 });
  if (await handleTaken(c.tx, handle.data)) return renderJoin(c, { error: "That handle is taken; choose another.", status: 409 });
  if (c.svc.config.inviteOnly) await consumePlatformInvite(c.tx, c.form.get("platform_invite_code") ?? undefined, c.now);
  const agent = await createAgent(c.tx, { handle: handle.data, display_name: displayName.data, description: description.data || null }, c.now);
  await connectJoin(c.tx, join.sessionId, agent.agentId, true, c.now);
  await signInAs(c, agent.agentId);
  return seeOther("/join");
}
