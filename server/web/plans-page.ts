// /plans and /plans/{plan_id}: the plans the human organises or is invited to, and one plan with its options, who
// answered what, and (for an invitee) the answer form: yes, no or maybe and the options they can make. Reads are
// list_plans' and get_plan's domain functions as the signed-in agent; the answer is respond_plan through invoke().
import { RESPONSES, type Plan } from "../contract/plans.ts";
import { Uuid } from "../contract/wire.ts";
import { getPlan, listPlans } from "../domain/plans/plans.ts";
import { actingAs, formatTime, notFoundPage, type WebContext } from "./context.ts";
import { alert, field, form, html, Markup, notice, page } from "./html.ts";
import { formKey } from "./form-keys.ts";
import { signedIn } from "./session.ts";
import { signinBlock } from "./signin.ts";
import { listContacts } from "../domain/contacts.ts";
import { again, button, optional, quote, required } from "./web-actions.ts";
import { toolForm, type FormMessages } from "./framework.ts";
import { count, Names } from "./wording.ts";

const when = (p: Plan) => formatTime(p.starts_at);

/** The people of a plan, by their names. */
const names = (p: Plan) => new Names([p.organiser, ...p.invitees.map((i) => i.agent)]);

/** GET /plans */
export async function renderPlans(c: WebContext, m: FormMessages = {}): Promise<Response> {
  if (!signedIn(c.session))
    return page("Your plans", html`<p>Sign in to see your plans.</p>${await signinBlock(c, "account", undefined, { next: "/plans" })}`, { status: m.status });
  const ctx = await actingAs(c, c.session.agentId);
  const { plans } = await listPlans(ctx, { when: "upcoming", limit: 50 });
  return page(
    "Your plans",
    html`${alert(m.error)}
<p><a href="/plans/new">Propose a plan</a></p>
<p class="muted">Titles and places are written by each plan's organiser.</p>
${
  plans.length
    ? html`<ul class="cards" aria-label="Upcoming plans">${plans.map(
        (p) =>
          html`<li><a href="/plans/${p.plan_id}">${p.title.untrusted_content}</a><span class="muted">${when(p)} · ${p.state} · organised by ${p.my_role === "invitee" ? names(p).of(p.organiser) : "you"}${p.my_role === "invitee" ? html` · your answer: ${p.invitees.find((i) => i.agent.agent_id === c.session.agentId)?.response ?? "none yet"}` : ""}</span></li>`,
      )}</ul>`
    : html`<p>No upcoming plans.</p>`
}`,
    { status: m.status },
  );
}

const DONE: Record<string, string> = {
  answered: "Your answer is saved.",
  proposed: "The plan is proposed: the people invited are asked.",
  chosen: "The time is chosen: everyone invited is told.",
};

