// E-mail for people on the pages, only when the server sends e-mail (svc serve --smtp-url): the forms of the settings
// page's e-mail part (email-section.ts: the address added, confirmed by a link, removed; how each kind of
// notification comes); the confirmation and unsubscribe pages the e-mails link to; the answer to "e-mail me a link"
// (a way of the sign-in form, signin.ts); a claim link sent to a friend from a group page. The e-mails are written to
// the outbox in the page's transaction and sent after the commit.
import { createResetLink } from "../auth/reset-links.ts";
import { HOUR, DAY } from "../clock.ts";
import { EMAIL_DELIVERIES, EMAIL_KINDS, type EmailDelivery, type EmailKind, emailKey, normaliseEmail } from "../contract/email.ts";
import { HANDLE_PATTERN } from "../contract/wire.ts";
import { agentByHandle, agentById } from "../domain/agents.ts";
import { takeAttempt } from "../domain/attempts.ts";
import {
  cancelEmailProof,
  confirmEmail,
  emailOf,
  handlesWithEmail,
  pendingByToken,
  removeEmail,
  setPrefs,
  startEmailProof,
} from "../domain/email/addresses.ts";
import { type EmailContext, mailClaimLink, mailConfirmation, mailSigninLinks, readUnsubscribeToken } from "../domain/email/compose.ts";
import { roomFor } from "../domain/email/outbox.ts";
import { isMember } from "../domain/ledger/groups/membership.ts";
import { claimPath, placeholderByCode } from "../domain/ledger/groups/placeholders.ts";
import { AppError } from "../errors.ts";
import { errorPage, FLOWS, nextOf, type Messages, type WebContext } from "./context.ts";
import { field, form, html, type Markup, page, seeOther } from "./html.ts";
import type { Params, WebCall } from "./framework.ts";
import { factorOrigin, signedIn } from "./session.ts";
import { mailing } from "./email-section.ts";
import { renderSettings } from "./settings-page.ts";
import { sentFlow, type RenderFlow } from "./signin.ts";

/** Asks for a sign-in link from one client address (an IPv6 /64), and for one address or handle, whatever it is. */
const ASKS_PER_CLIENT = { limit: 10, windowMs: HOUR };
const ASKS_PER_TARGET = { limit: 3, windowMs: HOUR };
/** Claim links one member may e-mail in a day. */
const CLAIM_MAILS_PER_DAY = { limit: 20, windowMs: DAY };

const emailContext = (c: WebContext): EmailContext => ({ baseUrl: c.svc.config.baseUrl, key: c.svc.formKey });
/** After the commit, the outbox is sent at once (a person is waiting for the link). */
const sendSoon = (c: WebContext) => {
  c.afterCommit = async () => {
    c.svc.wakeEmail?.();
    return undefined;
  };
};

const rateLimited = (err: unknown): err is AppError => err instanceof AppError && err.code === "RATE_LIMITED";

/** POST /settings/email: a confirmation link to the address typed. */
export async function postEmail(c: WebContext): Promise<Response> {
  if (!signedIn(c.session, "settings") || !mailing(c)) return renderSettings(c);
  const address = normaliseEmail(c.form.get("email") ?? "");
  if (!address) return renderSettings(c, { error: "That is not an e-mail address: one address such as ann@example.org.", status: 400 });
  try {
    const { token } = await startEmailProof(c.tx, c.now, c.session.agentId, address, await factorOrigin(c.tx, c.session));
    await mailConfirmation(c.tx, c.now, emailContext(c), c.session.agentId, address, token);
  } catch (err) {
    if (err instanceof AppError && (err.code === "RATE_LIMITED" || err.code === "CONFLICT"))
      return renderSettings(c, { error: err.message, status: err.status });
    throw err;
  }
  sendSoon(c);
  // The section says where the link went.
  return seeOther("/settings#email");
}

/** POST /settings/email/cancel */
export async function postEmailCancel(c: WebContext): Promise<Response> {
  if (!signedIn(c.session, "settings")) return renderSettings(c);
  await cancelEmailProof(c.tx, c.session.agentId);
  return seeOther("/settings#email");
}

/** POST /settings/email/remove */
export async function postEmailRemove(c: WebContext): Promise<Response> {
  if (!signedIn(c.session, "settings")) return renderSettings(c);
  await removeEmail(c.tx, c.session.agentId);
  return seeOther("/settings?saved=email-removed#email");
}

/** POST /settings/email/prefs: each kind at once, daily, or never. */
export async function postEmailPrefs(c: WebContext): Promise<Response> {
  if (!signedIn(c.session, "settings")) return renderSettings(c);
  const chosen: Partial<Record<EmailKind, EmailDelivery>> = {};
  for (const kind of Object.keys(EMAIL_KINDS) as EmailKind[]) {
    const how = c.form.get(kind);
    if (how !== null && !(EMAIL_DELIVERIES as readonly string[]).includes(how))
      return renderSettings(c, { error: "Choose at once, daily or never.", status: 400 });
    if (how !== null) chosen[kind] = how as EmailDelivery;
  }
  await setPrefs(c.tx, c.session.agentId, chosen);
  return seeOther("/settings?saved=email-prefs#email");
}

