// The audit trail: one structured line per event that touches who can get into an account (sign-ups, sign-ins and
// failed ones, password and passkey changes, keys made, clients disconnected, accounts disabled or deleted), with the
// client's address (through --trusted-proxy) for tools such as fail2ban. Never a secret: no password, code, key or
// token, only ids, handles and the method.
import type { AuditEntry } from "../contract/audit.ts";
import type { Logger } from "./logs.ts";

/** The line: `"msg":"audit"` at info level, whatever else the log level hides (an audit trail is not debug output). */
export function writeAudit(log: Logger, entry: AuditEntry, clientAddress: string): void {
  log.audit({ ...entry, client_address: clientAddress });
}
