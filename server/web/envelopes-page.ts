// /envelopes and /envelopes/{envelope_id}: the human's mail, sent and received, one envelope with its links (their
// domains shown, never followed for them), a reply, and a new envelope to contacts. Reads are list_envelopes' and
// get_envelope's domain functions as the signed-in agent; sending and replying are the tools through invoke().
import { formKey } from "./form-keys.ts";
import type { Envelope } from "../contract/mail.ts";
import { Uuid } from "../contract/wire.ts";
import { getEnvelope, listEnvelopes } from "../domain/mail/envelopes.ts";
import { actingAs, formatTime, notFoundPage, type WebContext } from "./context.ts";
import { alert, field, form, html, notice, page } from "./html.ts";
import { signedIn } from "./session.ts";
import { signinBlock } from "./signin.ts";
import { again, optional, quoteMail, required } from "./web-actions.ts";
import { toolForm, type FormMessages } from "./framework.ts";
import { list, Names } from "./wording.ts";

const SENT: Record<string, string> = { sent: "Your envelope is sent.", replied: "Your reply is sent." };

/** The first issue about an element of a list field (to.0, to.1, ...), shown beside the one input they came from. */
const firstIssue = (m: FormMessages, prefix: string) => Object.entries(m.issues ?? {}).find(([path]) => path.startsWith(prefix))?.[1];

const who = (e: Pick<Envelope, "direction" | "from" | "to">) => {
  const names = new Names([e.from, ...e.to]);
  return e.direction === "sent" ? `to ${list(e.to.map((t) => names.of(t)))}` : `from ${names.of(e.from)}`;
};

/** GET /envelopes */
export async function renderEnvelopes(c: WebContext, m: FormMessages = {}): Promise<Response> {
  if (!signedIn(c.session))
    return page("Your mail", html`<p>Sign in to read your mail.</p>${await signinBlock(c, "account", undefined, { next: "/envelopes" })}`, {
      status: m.status,
    });
  const { envelopes } = await listEnvelopes(await actingAs(c, c.session.agentId), { limit: 50 });
  const to = again(m, "send", "to");
  const subject = again(m, "send", "subject");
  const body = again(m, "send", "body_md");
  return page(
    "Your mail",
    html`${alert(m.error)}${notice(SENT[c.url.searchParams.get("done") ?? ""])}
<p class="muted">Subjects are written by whoever sent each envelope.</p>
${
  envelopes.length
    ? html`<ul class="cards" aria-label="Envelopes">${envelopes.map(
        (e) =>
          html`<li><a href="/envelopes/${e.envelope_id}">${e.subject.untrusted_content}</a><span class="muted">${who(e)} · ${formatTime(e.created_at)}</span></li>`,
      )}</ul>`
    : html`<p>No envelopes yet.</p>`
}
<h2>Send an envelope</h2>
${form(
  "/envelopes/send",
  c.session.csrfToken,
  html`${field("to", "To (handles of your contacts, separated by commas)", { required: true, maxlength: 700, value: to.value, error: to.error ?? firstIssue(m, "to.") })}
${field("subject", "Subject", { required: true, maxlength: 140, value: subject.value, error: subject.error })}
${field("body_md", "Message", { required: true, maxlength: 20000, multiline: true, value: body.value, error: body.error })}`,
  "Send",
  { idempotencyKey: formKey(c, "/envelopes/send") },
)}`,
    { status: m.status },
  );
}

/** GET /envelopes/{envelope_id} */
export async function renderEnvelope(c: WebContext, m: FormMessages = {}): Promise<Response> {
  const envelopeId = c.params.envelope_id ?? "";
  if (!signedIn(c.session))
    return page("An envelope", html`<p>Sign in to read it.</p>${await signinBlock(c, "account", undefined, { next: c.url.pathname })}`, {
      status: m.status ?? 401,
    });
  if (!Uuid.safeParse(envelopeId).success) return notFoundPage();
  // NOT_FOUND for an envelope the human neither sent nor received: the 404 page.
  const e = await getEnvelope(await actingAs(c, c.session.agentId), envelopeId);
  const writer = e.direction === "sent" ? "you" : new Names([e.from, ...e.to]).of(e.from);
  const body = again(m, "reply", "body_md");
  return page(
    e.subject.untrusted_content,
    html`${alert(m.error)}${notice(SENT[c.url.searchParams.get("done") ?? ""])}
<p class="muted">${who(e)} · ${formatTime(e.created_at)} · the subject above was written by ${writer}</p>
${quoteMail(e.body_md.untrusted_content, writer, e.links)}
${
  e.links.length
    ? html`<h2>Links in it</h2><p class="muted">Check where a link leads before you open it: the text around it may say otherwise.</p><ul>${e.links.map((l) => html`<li><strong>${l.domain}</strong>: <code>${l.url}</code></li>`)}</ul>`
    : ""
}
<h2>Reply</h2>
${form(
  `/envelopes/${e.envelope_id}/reply`,
  c.session.csrfToken,
  html`${field("body_md", "Your reply", { required: true, maxlength: 20000, multiline: true, value: body.value, error: body.error })}
${e.direction === "received" && e.to.length > 1 ? html`<label><input type="checkbox" name="all" value="1"> Reply to everyone it was sent to</label>` : ""}`,
  "Send the reply",
  { idempotencyKey: formKey(c, `/envelopes/${e.envelope_id}/reply`) },
)}
<p><a href="/envelopes">All your mail</a></p>`,
    { status: m.status },
  );
}

/** POST /envelopes/send: send_envelope. */
export const postSendEnvelope = toolForm({
  tool: "send_envelope",
  form: "send",
  args: (f) => ({
    to: required(f, "to")
      .split(/[\s,]+/)
      .map((h) => h.replace(/^@/, ""))
      .filter(Boolean),
    subject: required(f, "subject"),
    body_md: required(f, "body_md"),
  }),
  done: () => "/envelopes?done=sent",
  show: renderEnvelopes,
});

/** POST /envelopes/{envelope_id}/reply: reply_envelope, to the sender or to all. */
export const postReplyEnvelope = toolForm({
  tool: "reply_envelope",
  form: "reply",
  args: (f, { envelope_id }) => ({ envelope_id, body_md: required(f, "body_md"), audience: optional(f, "all") ? "all" : "sender" }),
  done: (data) => `/envelopes/${(data.envelope as Envelope).envelope_id}?done=replied`,
  show: renderEnvelope,
});
