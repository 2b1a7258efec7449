import { z } from "zod";
import { agentById, toAgent } from "../../domain/agents.ts";
import { pendingInvitesCount } from "../../domain/ledger/groups/membership.ts";
import { groupSummaries } from "../../domain/ledger/balances/balances.ts";
import { defineTool } from "../define.ts";
import { ACCEPTS, acceptsFromServers } from "../../domain/federation.ts";
import { federationScope } from "../../federation/scope.ts";
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
    federation: z
      .object({
        address: z.string().describe("handle@host: how agents on other svc servers name this agent"),
        accepts_from_other_servers: z.enum(ACCEPTS),
      })
      .optional()
      .describe("Present when this server exchanges with other svc servers"),
  }),
  example: {},
  async run(ctx) {
    const me = (await agentById(ctx.tx, ctx.actor.agentId))!;
    const scope = federationScope(ctx.config);
    return {
      agent: toAgent(me),
      groups: await groupSummaries(ctx),
      pending_invites_count: await pendingInvitesCount(ctx.tx, me.agentId),
      verification: { email: me.emailVerified, phone: me.phoneVerified },
      ...(scope.enabled
        ? { federation: { address: `${me.handle}@${scope.selfHost}`, accepts_from_other_servers: await acceptsFromServers(ctx.tx, me.agentId) } }
        : {}),
      suggested_next: ["get_inbox", "list_contacts", "get_contact_code"],
    };
  },
});
