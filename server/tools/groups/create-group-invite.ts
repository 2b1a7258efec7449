import { z } from "zod";
import { createInvite } from "../../domain/ledger/groups/invites.ts";
import { defineTool } from "../define.ts";
import { Handle, Uuid } from "../../contract/wire.ts";
import { Invite } from "../../contract/groups.ts";

export const createGroupInvite = defineTool({
  name: "create_group_invite",
  title: "Invite someone to a group",
  description:
    "With handle (an accepted contact, or a member of another group you belong to): a targeted invitation that lands in their inbox for them to accept or decline. Without handle: a shareable invite_code (usable with join_group, register_agent and join_network) that works until expires_at (RFC 3339; default 7 days, at most 365) for max_uses people (1-1000, default 10); message is ready to forward. Ask your human before inviting anyone. Not for direct ledgers or archived groups (CONFLICT).",
  tags: ["write"],
  input: z
    .strictObject({
      group_id: Uuid,
      handle: Handle.optional(),
      max_uses: z.number().int().min(1).max(1000).optional(),
      expires_at: z.iso.datetime({ offset: true }).optional(),
    })
    .superRefine((v, ctx) => {
      if (v.handle === undefined) return;
      for (const field of ["max_uses", "expires_at"] as const) {
        if (v[field] !== undefined) ctx.addIssue({ code: "custom", path: [field], message: "applies to shareable codes only (leave out handle)" });
      }
    }),
  output: z.object({ invite: Invite, message: z.string() }),
  async run(ctx, input) {
    const res = await createInvite(ctx, input);
    return { ...res, suggested_next: ["get_group"] };
  },
});
