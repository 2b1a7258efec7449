// /plans and /plans/{plan_id}: the plans the human organises or is invited to, and one plan with its options, who
// answered what, and (for an invitee) the answer form: yes, no or maybe and the options they can make. Reads are
// list_plans' and get_plan's domain functions as the signed-in agent; the answer is respond_plan through invoke().
import { RESPONSES, type Plan } from "../contract/plans.ts";
import { Uuid } from "../contract/wire.ts";
import { getPlan, listPlans } from "../domain/plans/plans.ts";
import { actingAs, formatTime, notFoundPage, type WebContext } from "./context.ts";
import { alert, form, html, Markup, notice, page } from "./html.ts";
import { signedIn } from "./session.ts";
import { signinBlock } from "./signin.ts";
import { quote, toolForm, type FormMessages } from "./web-actions.ts";
import { count, Names } from "./wording.ts";

const when = (p: Plan) => formatTime(p.starts_at);

/** The people of a plan, by their names. */
const names = (p: Plan) => new Names([p.organiser, ...p.invitees.map((i) => i.agent)]);

/** GET /plans */
export async function renderPlans(c: WebContext, _param = "", m: FormMessages = {}): Promise<Response> {
  if (!signedIn(c.session))
    return page("Your plans", html`<p>Sign in to see your plans.</p>${await signinBlock(c, "account", undefined, { next: "/plans" })}`, { status: m.status });
  const ctx = await actingAs(c, c.session.agentId);
  const { plans } = await listPlans(ctx, { when: "upcoming", limit: 50 });
  return page(
    "Your plans",
    html`${alert(m.error)}
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

/** GET /plans/{plan_id} */
export async function renderPlan(c: WebContext, planId: string, m: FormMessages = {}): Promise<Response> {
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
  const answered = c.url.searchParams.get("done") === "answered" ? "Your answer is saved." : undefined;
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
<ul>${plan.options.map((o) => html`<li>${option(o)}: ${count(o.votes, "vote")}${plan.chosen_option_id === o.option_id ? html` <span class="badge">chosen</span>` : ""}</li>`)}</ul>
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
  args: (f, plan_id) => ({ plan_id, response: f.get("response") ?? "", ...(f.getAll("option_id").length ? { option_ids: f.getAll("option_id") } : {}) }),
  done: (_, id) => `/plans/${id}?done=answered`,
  show: renderPlan,
});
