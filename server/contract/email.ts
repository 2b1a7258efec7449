// E-mail for people: what an address is, and the kinds of notification a person chooses how to hear of. A leaf, read
// by the domain (server/domain/email/), the pages and the settings alike.
import type { InboxType } from "./inbox-types.ts";

/**
 * An address as svc takes it: one mailbox, at most 254 characters, no display name, and none of the characters that
 * would make it several addresses or a header of its own (spaces, quotes, brackets, commas, control characters).
 */
export const EMAIL_PATTERN = /^[^\s@<>()",;:\\[\]\p{Cc}]{1,64}@(?:[^\s@<>()",;:\\[\]\p{Cc}.]+\.)+[^\s@<>()",;:\\[\]\p{Cc}.]{2,}$/u;

/** The address typed, trimmed; null when it is not one address. */
export function normaliseEmail(typed: string): string | null {
  const address = typed.trim();
  return address.length <= 254 && EMAIL_PATTERN.test(address) ? address : null;
}

/** How addresses are compared: the whole address in lower case (mail servers treat the local part alike in practice). */
export const emailKey = (address: string) => address.toLowerCase();

export const EMAIL_DELIVERIES = ["immediate", "daily", "off"] as const;
export type EmailDelivery = (typeof EMAIL_DELIVERIES)[number];

/**
 * The kinds a person chooses for, in the settings page's order: what each is called there, its inbox item types, and
 * how it is sent until the person chooses. Types not here (sign-in codes, undelivered notices) are never e-mailed.
 */
export const EMAIL_KINDS = {
  expenses: {
    label: "New and changed expenses you share",
    types: ["ledger.expense_added", "ledger.expense_updated", "ledger.expense_deleted"],
    initial: "immediate",
  },
  payments_to_confirm: { label: "Payments to confirm", types: ["ledger.payment_to_confirm"], initial: "immediate" },
  payments: {
    label: "Payments confirmed, rejected or voided",
    types: ["ledger.payment_confirmed", "ledger.payment_rejected", "ledger.payment_voided"],
    initial: "immediate",
  },
  disputes: { label: "Disputed expenses", types: ["ledger.expense_disputed"], initial: "immediate" },
  invitations: {
    label: "Invitations and contact requests, and who joined your groups",
    types: ["group.invitation", "contact.request", "contact.accepted", "group.member_joined"],
    initial: "immediate",
  },
  claims: { label: "Places you took over in a group", types: ["ledger.placeholder_claimed"], initial: "immediate" },
  envelopes: { label: "Mail from your contacts", types: ["mail.envelope"], initial: "daily" },
  plans: { label: "Plans", types: ["plan.invitation", "plan.response", "plan.changed", "plan.cancelled"], initial: "immediate" },
} as const satisfies Record<string, { label: string; types: readonly InboxType[]; initial: EmailDelivery }>;

export type EmailKind = keyof typeof EMAIL_KINDS;
export const isEmailKind = (v: string): v is EmailKind => Object.hasOwn(EMAIL_KINDS, v);

/** The kind an inbox item type is e-mailed as, or undefined: never by e-mail. */
export const EMAIL_KIND_OF: Partial<Record<InboxType, EmailKind>> = Object.fromEntries(
  Object.entries(EMAIL_KINDS).flatMap(([kind, k]) => k.types.map((t) => [t, kind])),
);

/** What a newly added address starts with: each kind as EMAIL_KINDS says. */
export const initialPrefs = (): Record<EmailKind, EmailDelivery> =>
  Object.fromEntries(Object.entries(EMAIL_KINDS).map(([kind, k]) => [kind, k.initial])) as Record<EmailKind, EmailDelivery>;