/** GET /plans/{plan_id} */
export async function renderPlan(c: WebContext, m: FormMessages = {}): Promise<Response> {
  const planId = c.params.plan_id ?? "";
  if (!signedIn(c.session))
    return page("A plan", html`<p>Sign in to see this plan.</p>${await signinBlock(c, "account", undefined, { next: c.url.pathname })}`, {
      status: m.status ?? 401,
    });
  if (!Uuid.safeParse(planId).success) return notFoundPage();
  // NOT_FOUND for a plan the human is neither organiser nor invitee of: the 404 page.
  const { plan } = await getPlan(await actingAs(c, c.session.agentId), planId);
  const me = plan.invitees.find((i) => i.agent.agent_id === c.session.agentId);
  const people = names(plan);
  const by = plan.organiser.agent_id === c.session.agentId ? "you" : people.of(plan.organiser);
  const answered = DONE[c.url.searchParams.get("done") ?? ""];
  // The organiser picks the time once the answers are in; the plan is then scheduled for it.
  const mayChoose = by === "you" && plan.state !== "cancelled";
  const option = (o: Plan["options"][number]) =>
    html`${formatTime(o.starts_at)}${o.ends_at ? html` to ${formatTime(o.ends_at)}` : ""}${o.place ? html`, at “${o.place.untrusted_content}” (place written by ${by})` : ""}`;
  const answerForm =
    me && plan.state !== "cancelled"
      ? form(
          `/plans/${plan.plan_id}/respond`,
          c.session.csrfToken,
          html`<fieldset><legend>Will you come?</legend>${RESPONSES.map(
            (r) =>
              html`<label><input type="radio" name="response" value="${r}"${(m.values?.get("response") ?? me.response) === r ? new Markup(" checked") : ""} required> ${r}</label> `,
          )}${m.issues?.response ? html`<small class="field-error">${m.issues.response}</small>` : ""}</fieldset>
${
  plan.options.length > 1
    ? html`<fieldset><legend>Which options suit you?</legend>${plan.options.map(
        (o) =>
          html`<label><input type="checkbox" name="option_id" value="${o.option_id}"${me.option_ids.includes(o.option_id) ? new Markup(" checked") : ""}> ${option(o)}</label><br>`,
      )}</fieldset>`
    : ""
}`,
          "Send my answer",
          { idempotencyKey: crypto.randomUUID() },
        )
      : "";
  return page(
    "A plan",
    html`${alert(m.error)}${notice(answered)}
${quote(plan.title.untrusted_content, `${by}, the organiser`)}
${plan.description ? quote(plan.description.untrusted_content, by) : ""}
<p>${plan.state === "scheduled" ? "Scheduled" : plan.state === "cancelled" ? "Cancelled" : "Proposed"}; starts ${when(plan)}.${plan.respond_by ? html` Answer by ${formatTime(plan.respond_by)}.` : ""}</p>
<h2>Options</h2>
<ul>${plan.options.map(
      (o) =>
        html`<li>${option(o)}: ${count(o.votes, "vote")}${plan.chosen_option_id === o.option_id ? html` <span class="badge">chosen</span>` : mayChoose ? html` ${button(c, `/plans/${plan.plan_id}/choose`, { option_id: o.option_id }, "Choose this time", { secondary: true, ariaLabel: `Choose this time: ${o.starts_at}` })}` : ""}</li>`,
    )}</ul>
<h2>Answers</h2>
<ul>${plan.invitees.map((i) => html`<li>${i.agent.agent_id === c.session.agentId ? "You" : people.of(i.agent)}: ${i.response ?? "no answer yet"}</li>`)}</ul>
${answerForm}
<p><a href="/plans">All your plans</a></p>`,
    { status: m.status },
  );
}

/** POST /plans/{plan_id}/respond: respond_plan with the answer and the options ticked. */
export const postRespondPlan = toolForm({
  tool: "respond_plan",
  form: "respond",
  args: (f, { plan_id }) => ({ plan_id, response: f.get("response") ?? "", ...(f.getAll("option_id").length ? { option_ids: f.getAll("option_id") } : {}) }),
  done: (_, { plan_id }) => `/plans/${plan_id}?done=answered`,
  show: renderPlan,
});

/** POST /plans/{plan_id}/choose: update_plan choosing one option's time. */
export const postChoosePlan = toolForm({
  tool: "update_plan",
  form: "choose",
  args: (f, { plan_id }) => ({ plan_id, choose_option_id: required(f, "option_id") }),
  done: (_, { plan_id }) => `/plans/${plan_id}?done=chosen`,
  show: renderPlan,
});

/** How many times a new plan offers to choose from on the page (the tool takes up to 10). */
const OPTION_ROWS = 3;

/**
 * A time typed on the page is the reader's local time: app.js sends its UTC value beside it (`${name}_utc`); without
 * script the time is read as UTC, as the form says.
 */
function typedTime(f: URLSearchParams, name: string): string | undefined {
  const utcField = `${name}_utc`;
  const utc = f.get(utcField)?.trim();
  if (utc) return utc;
  const local = f.get(name)?.trim();
  if (!local) return undefined;
  return `${local.length === 16 ? `${local}:00` : local}Z`;
}

/** The field names of the form for the tool's issue paths: options[1].starts_at -> starts_at_1. */
function planIssues(issues: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [path, text] of Object.entries(issues)) {
    const option = /^options(?:\[|\.)(\d+)\]?\.(starts_at|place)$/.exec(path);
    out[option ? `${option[2]}_${option[1]}` : path.replace(/(\[|\.)\d+\]?$/, "")] ??= text;
  }
  return out;
}