const SPENT_CONFIRM = "This link has expired or was already used. Add the address again on your settings page to get a new one.";

/** GET /settings/email/confirm/{token}: looking does not use the link up (a link preview cannot). */
export async function renderEmailConfirm(c: WebContext): Promise<Response> {
  const token = c.params.rest ?? "";
  const pending = await pendingByToken(c.tx, c.now, token);
  if (!pending) return errorPage("Link expired", SPENT_CONFIRM, 410);
  const who = (await agentById(c.tx, pending.agentId))!;
  return page(
    "Confirm your e-mail address",
    html`<p>Confirm <strong>${pending.address}</strong> as the e-mail address of <strong>@${who.handle}</strong>.</p>
${form("/settings/email/confirm", c.session.csrfToken, html`<input type="hidden" name="token" value="${token}">`, "Confirm my address")}`,
  );
}

/** POST /settings/email/confirm */
export async function postEmailConfirm(c: WebContext): Promise<Response> {
  const done = await confirmEmail(c.tx, c.now, c.form.get("token") ?? "");
  if (!done) return errorPage("Link expired", SPENT_CONFIRM, 410);
  return page(
    "Address confirmed",
    html`<p class="notice" role="status"><strong>${done.address}</strong> is confirmed. You can now sign in with a link sent to it, and choose what you hear of by e-mail on <a href="/settings#email">your settings page</a>.</p>`,
  );
}

/** GET /settings/email/unsubscribe/{token}: what the link stops, and the button (looking stops nothing). */
export async function renderUnsubscribe(c: WebContext): Promise<Response> {
  const token = c.params.rest ?? "";
  const read = readUnsubscribeToken(c.svc.formKey, token);
  if (!read || !(await emailOf(c.tx, read.agentId)))
    return errorPage("Nothing to stop", "This link does not stop any e-mail: the address was removed, or the link is incomplete.", 404);
  return page(
    "Stop these e-mails",
    html`<p>Stop the e-mails about: ${read.kinds.map((k) => EMAIL_KINDS[k].label.toLowerCase()).join("; ")}.</p>
<form method="post" action="/settings/email/unsubscribe/${token}"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Stop these e-mails</button></form>
<p class="muted">You can turn them on again, or choose a daily e-mail, on your settings page.</p>`,
  );
}

/**
 * POST /settings/email/unsubscribe/{token}: RFC 8058 one-click, sent by a mail client with no cookie and no form of
 * this server, so no CSRF token: the signed token is the authority, and all it can do is turn its kinds off.
 */
export async function postUnsubscribe(call: WebCall, { rest: token = "" }: Params): Promise<Response> {
  const limited = call.svc.limiter.take(`web:${call.clientAddress()}`, "web", call.svc.config.publicRateLimit);
  if (!limited.allowed) return errorPage("Slow down", `Too many attempts from your address. Wait ${limited.resetSeconds} seconds and try again.`, 429);
  await call.req.body?.cancel().catch(() => undefined);
  const read = readUnsubscribeToken(call.svc.formKey, token);
  const stopped =
    read !== null &&
    (await call.svc.db.tx(async (tx) => {
      if (!(await emailOf(tx, read.agentId))) return false;
      await setPrefs(tx, read.agentId, Object.fromEntries(read.kinds.map((k) => [k, "off"])));
      return true;
    }));
  if (!read || !stopped) return errorPage("Nothing to stop", "This link does not stop any e-mail: the address was removed, or the link is incomplete.", 404);
  return page(
    "E-mails stopped",
    html`<p class="notice" role="status">You will get no more e-mails about: ${read.kinds.map((k) => EMAIL_KINDS[k].label.toLowerCase()).join("; ")}.</p>
<p>You can turn them on again on <a href="/settings#email">your settings page</a>.</p>`,
  );
}

/**
 * POST /signin/email: a link to each live handle whose confirmed address is the one typed (or to the address of the
 * handle typed). The answer is the same whether or not one exists; the asks are limited per client address and per
 * address or handle typed, whatever it is, so the limits tell nothing either.
 */
