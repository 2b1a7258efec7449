// enter_url of join_network: the human types the app's user code, then proves their handle (or creates one);
// the app's next finish_join poll then gets its key.
import { agentById } from "../domain/agents.ts";
import {
  connectJoin,
  denyJoin,
  formatUserCode,
  handleTaken,
  joinById,
  joinStatus,
  normaliseUserCode,
  pendingJoinByUserCode,
  type JoinRow,
} from "../domain/join.ts";
import type { Messages, WebContext } from "./context.ts";
import { alert, field, form, html, notice, page, seeOther, type Markup } from "./html.ts";
import { createHandleFromForm, newHandleFields, signinBlock } from "./signin.ts";
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
    field("user_code", "Code shown by your app", {
      required: true,
      value: prefilled ? formatUserCode(prefilled) : "",
      autocomplete: "off",
      maxlength: 20,
      hint: "Eight letters, like BCDF-GHJK",
    }),
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
  if (status === "expired")
    return html`<p class="error" role="alert">This request from <strong>${join.clientName}</strong> expired. Ask the app to start again.</p>`;
  return null;
}

export async function renderJoin(c: WebContext, m: Messages = {}): Promise<Response> {
  const join = await currentJoin(c);
  const done = join ? await finished(c, join) : null;
  if (!join || done) {
    return page(
      "Connect an app",
      html`${alert(m.error)}${notice(m.info)}${done ?? ""}
<p>An app asked to join your svc handle. Type the code it showed you.</p>
${codeForm(c)}`,
      { status: m.status },
    );
  }
  const deny = form("/join/deny", c.session.csrfToken, html``, "Refuse", { secondary: true });
  if (signedIn(c.session)) {
    const me = (await agentById(c.tx, c.session.agentId))!;
    return page(
      `Connect ${join.clientName}`,
      html`${alert(m.error)}${notice(m.info)}
<p><strong>${join.clientName}</strong> asks to act as <strong>@${me.handle}</strong> (${me.displayName}) with its own key. Approve only if you just started this from that app.</p>
<div class="actions">${form("/join/approve", c.session.csrfToken, html``, `Connect to @${me.handle}`)}${deny}</div>
${form("/account/signout", c.session.csrfToken, html`<input type="hidden" name="flow" value="join">`, "Use another handle", { link: true })}`,
      { status: m.status },
    );
  }
  const identity = c.session.oidcIdentity;
  // The app's suggested handle goes where it fits: an existing one is the human's own to sign in with (never a new
  // handle to create, which the form would refuse as taken); a free one prefills the new handle.
  const suggested = join.suggestedHandle;
  const existing = suggested !== null && (await handleTaken(c.tx, suggested));
  return page(
    `Connect ${join.clientName}`,
    html`${alert(m.error)}${notice(m.info)}
<p><strong>${join.clientName}</strong> asks to join your svc handle.</p>
${identity ? html`<p class="notice" role="status">You signed in with your identity provider${identity.email ? html` as ${identity.email}` : ""}, but that login is not linked to a handle yet. Prove your handle below once, or create one; the login is linked to it.</p>` : ""}
<h2>I already have a handle</h2>
${await signinBlock(c, "join", existing ? suggested : undefined, { level: 3 })}
<h2>I am new here</h2>
${form("/join/create", c.session.csrfToken, newHandleFields(c, { handle: existing ? null : suggested, displayName: join.displayName }), "Create my handle and connect")}
<h2>This was not me</h2>
${deny}`,
    { status: m.status },
  );
}

export async function postUserCode(c: WebContext): Promise<Response> {
  const join = await pendingJoinByUserCode(c.tx, c.now, c.form.get("user_code") ?? "");
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
  await connectJoin(c.tx, c.now, join.sessionId, c.session.agentId, false, c.session.clientId);
  return seeOther("/join");
}

export async function postDeny(c: WebContext): Promise<Response> {
  const join = await pendingJoin(c);
  if (join instanceof Response) return join;
  await denyJoin(c.tx, c.now, join.sessionId);
  return seeOther("/join");
}

export async function postCreate(c: WebContext): Promise<Response> {
  const join = await pendingJoin(c);
  if (join instanceof Response) return join;
  const created = await createHandleFromForm(c);
  if (!("agentId" in created)) return renderJoin(c, created);
  await connectJoin(c.tx, c.now, join.sessionId, created.agentId, true, null);
  return seeOther("/join");
}
