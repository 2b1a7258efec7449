// /contacts: the human's contact code, adding a contact by handle or by code (or, when the server federates, by an
// address or a code of another svc server), answering requests (accept, decline, block), blocking, and the lists. Reads are the domain's (list_contacts' function) as the signed-in agent; every
// change is one tool call through invoke() as the browser's client.
import { formKey } from "./form-keys.ts";
import type { ContactRecord } from "../contract/wire.ts";
import { agentById } from "../domain/agents.ts";
import { listContacts } from "../domain/contacts.ts";
import { remoteAddresses } from "../domain/federation.ts";
import { federationScope } from "../federation/scope.ts";
import { actingAs, type WebContext } from "./context.ts";
import { alert, field, form, html, notice, page } from "./html.ts";
import { signedIn } from "./session.ts";
import { signinBlock } from "./signin.ts";
import { again, button, optional, quote, required } from "./web-actions.ts";
import { toolForm, type FormMessages } from "./framework.ts";
import { nameWithHandle } from "./wording.ts";

const LIST = 100;

const DONE: Record<string, string> = {
  requested: "Request sent. They become your contact when they accept.",
  // A request by a code of another server: only that server knows whose code it is, so nothing is listed until the answer.
  sent: "Request sent to their server. They appear under Contacts when they accept.",
  accepted: "You are now contacts.",
  already_contacts: "You are already contacts.",
  declined: "Declined.",
  blocked: "Blocked. They are not told.",
  code: "Your contact code is ready.",
};

/** GET /contacts */
export async function renderContacts(c: WebContext, m: FormMessages = {}): Promise<Response> {
  if (!signedIn(c.session)) {
    return page("Your contacts", html`<p>Sign in to see your contacts.</p>${await signinBlock(c, "account", undefined, { next: "/contacts" })}`, {
      status: m.status,
    });
  }
  m = { info: DONE[c.url.searchParams.get("done") ?? ""], ...m };
  const ctx = await actingAs(c, c.session.agentId);
  // The code as it is stored: get_contact_code makes one on first use, a write, so a page only offers a button for it.
  const code = (await agentById(c.tx, c.session.agentId))!.contactCode;
  // One after another: the statements share the page's transaction.
  const accepted = (await listContacts(ctx, "accepted", LIST)).contacts;
  const incoming = (await listContacts(ctx, "incoming", LIST)).contacts;
  const outgoing = (await listContacts(ctx, "outgoing", LIST)).contacts;
  const blocked = (await listContacts(ctx, "blocked", LIST)).contacts;
  const handle = again(m, "add-handle", "handle");
  const note = again(m, "add-handle", "note");
  const codeField = again(m, "add-code", "code");
  const addressField = again(m, "add-address", "address");
  const addressNote = again(m, "add-address", "note");
  const federation = federationScope(c.svc.config);
  // Agents of other servers: their display name already ends with their address, which is never added twice.
  const remote = await remoteAddresses(
    c.tx,
    [...accepted, ...incoming, ...outgoing, ...blocked].map((r) => r.agent.agent_id),
  );
  const who = (r: ContactRecord) => {
    const address = remote.get(r.agent.agent_id);
    if (!address)
      return html`<strong>${r.agent.display_name.trim() || `@${r.agent.handle}`}</strong>${r.agent.display_name.trim() ? html` <span class="muted">@${r.agent.handle}</span>` : ""}`;
    const name = r.agent.display_name.endsWith(`(${address})`) ? r.agent.display_name : `${r.agent.display_name} (${address})`;
    return html`<strong>${name}</strong> <span class="badge">on another server</span>`;
  };
  const writer = (r: ContactRecord) => remote.get(r.agent.agent_id) ?? nameWithHandle(r.agent);
  // A button's name: the person by name and handle, so two of the same name are told apart (an agent of another
  // server by its handle here: its name already carries its address, said once on the card).
  const named = (r: ContactRecord) => (remote.has(r.agent.agent_id) ? `@${r.agent.handle}` : nameWithHandle(r.agent));
  return page(
    "Your contacts",
    html`${alert(m.error)}${notice(m.info)}
<h2>Your contact code</h2>
${
  code
    ? html`<p>Whoever has this code can ask to become your contact; you still decide.</p><p class="secret">${code}</p>${
        federation.enabled
          ? html`<p>For someone whose agent is on another svc server, give it with this server's host:</p><p class="secret">${code}@${federation.selfHost}</p>`
          : ""
      }`
    : html`<p>You have no contact code yet. Whoever has it can ask to become your contact; you still decide.</p>${button(c, "/contacts/code", {}, "Make my contact code")}`
}
<h2>Requests to answer</h2>
${
  incoming.length
    ? html`<ul class="cards" aria-label="Requests to answer">${incoming.map(
        (r) => html`<li><span>${who(r)} asks to become your contact.</span>${r.note ? quote(r.note.untrusted_content, writer(r)) : ""}
<div>${button(c, "/contacts/respond", { handle: r.agent.handle, action: "accept" }, "Accept", { ariaLabel: `Accept ${named(r)}` })} ${button(c, "/contacts/respond", { handle: r.agent.handle, action: "decline" }, "Decline", { secondary: true, ariaLabel: `Decline ${named(r)}` })} ${button(c, "/contacts/respond", { handle: r.agent.handle, action: "block" }, "Block", { secondary: true, ariaLabel: `Block ${named(r)}'s request` })}</div></li>`,
      )}</ul>`
    : html`<p>No request waits for you.</p>`
}
<h2>Add a contact</h2>
${form(
  "/contacts/add",
  c.session.csrfToken,
  html`<input type="hidden" name="by" value="handle">${field("handle", "Their handle", { required: true, maxlength: 33, value: handle.value, error: handle.error, autocomplete: "off" })}
${field("note", "A note for them (optional)", { maxlength: 500, value: note.value, error: note.error, hint: "Say who you are: they decide whether to accept." })}`,
  "Send contact request",
  { idempotencyKey: formKey(c, "/contacts/add handle") },
)}
${form(
  "/contacts/add",
  c.session.csrfToken,
  html`<input type="hidden" name="by" value="code">${field("code", "Their contact code", { required: true, maxlength: 120, value: codeField.value, error: codeField.error, autocomplete: "off", hint: federation.enabled ? "Four words they gave you; from someone on another svc server, with its host: word-word-word-word@host" : "Four words they gave you" })}`,
  "Add by code",
  { idempotencyKey: formKey(c, "/contacts/add code") },
)}
${otherServers(c, federation.enabled, addressField, addressNote)}
<h2>Contacts</h2>
${
  accepted.length
    ? html`<ul class="cards" aria-label="Contacts">${accepted.map((r) => html`<li><span>${who(r)}</span><div>${button(c, "/contacts/block", { handle: r.agent.handle }, "Block", { secondary: true, ariaLabel: `Block ${named(r)}` })}</div></li>`)}</ul>`
    : html`<p>No contacts yet.</p>`
}
${outgoing.length ? html`<h2>Requests you sent</h2><ul aria-label="Requests you sent">${outgoing.map((r) => html`<li>${who(r)}: waiting for their answer</li>`)}</ul>` : ""}
${blocked.length ? html`<h2>Blocked</h2><ul aria-label="Blocked">${blocked.map((r) => html`<li>${who(r)}</li>`)}</ul><p class="muted">Adding a blocked handle as a contact unblocks it.</p>` : ""}`,
    { status: m.status },
  );
}

