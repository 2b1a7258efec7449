import { z } from "zod";
import { agentById, toAgent } from "../../domain/agents.ts";
import { pendingInvitesCount } from "../../domain/ledger/groups/membership.ts";
import { groupSummaries } from "../../domain/ledger/balances/balances.ts";
import { defineTool } from "../define.ts";
import { Agent, EMPTY, GroupSummary, Verification } from "../../contract/wire.ts";

export const getMe = defineTool({
  name: "get_me",
  title: "Who am I",
  description: "Your profile, groups with your balance in each, pending invitations. A good first call.",
  tags: ["read"],
  input: EMPTY,
  output: z.object({
    agent: Agent,
    groups: z.array(GroupSummary),
    pending_invites_count: z.number().int(),
    verification: Verification,
  }),
  example: {},
  async run(ctx) {
    const me = (await agentById(ctx.tx, ctx.actor.agentId))!;
    return {
      agent: toAgent(me),
      groups: await groupSummaries(ctx),
      pending_invites_count: await pendingInvitesCount(ctx.tx, me.agentId),
      verification: { email: me.emailVerified, phone: me.phoneVerified },
      suggested_next: ["get_inbox", "list_contacts", "get_contact_code"],
    };
  },
});
