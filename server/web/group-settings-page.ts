// /groups/new and /groups/{group_id}/settings: creating a group, and renaming, archiving and inviting a contact to
// one. Reads are the domain's, as the signed-in agent (a group the human is not in is the 404 page); every change is
// one tool call through invoke() as the browser's client (web-actions.ts toolForm).
import { Uuid } from "../contract/wire.ts";
import { groupView } from "../domain/ledger/groups/groups.ts";
import { requireMember } from "../domain/ledger/groups/membership.ts";
import { notFoundPage, type WebContext } from "./context.ts";
import { alert, field, form, html, notice, page, seeOther } from "./html.ts";
import { signedIn } from "./session.ts";
import { formKey } from "./form-keys.ts";
import { again, button, optional, required } from "./web-actions.ts";
import { toolForm, type FormMessages } from "./framework.ts";

const signInFirst = () => seeOther("/groups");

/** GET /groups/new */
export async function renderNewGroup(c: WebContext, m: FormMessages = {}): Promise<Response> {
  if (!signedIn(c.session)) return signInFirst();
  const name = again(m, "create", "name");
  const currency = again(m, "create", "currency");
  return page(
    "New group",
    html`${alert(m.error)}
${form(
  "/groups/new",
  c.session.csrfToken,
  html`${field("name", "Name", { required: true, maxlength: 80, value: name.value, error: name.error, hint: "For example: Lisbon trip, Flat 3B" })}
${field("currency", "Currency", { required: true, maxlength: 3, value: currency.value ?? "EUR", error: currency.error, hint: "The ISO code the group counts in, such as EUR or USD", autocomplete: "off" })}`,
  "Create group",
  { idempotencyKey: formKey(c, "/groups/new") },
)}
<p><a href="/groups">Your groups</a></p>`,
    { status: m.status },
  );
}

/** POST /groups/new: create_group, then the new group's page. */
export const postNewGroup = toolForm({
  tool: "create_group",
  form: "create",
  args: (f) => ({ name: required(f, "name"), currency: required(f, "currency").toUpperCase() }),
  done: (data) => `/groups/${data.group.group_id}`,
  show: renderNewGroup,
});

const DONE: Record<string, string> = {
  renamed: "Renamed.",
  archived: "Archived: the group is read-only until you unarchive it.",
  unarchived: "Unarchived: the group accepts changes again.",
  invited: "Invitation sent. It waits in their inbox until they answer.",
};

/** GET /groups/{group_id}/settings */
export async function renderGroupSettings(c: WebContext, m: FormMessages = {}): Promise<Response> {
  const groupId = c.params.group_id ?? "";
  if (!signedIn(c.session)) return signInFirst();
  if (!Uuid.safeParse(groupId).success) return notFoundPage();
  // NOT_FOUND for a group the human is not in: the page any unknown address gets.
  await requireMember(c.tx, groupId, c.session.agentId);
  const group = await groupView(c.tx, groupId, c.session.agentId);
  m = { info: DONE[c.url.searchParams.get("done") ?? ""], ...m };
  const at = `/groups/${groupId}/settings`;
  const name = again(m, "rename", "name");
  const handle = again(m, "invite", "handle");
  return page(
    `Settings of ${group.name}`,
    html`${alert(m.error)}${notice(m.info)}
<p><a href="/groups/${groupId}">Back to the group</a></p>
<h2>Rename</h2>
${form(at + "/rename", c.session.csrfToken, field("name", "New name", { required: true, maxlength: 80, value: name.value ?? group.name, error: name.error }), "Rename", { idempotencyKey: crypto.randomUUID() })}
<h2>Invite a contact</h2>
${
  group.archived
    ? html`<p>An archived group takes no new members.</p>`
    : form(
        at + "/invite",
        c.session.csrfToken,
        field("handle", "Contact's handle", {
          required: true,
          maxlength: 32,
          value: handle.value,
          error: handle.error,
          autocomplete: "off",
          hint: "They get an invitation in their inbox.",
        }),
        "Send invitation",
        { idempotencyKey: formKey(c, `${at}/invite`) },
      )
}
<h2>${group.archived ? "Unarchive" : "Archive"}</h2>
<p>${group.archived ? "The group is archived: readable, but it takes no expenses, payments, members or changes." : "Archiving makes the group read-only for everyone in it; any member can unarchive it."}</p>
${button(c, at + "/archive", { archived: group.archived ? "false" : "true" }, group.archived ? "Unarchive the group" : "Archive the group", { secondary: true })}`,
    { status: m.status },
  );
}

const settings = (groupId: string, done: string) => `/groups/${groupId}/settings?done=${done}`;

/** POST /groups/{group_id}/settings/rename: update_group with the new name. */
export const postRenameGroup = toolForm({
  tool: "update_group",
  form: "rename",
  args: (f, { group_id }) => ({ group_id, name: required(f, "name") }),
  done: (_, { group_id }) => settings(group_id!, "renamed"),
  show: renderGroupSettings,
});

/** POST /groups/{group_id}/settings/archive: archive_group (archived true or false). */
export const postArchiveGroup = toolForm({
  tool: "archive_group",
  form: "archive",
  args: (f, { group_id }) => ({ group_id, archived: f.get("archived") === "true" }),
  done: (data, { group_id }) => settings(group_id!, data.group.archived ? "archived" : "unarchived"),
  show: renderGroupSettings,
});

/** POST /groups/{group_id}/settings/invite: create_group_invite for a contact's handle. */
export const postInviteContact = toolForm({
  tool: "create_group_invite",
  form: "invite",
  args: (f, { group_id }) => ({ group_id, handle: optional(f, "handle")?.replace(/^@/, "") ?? "" }),
  done: (_, { group_id }) => settings(group_id!, "invited"),
  show: renderGroupSettings,
});
