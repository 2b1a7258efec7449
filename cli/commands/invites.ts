import { Command, InvalidArgumentError, Option } from "commander";
import { DAY, MINUTE, iso, later, systemClock } from "../../server/clock.ts";
import type { listPlatformInvites } from "../../server/domain/platform-invites.ts";
import { AppError } from "../../server/errors.ts";
import { positiveInt, withAdminDb, withDbOptions } from "../admin-db.ts";
import { EXIT_CODES_SEE, action, emit, example, table, usageExits } from "../output.ts";

const UNIT_MS: Record<string, number> = { m: MINUTE, h: 60 * MINUTE, d: DAY, w: 7 * DAY };

/** "30m", "12h", "7d", "2w" as milliseconds. */
function duration(v: string): number {
  const m = v.match(/^(\d+)([mhdw])$/);
  if (!m || Number(m[1]) < 1) throw new InvalidArgumentError(`expected a duration like 30m, 12h, 7d or 2w, got "${v}"`);
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}

function note(v: string): string {
  if (v.length > 200 || /[\x00-\x1f\x7f-\x9f]/.test(v)) throw new InvalidArgumentError("at most 200 characters, no control characters");
  return v;
}

type InviteRow = Awaited<ReturnType<typeof listPlatformInvites>>[number];

function toInvite(r: InviteRow, now: Date) {
  const status = r.revokedAt ? "revoked" : r.expiresAt && r.expiresAt <= iso(now) ? "expired" : r.uses >= r.maxUses ? "used up" : "active";
  return { code: r.code, status, uses: r.uses, max_uses: r.maxUses, note: r.note, created_at: r.createdAt, expires_at: r.expiresAt, revoked_at: r.revokedAt };
}

const jsonOption = () => new Option("--json", "print JSON");

export function invitesCommand(): Command {
  const cmd = new Command("invites")
    .description("Platform invite codes for an invite-only server (svc serve --invite-only): register_agent needs one as platform_invite_code")
    .addHelpText(
      "after",
      example("svc invites create --uses 5 --expires 7d --note 'book club'", "svc invites list", "svc invites revoke inv_...") + EXIT_CODES_SEE,
    );

  cmd.addCommand(
    withDbOptions(new Command("create"))
      .description("Create a platform invite code and print it")
      .addOption(new Option("--uses <n>", "how many registrations it admits").default(1).argParser(positiveInt))
      .addOption(new Option("--expires <duration>", "lifetime, e.g. 30m, 12h, 7d, 2w (default: never)").argParser(duration))
      .addOption(new Option("--note <text>", "what it is for (shown by svc invites list)").argParser(note))
      .addOption(jsonOption())
      .addHelpText("after", example("svc invites create --uses 5 --expires 7d --note 'book club'"))
      .action(
        action(async (o) => {
          const { createPlatformInvite } = await import("../../server/domain/platform-invites.ts");
          const now = systemClock.now();
          const opts = { uses: o.uses, expiresAt: o.expires ? later(now, o.expires) : null, note: o.note ?? null };
          const code = await withAdminDb(o, (db) => db.tx((tx) => createPlatformInvite(tx, now, opts)));
          const invite = toInvite({ code, maxUses: opts.uses, uses: 0, note: opts.note, createdAt: iso(now), expiresAt: opts.expiresAt, revokedAt: null }, now);
          emit(
            invite,
            Boolean(o.json),
            (i) =>
              `${i.code}\nadmits ${i.max_uses} registration${i.max_uses === 1 ? "" : "s"}; expires ${i.expires_at ?? "never"}${i.note ? `; note: ${i.note}` : ""}\nPass it to register_agent as platform_invite_code.`,
          );
        }),
      ),
  );

  cmd.addCommand(
    withDbOptions(new Command("list"))
      .description("List platform invite codes, newest first, with their status (active, used up, expired, revoked)")
      .addOption(jsonOption())
      .addHelpText("after", example("svc invites list", "svc invites list --json | jq '.[] | select(.status == \"active\") | .code'"))
      .action(
        action(async (o) => {
          const { listPlatformInvites } = await import("../../server/domain/platform-invites.ts");
          const now = systemClock.now();
          const invites = await withAdminDb(o, (db) => db.tx(async (tx) => (await listPlatformInvites(tx)).map((r) => toInvite(r, now))));
          emit(invites, Boolean(o.json), (list: ReturnType<typeof toInvite>[]) =>
            list.length
              ? table([
                  ["CODE", "STATUS", "USES", "EXPIRES", "NOTE"],
                  ...list.map((i) => [i.code, i.status, `${i.uses}/${i.max_uses}`, i.expires_at ?? "never", i.note ?? ""]),
                ])
              : "No platform invite codes; create one with svc invites create.",
          );
        }),
      ),
  );

  cmd.addCommand(
    withDbOptions(new Command("revoke"))
      .description("Revoke a platform invite code at once; registrations already made stay")
      .argument("<code>", "the code, as svc invites list shows it")
      .addHelpText("after", example("svc invites revoke inv_3xT..."))
      .action(
        action(async (code: string, o) => {
          const { revokePlatformInvite } = await import("../../server/domain/platform-invites.ts");
          const revoked = await withAdminDb(o, (db) => db.tx((tx) => revokePlatformInvite(tx, systemClock.now(), code)));
          if (!revoked)
            throw new AppError(
              "NOT_FOUND",
              `No unrevoked platform invite has the code ${code}.`,
              undefined,
              undefined,
              "svc invites list shows the codes and their status.",
            );
          process.stdout.write(`Revoked ${code}.\n`);
        }),
      ),
  );
  return usageExits(cmd);
}
