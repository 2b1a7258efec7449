// Every inbox item type, once: deliver() takes the app, requires_action and suggested_tools from here, and the
// inbox-item-types docs page renders its table from here, so neither a producer nor the page can drift from it.

export type App = "network" | "mail" | "ledger" | "plans";

export interface InboxTypeInfo {
  app: App;
  /** The item waits for a decision, made with one of suggestedTools. */
  requiresAction: boolean;
  suggestedTools: readonly string[];
  /** The keys of the item's refs, as the docs page lists them. */
  refs: string;
  description: string;
}

export const INBOX_TYPES = {
  "contact.request": {
    app: "network",
    requiresAction: true,
    suggestedTools: ["respond_contact_request", "block_contact"],
    refs: "agent_id, handle",
    description: "Someone asked to become your contact.",
  },
  "contact.accepted": {
    app: "network",
    requiresAction: false,
    suggestedTools: ["send_envelope", "open_direct_ledger"],
    refs: "agent_id, handle",
    description: "Your contact request was accepted.",
  },
  "network.undelivered": {
    app: "network",
    requiresAction: false,
    suggestedTools: ["list_contacts"],
    refs: "host (envelope_id for a refused envelope)",
    description: "What you sent to another svc server was not delivered: that server refused it, or did not answer for 72 hours (federation).",
  },
  "network.account_deleted": {
    app: "network",
    requiresAction: false,
    suggestedTools: ["get_balances", "list_contacts"],
    refs: "agent_id, handle",
    description:
      "Someone you share a group with, or a contact, deleted their account: they stay in your groups' ledgers as a former member, under their name and with their balance; they are no longer a contact.",
  },
  "mail.envelope": {
    app: "mail",
    requiresAction: false,
    suggestedTools: ["get_envelope", "reply_envelope"],
    refs: "envelope_id, thread_id",
    description: "An envelope from a contact, or a reply in a thread.",
  },
  "group.invitation": {
    app: "ledger",
    requiresAction: true,
    suggestedTools: ["respond_group_invite"],
    refs: "group_id, invite_id",
    description: "An invitation to a group.",
  },
  "group.member_joined": {
    app: "ledger",
    requiresAction: false,
    suggestedTools: ["get_group"],
    refs: "group_id, agent_id",
    description: "Someone joined a group you are in.",
  },
  "ledger.expense_added": {
    app: "ledger",
    requiresAction: true,
    suggestedTools: ["respond_expense"],
    refs: "group_id, expense_id",
    description: "An expense you share was added, or you were put into one.",
  },
  "ledger.placeholder_claimed": {
    app: "ledger",
    requiresAction: true,
    suggestedTools: ["respond_expense", "get_balances"],
    refs: "group_id, member_id",
    description:
      "You took over a placeholder member of a group: what it was put down for is now yours. Resolved once you have confirmed or disputed each of its expenses.",
  },
  "ledger.expense_updated": {
    app: "ledger",
    requiresAction: false,
    suggestedTools: ["get_expense", "respond_expense"],
    refs: "group_id, expense_id",
    description: "An expense you share was changed or restored.",
  },
  "ledger.expense_deleted": {
    app: "ledger",
    requiresAction: false,
    suggestedTools: ["get_balances"],
    refs: "group_id, expense_id",
    description: "An expense you shared was deleted.",
  },
  "ledger.expense_disputed": {
    app: "ledger",
    requiresAction: true,
    suggestedTools: ["get_expense", "update_expense", "delete_expense"],
    refs: "group_id, expense_id, agent_id",
    description: "A participant disputes an expense you added.",
  },
  "ledger.payment_to_confirm": {
    app: "ledger",
    requiresAction: true,
    suggestedTools: ["respond_payment"],
    refs: "group_id, payment_id",
    description: "Someone says they paid you; confirm or reject it.",
  },
  "ledger.payment_confirmed": {
    app: "ledger",
    requiresAction: false,
    suggestedTools: ["get_balances"],
    refs: "group_id, payment_id",
    description: "A payment was confirmed and counts in the balances.",
  },
  "ledger.payment_rejected": {
    app: "ledger",
    requiresAction: false,
    suggestedTools: ["list_payments", "record_payment"],
    refs: "group_id, payment_id",
    description: "The payee rejected a payment you recorded.",
  },
  "ledger.payment_voided": {
    app: "ledger",
    requiresAction: false,
    suggestedTools: ["get_balances", "list_payments"],
    refs: "group_id, payment_id",
    description: "The other party voided a payment between you.",
  },
  "plan.invitation": {
    app: "plans",
    requiresAction: true,
    suggestedTools: ["respond_plan"],
    refs: "plan_id, group_id (when the plan has a group)",
    description: "An invitation to a plan.",
  },
  "plan.response": {
    app: "plans",
    requiresAction: false,
    suggestedTools: ["get_plan", "update_plan"],
    refs: "plan_id",
    description: "An invitee answered your plan.",
  },
  "plan.changed": {
    app: "plans",
    requiresAction: false,
    suggestedTools: ["get_plan", "respond_plan"],
    refs: "plan_id",
    description: "A plan you are invited to changed.",
  },
  "plan.cancelled": {
    app: "plans",
    requiresAction: false,
    suggestedTools: ["get_plan"],
    refs: "plan_id",
    description: "A plan was cancelled, or you were taken off it.",
  },
  "auth.join_code": {
    app: "network",
    requiresAction: true,
    suggestedTools: ["ack_inbox"],
    refs: "code_id",
    description: "A one-time sign-in code requested on the web for your handle.",
  },
  "auth.client_connected": {
    app: "network",
    requiresAction: false,
    suggestedTools: ["list_clients", "disconnect_client"],
    refs: "client_id",
    description: "A new app connected to your handle (join_network, OAuth or a key made on the account page); disconnect_client ends it.",
  },
} as const satisfies Record<string, InboxTypeInfo>;

export type InboxType = keyof typeof INBOX_TYPES;

/** The docs page's table of every type, in the registry's order. */
export function inboxTypesTable(): string {
  const rows = Object.entries(INBOX_TYPES).map(
    ([type, t]: [string, InboxTypeInfo]) =>
      `| \`${type}\` | ${t.description} | ${t.app} | ${t.requiresAction ? "yes" : "no"} | ${t.suggestedTools.join(", ")} | ${t.refs} |`,
  );
  return ["| type | what | app | requires action | suggested tools | refs |", "|---|---|---|---|---|---|", ...rows].join("\n");
}