/** Adding an agent of another svc server by its address, or why it cannot be done here. */
function otherServers(c: WebContext, enabled: boolean, address: { value?: string; error?: string }, note: { value?: string; error?: string }) {
  if (!enabled) {
    return html`<h2>Contacts on other servers</h2>
<p>This server does not exchange with other svc servers, so your contacts are people on this server only. Its operator can turn federation on (<code>svc serve --federation allowlist --federation-peers their.host</code>; see <a href="/docs/federation">the federation guide</a>).</p>`;
  }
  return html`<h2>Contacts on other servers</h2>
<p>Someone whose agent is on another svc server can be added by their contact code with its host (above) or by their address. They decide whether to accept; by default an agent accepts requests from other servers only with its code.</p>
${form(
  "/contacts/add",
  c.session.csrfToken,
  html`<input type="hidden" name="by" value="address">${field("address", "Their address on another server", { required: true, maxlength: 300, value: address.value, error: address.error, autocomplete: "off", hint: "handle@host, e.g. bob@b.example" })}
${field("note", "A note for them (optional)", { id: "f-address-note", maxlength: 500, value: note.value, error: note.error, hint: "Say who you are: they decide whether to accept." })}`,
  "Send request to another server",
  { idempotencyKey: formKey(c, "/contacts/add address") },
)}`;
}

const ADD_BY = ["handle", "code", "address"] as const;
const addBy = (f: URLSearchParams | undefined) => ADD_BY.find((by) => by === f?.get("by")) ?? "handle";

/** POST /contacts/add: add_contact by handle or by address (with an optional note), or by code. */
export const postAddContact = toolForm({
  tool: "add_contact",
  form: "add",
  args: (f) => {
    const note = optional(f, "note") ? { note: optional(f, "note") } : {};
    const by = addBy(f);
    if (by === "code") return { code: required(f, "code") };
    if (by === "address") return { address: required(f, "address"), ...note };
    return { handle: required(f, "handle").replace(/^@/, ""), ...note };
  },
  // A request by a code with another server's host names nobody yet (contact: null).
  done: (data) => `/contacts?done=${data.status === "requested" && data.contact === null ? "sent" : data.status}`,
  show: (c, m) => renderContacts(c, { ...m, form: `add-${addBy(m.values)}` }),
});

/** POST /contacts/respond: respond_contact_request (accept, decline or block). */
export const postRespondContact = toolForm({
  tool: "respond_contact_request",
  form: "respond",
  args: (f) => ({ handle: required(f, "handle"), action: required(f, "action") }),
  done: (_, __, f) =>
    `/contacts?done=${({ accept: "accepted", decline: "declined", block: "blocked" } as Record<string, string>)[f.get("action") ?? ""] ?? ""}`,
  show: renderContacts,
});

/** POST /contacts/block: block_contact. */
export const postBlockContact = toolForm({
  tool: "block_contact",
  form: "block",
  args: (f) => ({ handle: required(f, "handle") }),
  done: () => "/contacts?done=blocked",
  show: renderContacts,
});

/** POST /contacts/code: get_contact_code, which makes the code the first time. */
export const postContactCode = toolForm({
  tool: "get_contact_code",
  form: "code",
  args: () => ({}),
  done: () => "/contacts?done=code",
  show: renderContacts,
});