export async function postEmailSignin(c: WebContext, render: RenderFlow, clientAddress: string): Promise<Response> {
  // A refused ask, and the answer, show the page the form was on (/signin, /join, the OAuth sign-in...).
  const flow = sentFlow(c);
  const renderSignin = (w: WebContext, m: Messages = {}) => render(w, flow, m);
  if (!mailing(c)) return renderSignin(c);
  const typed = (c.form.get("email") ?? "").trim().replace(/^@/, "");
  const purpose = c.form.get("purpose") === "reset" ? "reset" : "signin";
  const asAddress = normaliseEmail(typed);
  const asHandle = !asAddress && HANDLE_PATTERN.test(typed.toLowerCase()) ? typed.toLowerCase() : null;
  if (!asAddress && !asHandle) return renderSignin(c, { error: "Type the e-mail address you confirmed, or your handle.", status: 400 });
  try {
    await takeAttempt(c.tx, c.now, `email:ask:client:${clientAddress}`, ASKS_PER_CLIENT);
    await takeAttempt(c.tx, c.now, `email:ask:to:${asAddress ? emailKey(asAddress) : `@${asHandle}`}`, ASKS_PER_TARGET);
  } catch (err) {
    if (!rateLimited(err)) throw err;
    return renderSignin(c, {
      error: "Too many links were asked for from your address, or for this one, in the last hour. Wait and try again, or sign in another way.",
      status: 429,
    });
  }
  let to: string | null = asAddress;
  let handles: Awaited<ReturnType<typeof handlesWithEmail>> = [];
  if (asAddress) {
    handles = await handlesWithEmail(c.tx, asAddress);
    // To the address as it was confirmed, not as it was typed now.
    to = handles[0]?.address ?? null;
  } else {
    const agent = await agentByHandle(c.tx, asHandle!);
    const row = agent && (await emailOf(c.tx, agent.agentId));
    to = row?.confirmedAt ? row.address : null;
    handles = to ? (await handlesWithEmail(c.tx, to)).filter((h) => h.agentId === agent!.agentId) : [];
  }
  // Past the address's limit nothing is written; the answer stays the same.
  if (to && handles.length && (await roomFor(c.tx, c.now, to))) {
    // The link comes back to where the sign-in began: a join or an app's sign-in waits in this browser's session.
    const next = purpose === "signin" ? (nextOf(c) ?? (flow === "join" || flow === "authorize" ? FLOWS[flow] : null)) : null;
    const links = [];
    for (const h of handles) {
      const link = await createResetLink(c.tx, h.agentId, c.svc.config.baseUrl, c.now, { purpose, setThrough: h.setThrough });
      links.push({ agentId: h.agentId, handle: h.handle, displayName: h.displayName, url: next ? `${link.url}?next=${encodeURIComponent(next)}` : link.url });
    }
    await mailSigninLinks(c.tx, c.now, emailContext(c), to, purpose, links);
    sendSoon(c);
  }
  return renderSignin(c, {
    info:
      purpose === "reset"
        ? "If an account here has that e-mail address (or handle) with a confirmed address, we sent a link to reset its password. It works for 30 minutes, once."
        : "If an account here has that e-mail address (or handle) with a confirmed address, we sent a link to sign in. It works for 30 minutes, once.",
  });
}

/** Beside a claim link shown once on a group page: send it to the friend's address instead of copying it. */
export function claimMailForm(c: WebContext, groupPath: string, code: string): Markup | string {
  if (!mailing(c)) return "";
  return form(
    `${groupPath}/placeholders/email`,
    c.session.csrfToken,
    html`<input type="hidden" name="code" value="${code}">${field("email", "Or e-mail the link to them", { id: "f-claim-email", type: "email", required: true, autocomplete: "off", maxlength: 254, hint: "Their address; we send them the link with your name" })}`,
    "Send the link",
    { secondary: true },
  );
}

/** POST /groups/{group_id}/placeholders/email: the claim link the page showed, e-mailed to the address typed. */
export async function postClaimMail(c: WebContext): Promise<Response> {
  if (!signedIn(c.session) || !mailing(c)) return seeOther("/groups");
  const groupId = c.url.pathname.split("/")[2] ?? "";
  const code = c.form.get("code") ?? "";
  const { p, g, expired } = await placeholderByCode(c.tx, code, c.now);
  // A code of another group, or of a group the person is not in, is no page at all.
  if (g.groupId !== groupId || !(await isMember(c.tx, g.groupId, c.session.agentId))) throw new AppError("NOT_FOUND", "Not found");
  const back = html`<p><a href="/groups/${g.groupId}">Back to the group</a></p>`;
  if (expired) return errorPage("Link expired", "This link has expired; make a new one on the group's page.", 409, back);
  const to = normaliseEmail(c.form.get("email") ?? "");
  if (!to) return errorPage("Cannot send", "That is not an e-mail address: one address such as ann@example.org. Go back and try again.", 400, back);
  if (!(await roomFor(c.tx, c.now, to)))
    return errorPage("Cannot send", "Too many e-mails went to this address recently; wait an hour and try again.", 429, back);
  try {
    await takeAttempt(c.tx, c.now, `email:claim:handle:${c.session.agentId}`, CLAIM_MAILS_PER_DAY);
  } catch (err) {
    if (!rateLimited(err)) throw err;
    return errorPage("Cannot send", "You sent as many links by e-mail as you may today; copy the link and send it another way.", 429, back);
  }
  await mailClaimLink(c.tx, c.now, emailContext(c), {
    senderId: c.session.agentId,
    to,
    name: p.name,
    groupName: g.name,
    url: `${c.svc.config.baseUrl}${claimPath(code)}`,
    expiresAt: p.claimExpiresAt ?? "",
  });
  sendSoon(c);
  return seeOther(`/groups/${g.groupId}?done=claim-mailed#members`);
}