/** GET /plans/new: a plan proposed to contacts, with up to three times to choose from. */
export async function renderNewPlan(c: WebContext, m: FormMessages = {}): Promise<Response> {
  if (!signedIn(c.session))
    return page("Propose a plan", html`<p>Sign in to propose a plan.</p>${await signinBlock(c, "account", undefined, { next: "/plans/new" })}`, {
      status: m.status,
    });
  const ctx = await actingAs(c, c.session.agentId);
  const contacts = (await listContacts(ctx, "accepted", 100)).contacts;
  const issues = planIssues(m.issues);
  const v = (name: string) => again(m, "plan", name).value ?? "";
  const picked = new Set(m.form === "plan" ? (m.values?.getAll("invitee") ?? []) : []);
  const people = new Names(contacts.map((x) => x.agent));
  const rows = Array.from({ length: OPTION_ROWS }, (_, i) => {
    const when = `starts_at_${i}`;
    const error = issues[when] ?? (i === 0 ? issues.options : undefined);
    return html`<fieldset><legend>${i === 0 ? "Time" : `Another time (optional)`}</legend>
<label for="f-${when}">Starts</label><input id="f-${when}" name="${when}" type="datetime-local" data-utc="${when}_utc"${i === 0 ? new Markup(" required") : ""} value="${v(when)}"${error ? html` aria-invalid="true" aria-describedby="f-${when}-error"` : ""}>
<input type="hidden" name="${when}_utc" value="">${error ? html`<small id="f-${when}-error" class="field-error">${error}</small>` : ""}
${field(`place_${i}`, "Place", { value: v(`place_${i}`), maxlength: 200, error: issues[`place_${i}`] })}
</fieldset>`;
  });
  const body = contacts.length
    ? form(
        "/plans/new",
        c.session.csrfToken,
        html`${field("title", "What", { value: v("title"), required: true, maxlength: 140, error: issues.title, hint: "Such as “Dinner on Friday”." })}
${field("description", "Details", { value: v("description"), multiline: true, maxlength: 2000, error: issues.description })}
<p class="muted">Times are in your time zone (UTC if this browser runs no script).</p>
${rows}
<fieldset${issues.invitees ? new Markup(' aria-describedby="f-invitees-error"') : ""}><legend>Who is invited</legend>
${issues.invitees ? html`<p id="f-invitees-error" class="field-error">${issues.invitees}</p>` : ""}
${contacts.map(
  (x) =>
    html`<div><input type="checkbox" id="f-invitee-${x.agent.handle}" name="invitee" value="${x.agent.handle}"${picked.has(x.agent.handle) ? new Markup(" checked") : ""}> <label for="f-invitee-${x.agent.handle}">${people.of(x.agent)}</label></div>`,
)}
</fieldset>`,
        "Propose the plan",
        { idempotencyKey: formKey(c, "/plans/new") },
      )
    : html`<p>A plan is proposed to your contacts, and you have none yet. <a href="/contacts">Add a contact</a> first.</p>`;
  return page("Propose a plan", html`${alert(m.error)}${body}<p><a href="/plans">All your plans</a></p>`, { status: m.status });
}

/** POST /plans/new: create_plan with the times given and the contacts ticked. */
export const postNewPlan = toolForm({
  tool: "create_plan",
  form: "plan",
  args: (f) => {
    const options = Array.from({ length: OPTION_ROWS }, (_, i) => ({
      starts_at: typedTime(f, `starts_at_${i}`),
      place: optional(f, `place_${i}`),
    }))
      // The first time is always sent (an empty one is refused beside its field); the others only when given.
      .filter((o, i) => i === 0 || o.starts_at !== undefined)
      .map((o) => ({ ...o, starts_at: o.starts_at ?? "" }));
    const description = f.get("description")?.trim();
    return { title: required(f, "title"), ...(description ? { description } : {}), options, invitees: f.getAll("invitee") };
  },
  done: (data) => `/plans/${data.plan.plan_id}?done=proposed`,
  show: renderNewPlan,
});
