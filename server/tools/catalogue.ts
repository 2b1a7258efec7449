// The explicit list of every tool, in the order clients see it: REST, MCP, OpenAPI, docs and the CLI all read it
// from here. One list, tool by tool: an area has no index of its own that could drift from it.
import { createHash } from "node:crypto";
import type { Tool } from "./define.ts";
import { sharedShape, toolJsonSchema } from "./json-schema.ts";
import { ContactRecord } from "../contract/wire.ts";
import { Group, Invite } from "../contract/groups.ts";
import { Expense, Payment } from "../contract/ledger.ts";
import { Envelope } from "../contract/mail.ts";
import { Plan } from "../contract/plans.ts";
import { madeUpIn } from "./made-up.ts";
import { nearestField } from "./unknown-fields.ts";
import { disconnectClient } from "./identity/disconnect-client.ts";
import { getMe } from "./identity/get-me.ts";
import { listClients } from "./identity/list-clients.ts";
import { registerAgent } from "./identity/register-agent.ts";
import { rotateApiKey } from "./identity/rotate-api-key.ts";
import { updateMe } from "./identity/update-me.ts";
import { addContact } from "./contacts/add-contact.ts";
import { blockContact } from "./contacts/block-contact.ts";
import { getContactCode } from "./contacts/get-contact-code.ts";
import { listContacts } from "./contacts/list-contacts.ts";
import { removeContact } from "./contacts/remove-contact.ts";
import { respondContactRequest } from "./contacts/respond-contact-request.ts";
import { rotateContactCode } from "./contacts/rotate-contact-code.ts";
import { ackInbox } from "./inbox/ack-inbox.ts";
import { getInbox } from "./inbox/get-inbox.ts";
import { joinNetwork } from "./join/join-network.ts";
import { finishJoin } from "./join/finish-join.ts";
import { getSettingsLink } from "./join/get-settings-link.ts";
import { createGroup } from "./groups/create-group.ts";
import { listGroups } from "./groups/list-groups.ts";
import { getGroup } from "./groups/get-group.ts";
import { updateGroup } from "./groups/update-group.ts";
import { archiveGroup } from "./groups/archive-group.ts";
import { createGroupInvite } from "./groups/create-group-invite.ts";
import { respondGroupInvite } from "./groups/respond-group-invite.ts";
import { joinGroup } from "./groups/join-group.ts";
import { leaveGroup } from "./groups/leave-group.ts";
import { removeGroupMember } from "./groups/remove-group-member.ts";
import { openDirectLedger } from "./groups/open-direct-ledger.ts";
import { addExpense } from "./expenses/add-expense.ts";
import { listRecurring } from "./expenses/list-recurring.ts";
import { addAttachment } from "./expenses/add-attachment.ts";
import { listAttachments } from "./expenses/list-attachments.ts";
import { deleteAttachment } from "./expenses/delete-attachment.ts";
import { stopRecurring } from "./expenses/stop-recurring.ts";
import { listExpenses } from "./expenses/list-expenses.ts";
import { getExpense } from "./expenses/get-expense.ts";
import { updateExpense } from "./expenses/update-expense.ts";
import { deleteExpense } from "./expenses/delete-expense.ts";
import { restoreExpense } from "./expenses/restore-expense.ts";
import { respondExpense } from "./expenses/respond-expense.ts";
import { recordPayment } from "./expenses/record-payment.ts";
import { respondPayment } from "./expenses/respond-payment.ts";
import { listPayments } from "./expenses/list-payments.ts";
import { getBalances } from "./expenses/get-balances.ts";
import { getActivity } from "./expenses/get-activity.ts";
import { getSpending } from "./expenses/get-spending.ts";
import { exportGroup } from "./expenses/export-group.ts";
import { sendEnvelope } from "./mail/send-envelope.ts";
import { getEnvelope } from "./mail/get-envelope.ts";
import { replyEnvelope } from "./mail/reply-envelope.ts";
import { listEnvelopes } from "./mail/list-envelopes.ts";
import { createPlan } from "./plans/create-plan.ts";
import { getPlan } from "./plans/get-plan.ts";
import { listPlans } from "./plans/list-plans.ts";
import { respondPlan } from "./plans/respond-plan.ts";
import { updatePlan } from "./plans/update-plan.ts";
import { cancelPlan } from "./plans/cancel-plan.ts";

/**
 * The catalogue, declared once: every tool in its toolset (the parts a client may ask for alone,
 * `/mcp?toolsets=ledger,inbox`, docs/mcp.md), in the order the catalogue lists them.
 */
