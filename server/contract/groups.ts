// Wire shapes of groups and invitations, written from the catalogue's "Groups" section.
import { z } from "zod";
import { isCurrency } from "./currencies.ts";
import { AgentRef, GroupSummary, Timestamp, Untrusted, Uuid } from "./wire.ts";

export const CurrencyCode = z.string().refine(isCurrency, "must be an ISO 4217 currency code in capitals, such as EUR");

/**
 * A group member as every answer that names one gives them, the same way in every tool: member_id (what any argument
 * naming a member takes), name, and the agent, null for a placeholder (a friend added by name, with no account and
 * no handle). get_group's members are these fields themselves; elsewhere they are a `member` object (or `from_member`
 * and `to_member`) beside the fields v1 answered with before.
 */
export const MemberRef = z.object({
  member_id: Uuid.describe("How arguments name this member"),
  name: z.string().describe("Display name (a placeholder's too)"),
  agent: AgentRef.nullable().describe("null: a placeholder (no account)"),
});
export type MemberRef = z.infer<typeof MemberRef>;

/** A member as get_group lists them: the member, said as everywhere else (MemberRef), and their place in the group. */
export const GroupMember = MemberRef.extend({
  role: z.enum(["owner", "member"]),
  joined_at: Timestamp,
  balance_minor: z.number().int(),
  balance: z.string(),
});
export type GroupMember = z.infer<typeof GroupMember>;

/** A group as get_group and every tool that changes one returns it: the summary, its settings and members. */
export const Group = GroupSummary.extend({
  created_by: AgentRef,
  created_at: Timestamp,
  updated_at: Timestamp,
  settings: z.object({ simplify_debts: z.boolean(), description: Untrusted.nullable() }),
  members: z.array(GroupMember),
});
export type Group = z.infer<typeof Group>;

export const Invite = z.object({
  invite_id: Uuid,
  group_id: Uuid,
  /** `targeted`: one named agent answers it with respond_group_invite; `code`: anyone holding the code joins with it. */
  kind: z.enum(["targeted", "code", "placeholder"]),
  invitee: AgentRef.nullable(),
  invited_by: AgentRef,
  code: z.string().nullable(),
  state: z.enum(["pending", "accepted", "declined", "revoked"]),
  max_uses: z.number().int(),
  uses: z.number().int(),
  created_at: Timestamp,
  expires_at: Timestamp,
  responded_at: Timestamp.nullable(),
  placeholder: z
    .object({
      member_id: Uuid,
      name: z.string(),
      claim_url: z.string().nullable().describe("The one-time claim link, shown only when the placeholder is made"),
    })
    .nullable()
    .optional()
    .describe("With kind placeholder: the member added by name, and the link to share with them"),
});
export type Invite = z.infer<typeof Invite>;
