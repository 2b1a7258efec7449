// Everything a person has on this server as one JSON document (svc users export, "Download everything" on /account):
// the profile and how they sign in, their clients, contacts, inbox, mail, plans, and the whole ledger of each group
// they belong to, each part as the tools show it to them. No secret is in it: no key, token, password hash, passkey
// key or sign-in code. The format is documented in docs/auth.md ("Taking your data out"); v1 only grows.
import { and, asc, eq, isNull } from "drizzle-orm";
import type { Tx } from "../../db/client.ts";
import { groupMembers, groups, oidcIdentities, passkeys, passwords } from "../../db/schema/index.ts";
import { listClients } from "../auth/credentials.ts";
import { iso } from "../clock.ts";
import type { DomainContext } from "../contract/principal.ts";
import { toAgent, type AgentRow } from "./agents.ts";
import { listContacts } from "./contacts.ts";
import { acceptsFromServers } from "./federation.ts";
import { exportItems } from "./inbox.ts";
import { jsonText } from "./ledger/exchange/export.ts";
import { getEnvelope, listEnvelopes } from "./mail/envelopes.ts";
import { getPlan, listPlans } from "./plans/plans.ts";

/** What the document says it is, and its version: a reader checks both. */
export const ACCOUNT_EXPORT_FORMAT = "svc-account-export";
export const ACCOUNT_EXPORT_VERSION = 1;

const PAGE = 100;

/** Every page of a paginated read, in order. */
async function all<T>(read: (cursor: string | undefined) => Promise<{ items: T[]; next_cursor: string | null }>): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const { items, next_cursor } = await read(cursor);
    out.push(...items);
    if (next_cursor === null) return out;
    cursor = next_cursor;
  }
}

/** The export's file name. */
export const accountExportFilename = (handle: string, now: Date) => `svc-account-${handle}-${iso(now).slice(0, 10)}.json`;

/** The whole document for the agent, read in the caller's transaction (a read one will do). */
export async function exportAccount(tx: Tx, now: Date, agent: AgentRow) {
  const ctx: DomainContext = { tx, now, actor: { agentId: agent.agentId, handle: agent.handle } };
  const keys = await tx
    .select({ name: passkeys.name, created_at: passkeys.createdAt, last_used_at: passkeys.lastUsedAt })
    .from(passkeys)
    .where(eq(passkeys.agentId, agent.agentId))
    .orderBy(asc(passkeys.createdAt));
  const logins = await tx
    .select({ issuer: oidcIdentities.issuer, email: oidcIdentities.email, email_verified: oidcIdentities.emailVerified, linked_at: oidcIdentities.createdAt })
    .from(oidcIdentities)
    .where(eq(oidcIdentities.agentId, agent.agentId))
    .orderBy(asc(oidcIdentities.createdAt));
  const password = await tx.select({ updated_at: passwords.updatedAt }).from(passwords).where(eq(passwords.agentId, agent.agentId)).get();

  const contacts = [];
  for (const state of ["accepted", "incoming", "outgoing", "blocked"] as const) {
    contacts.push(...(await all(async (cursor) => ((r) => ({ items: r.contacts, next_cursor: r.next_cursor }))(await listContacts(ctx, state, PAGE, cursor)))));
  }
  const envelopeList = await all(async (cursor) =>
    ((r) => ({ items: r.envelopes, next_cursor: r.next_cursor }))(await listEnvelopes(ctx, { limit: PAGE, ...(cursor ? { cursor } : {}) })),
  );
  const mail = [];
  for (const e of envelopeList) mail.push(await getEnvelope(ctx, e.envelope_id));
  const planRows = [];
  for (const when of ["upcoming", "past"] as const) {
    planRows.push(
      ...(await all(async (cursor) =>
        ((r) => ({ items: r.plans, next_cursor: r.next_cursor }))(await listPlans(ctx, { when, limit: PAGE, ...(cursor ? { cursor } : {}) })),
      )),
    );
  }
  const plans = [];
  for (const p of planRows) plans.push(await getPlan(ctx, p.plan_id));

  const mine = await tx
    .select({ g: groups })
    .from(groupMembers)
    .innerJoin(groups, eq(groups.groupId, groupMembers.groupId))
    .where(and(eq(groupMembers.agentId, agent.agentId), isNull(groupMembers.leftAt)))
    .orderBy(asc(groups.createdAt), asc(groups.groupId));
  // Each group's ledger is the document export_group (format json) gives a member.
  const ledgers: unknown[] = [];
  for (const { g } of mine) ledgers.push(JSON.parse(await jsonText(ctx, g)));

  return {
    format: ACCOUNT_EXPORT_FORMAT,
    version: ACCOUNT_EXPORT_VERSION,
    exported_at: iso(now),
    profile: {
      ...toAgent(agent),
      contact_code: agent.contactCode,
      email: agent.email,
      email_verified: agent.emailVerified,
      phone: agent.phoneVerified ? agent.phone : null,
      disabled_at: agent.disabledAt,
      accepts_from_other_servers: await acceptsFromServers(tx, agent.agentId),
    },
    sign_in: {
      password_set_at: password?.updated_at ?? null,
      passkeys: keys,
      identity_provider: logins,
    },
    clients: (await listClients(ctx)).clients,
    contacts,
    inbox: await exportItems(tx, agent.agentId, now),
    mail,
    plans,
    groups: ledgers,
  };
}

export type AccountExport = Awaited<ReturnType<typeof exportAccount>>;