export const TOOLSETS: Readonly<Record<string, readonly Tool[]>> = {
  // identity and clients; joining an existing handle from another agent, and the human's settings link
  identity: [registerAgent, getMe, updateMe, rotateApiKey, listClients, disconnectClient, joinNetwork, finishJoin, getSettingsLink],
  contacts: [getContactCode, rotateContactCode, addContact, respondContactRequest, listContacts, removeContact, blockContact],
  inbox: [getInbox, ackInbox],
  ledger: [
    // groups and invitations (the ledger's membership side)
    createGroup,
    listGroups,
    getGroup,
    updateGroup,
    archiveGroup,
    createGroupInvite,
    respondGroupInvite,
    joinGroup,
    leaveGroup,
    removeGroupMember,
    openDirectLedger,
    // expenses, payments, balances and history
    addExpense,
    listExpenses,
    getExpense,
    updateExpense,
    deleteExpense,
    restoreExpense,
    respondExpense,
    listRecurring,
    stopRecurring,
    addAttachment,
    listAttachments,
    deleteAttachment,
    recordPayment,
    respondPayment,
    listPayments,
    getBalances,
    getActivity,
    getSpending,
    exportGroup,
  ],
  // envelopes: agent mail
  mail: [sendEnvelope, getEnvelope, replyEnvelope, listEnvelopes],
  plans: [createPlan, getPlan, listPlans, respondPlan, updatePlan, cancelPlan],
};

/** Every tool, in catalogue order. */
export const TOOLS: readonly Tool[] = Object.values(TOOLSETS).flat();

/** The tools of the named toolsets, in catalogue order; an unknown name is an error naming the known ones. */
export function toolsOf(names: readonly string[]): Tool[] {
  const unknown = names.filter((n) => !Object.hasOwn(TOOLSETS, n));
  if (unknown.length) throw new Error(`Unknown toolset ${unknown.map((n) => `'${n}'`).join(", ")}: the toolsets are ${Object.keys(TOOLSETS).join(", ")}.`);
  const wanted = new Set(names.flatMap((n) => TOOLSETS[n]!));
  return TOOLS.filter((t) => wanted.has(t));
}

const byName = new Map(TOOLS.map((t) => [t.name, t]));
export const findTool = (name: string): Tool | undefined => byName.get(name);

/** The tool a wrong name most likely meant (a typo, a missing get_/list_ prefix, another case), or null. */
export function nearestTool(name: string): string | null {
  const wanted = name
    .trim()
    .toLowerCase()
    .replaceAll(/[\s.-]/g, "_");
  const names = TOOLS.map((t) => t.name);
  const close = nearestField(wanted, names);
  if (close) return close;
  // "balances" for get_balances, "add_expenses" for add_expense: one name held in the other, shortest first.
  if (wanted.length < 4) return null;
  const held = names.filter((n) => n.includes(wanted) || wanted.includes(n)).sort((a, b) => a.length - b.length);
  return held[0] ?? null;
}

/** The toolset a tool is in (each is in exactly one). */
export const toolsetOf = (name: string): string | undefined => Object.keys(TOOLSETS).find((set) => TOOLSETS[set]!.some((t) => t.name === name));

// Each shape several tools answer with is declared in full in one tool's output schema (json-schema.ts).
sharedShape(Expense, "The expense", "get_expense");
sharedShape(Group, "The group", "get_group");
sharedShape(Plan, "The plan", "get_plan");
sharedShape(Envelope, "The envelope", "get_envelope");
sharedShape(Payment, "The payment", "list_payments");
sharedShape(Invite, "The invitation", "create_group_invite");
sharedShape(ContactRecord, "The contact", "list_contacts");

export const inputJsonSchema = (t: Tool) => toolJsonSchema(t.input, "input");
/** The input schema with every bound and pattern the server checks, the shared rules' included. */
export const checkedInputJsonSchema = (t: Tool) => toolJsonSchema(t.input, "input", undefined, "checked");
/**
 * A read tool's answer declares every field it carries, shared shapes (an expense, a group, ...) included, as $defs
 * of its own schema. A write tool's answer echoes the object it changed: that shape is the one its read tool
 * declares (an expense as get_expense's answer), named there with its ids, so tools/list stays within its budget.
 */
export const outputJsonSchema = (t: Tool) => toolJsonSchema(t.output, "output", t.isWrite ? t.name : undefined);

/** What GET /v1/tools shows of a tool. */
export function describeTool(t: Tool) {
  return {
    name: t.name,
    title: t.title,
    description: t.description,
    tags: t.tags,
    public: t.isPublic,
    required_scope: t.isPublic ? null : t.scope,
    idempotent: t.idempotent,
    input_schema: inputJsonSchema(t),
    output_schema: outputJsonSchema(t),
    example: { arguments: t.example, made_up: madeUpIn(t.example) },
  };
}

let cached: { tools: ReturnType<typeof describeTool>[]; etag: string } | undefined;
/** The catalogue and its version (a hash of every schema): the ETag changes whenever a tool or field is added. */
export function catalogue() {
  if (!cached) {
    const tools = TOOLS.map(describeTool);
    const etag = `"${createHash("sha256").update(JSON.stringify(tools)).digest("hex").slice(0, 32)}"`;
    cached = { tools, etag };
  }
  return cached;
}
