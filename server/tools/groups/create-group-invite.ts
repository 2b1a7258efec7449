import { z } from "zod";
import { createInvite } from "../../domain/ledger/groups/invites.ts";
import { defineTool } from "../define.ts";
import description from "./create-group-invite.description.md" with { type: "text" };
import { madeUp } from "../made-up.ts";
import { DisplayName, GroupId, handleFrom, Uuid } from "../../contract/wire.ts";
import { Invite } from "../../contract/groups.ts";

export const createGroupInvite = defineTool({
  name: "create_group_invite",
  title: "Invite someone to a group",
  description,
  tags: ["write"],
  // A placeholder's claim code is stored only as a digest: its answer is not kept for a retry to replay.
  shownOnce: (input) => input.name !== undefined || input.member_id !== undefined,
  input: z
    .strictObject({
      group_id: GroupId,
      handle: handleFrom("list_contacts").optional().describe("Whom to invite, from list_contacts"),
      name: DisplayName.optional().describe("A friend without an account, as a placeholder"),
      member_id: Uuid.optional().describe("A placeholder whose claim link expired or was lost: a new link"),
      max_uses: z.number().int().min(1).max(1000).optional().describe("How many may join with the code"),
      expires_at: z.iso.datetime({ offset: true }).optional().describe("When the code stops working"),
    })
    .superRefine((v, ctx) => {
      if ([v.handle, v.name, v.member_id].filter((x) => x !== undefined).length > 1) {
        ctx.addIssue({ code: "custom", path: [v.member_id !== undefined ? "member_id" : "name"], message: "give one of handle, name and member_id" });
      }
      if (v.handle === undefined && v.name === undefined && v.member_id === undefined) return;
      for (const field of ["max_uses", "expires_at"] as const) {
        if (v[field] !== undefined) ctx.addIssue({ code: "custom", path: [field], message: "applies to shareable codes only (leave out handle and name)" });
      }
    }),
  output: z.object({ invite: Invite, message: z.string() }),
  example: { group_id: madeUp("group_id"), max_uses: 5 },
  async run(ctx, input) {
    const res = await createInvite(ctx, input, ctx.config.baseUrl);
    return { ...res, suggested_next: ["get_group"] };
  },
});
