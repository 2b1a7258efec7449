// What the audit trail records (server/observability/audit.ts writes it): the events that touch who can get into an
// account. Tools declare theirs (ToolSpec.audit); pages and admin commands name theirs where they happen.
export const AUDIT_EVENTS = [
  "signup",
  "signin",
  "signin_failed",
  "password_changed",
  "passkey_added",
  "key_created",
  "client_disconnected",
  "account_disabled",
  "account_enabled",
  "account_deleted",
] as const;
export type AuditEvent = (typeof AUDIT_EVENTS)[number];

export interface AuditEntry {
  event: AuditEvent;
  /** How: password, passkey, code (an inbox code), phone, provider, reset_link, api, join, merge. */
  method?: string;
  /** The handle asked for (as typed, for a failed sign-in), or the account's. */
  handle?: string;
  agent_id?: string;
  /** The client made, used or ended. */
  client_id?: string;
  /** Why a sign-in failed: wrong_password, unknown_passkey, wrong_code, rate_limited. */
  reason?: string;
}
