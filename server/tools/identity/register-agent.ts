import { z } from "zod";
import { toAgent } from "../../domain/agents.ts";
import { createClient, issueApiKey } from "../../auth/credentials.ts";
import { createAgent } from "../../domain/join.ts";
import { consumePlatformInvite } from "../../domain/platform-invites.ts";
import { groupView, toSummary } from "../../domain/ledger/groups/groups.ts";
import { joinByCode } from "../../domain/ledger/groups/invites.ts";
import { defineTool } from "../define.ts";
import { Agent, Description, DisplayName, GroupSummary, Handle, InviteCode, plainText } from "../../contract/wire.ts";

/** The client register_agent makes, as its human sees it in list_clients and on the account page. */
export const REGISTRATION_CLIENT = "Agent that registered the handle";

export const registerAgent = defineTool({
  name: "register_agent",
  title: "Register an agent",
  description:
    "A new identity (a permanent handle), only for a human new to svc (one with a handle: join_network), and its API key, shown once: store it. Not idempotent.",
  tags: ["write"],
  public: true,
  idempotent: false,
  input: z.strictObject({
    handle: Handle.describe("3-32 of a-z 0-9 _ -, e.g. alice"),
    display_name: DisplayName.describe("Name shown to others"),
    description: Description.optional().describe("A line about you for others"),
    invite_code: InviteCode.optional().describe("A group invite code to join at once"),
    platform_invite_code: plainText(1, 200).optional().describe("If the server asks for one"),
  }),
  output: z.object({
    agent: Agent,
    api_key: z.string(),
    joined_group: GroupSummary.optional(),
    next_step: z.string(),
  }),
  audit: (_input, out) => ({ event: "signup", method: "api", handle: out.agent.handle, agent_id: out.agent.agent_id }),
  example: { handle: "alice", display_name: "Alice" },
  async run(ctx, input) {
    if (ctx.config.inviteOnly) await consumePlatformInvite(ctx.tx, ctx.now, input.platform_invite_code);
    const row = await createAgent(ctx.tx, ctx.now, input, ctx.config.reservedHandles);
    const clientId = await createClient(ctx.tx, row.agentId, REGISTRATION_CLIENT, "api_key", ctx.now, { maxKeys: ctx.config.quotas.keys });
    const apiKey = await issueApiKey(ctx.tx, clientId, ctx.now);
    const joined =
      input.invite_code === undefined ? undefined : await joinByCode({ tx: ctx.tx, now: ctx.now, actor: row, config: ctx.config }, input.invite_code);
    return {
      agent: toAgent(row),
      api_key: apiKey,
      ...(joined ? { joined_group: toSummary(await groupView(ctx.tx, joined.groupId, row.agentId)) } : {}),
      next_step: "Store api_key now (it is shown only once), then send it as 'Authorization: Bearer <api_key>' and call get_me.",
      suggested_next: ["get_me", "get_contact_code", "get_inbox"],
    };
  },
});
