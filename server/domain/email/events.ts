// Notifications by e-mail are derived from the inbox items as they are written (server/domain/inbox.ts deliverAll, the
// one writer of items), in the same transaction and the same statement's rows: an item whose type has an e-mail kind,
// for an agent whose person confirmed an address and did not turn that kind off, leaves one event here. The job
// runner composes them into e-mails (compose.ts); the agent's inbox is not changed by any of it.
import { sql } from "drizzle-orm";
import { type Tx, preparedWrite } from "../../../db/client.ts";
import { emailAddresses, emailEvents } from "../../../db/schema/index.ts";
import { EMAIL_KIND_OF, EMAIL_KINDS } from "../../contract/email.ts";
import type { InboxType } from "../../contract/inbox-types.ts";

/** What deliverAll adds to an item's row for this statement: its kind, and that kind's delivery until one is chosen. */
export function emailColumns(type: InboxType): [string, string] | [] {
  const kind = EMAIL_KIND_OF[type];
  return kind ? [kind, EMAIL_KINDS[kind].initial] : [];
}

// The rows are deliverAll's: [item_id, agent_id, ..., kind (11), initial delivery (12)]; the join is on the primary key.
const insertEvents = preparedWrite((tx) =>
  tx
    .insert(emailEvents)
    .select(
      sql`SELECT NULL, r.value ->> 1, r.value ->> 0, r.value ->> 12, coalesce(json_extract(m.prefs, '$.' || (r.value ->> 12)), r.value ->> 13) = 'daily', ${sql.placeholder("createdAt")}
FROM json_each(${sql.placeholder("rows")}) r JOIN ${emailAddresses} m ON m.agent_id = r.value ->> 1
WHERE r.value ->> 12 IS NOT NULL AND m.confirmed_at IS NOT NULL AND coalesce(json_extract(m.prefs, '$.' || (r.value ->> 12)), r.value ->> 13) IN ('immediate', 'daily')`,
    )
    .prepare(),
);

/** The events of the items just written (`rows` as deliverAll bound them), in the caller's transaction. */
export async function recordEmailEvents(tx: Tx, rows: string, createdAt: string): Promise<void> {
  await insertEvents(tx).run({ rows, createdAt });
}
