// svc users: the agents on this server and the people behind them, for an operator: list, disable or enable a
// handle, a one-time link for a person who cannot sign in, and a person's account taken out (export) or deleted.
import { writeFileSync } from "node:fs";
import { Command, Option } from "commander";
import { RESET_LINK_TTL_MS } from "../../server/auth/reset-link-ttl.ts";
import { systemClock } from "../../server/clock.ts";
import { DEFAULTS } from "../../server/config.ts";
import { notFound } from "../../server/errors.ts";
import type { DeletionPlan } from "../../server/domain/account-deletion.ts";
import type { Tx } from "../../db/client.ts";
import { auditAdmin, withAdminDb, withDbOptions } from "../admin-db.ts";
import { CliError, EXIT, EXIT_CODES_SEE, action, emit, example, printable, table, usageError, usageExits } from "../output.ts";

const jsonOption = () => new Option("--json", "print JSON");
const bare = (handle: string) => handle.replace(/^@/, "").toLowerCase();
const day = (t: string | null) => (t ? t.replace("T", " ").slice(0, 16) : "never");

/** What the subcommands run on, loaded when one of them runs (before its transaction), not at every start of svc. */
async function domain() {
  const [{ agentByHandle }, admin, deletion, { exportAccount }, { createResetLink }, { recordedSettings }] = await Promise.all([
    import("../../server/domain/agents.ts"),
    import("../../server/domain/agent-admin.ts"),
    import("../../server/domain/account-deletion.ts"),
    import("../../server/domain/account-export.ts"),
    import("../../server/auth/reset-links.ts"),
    import("../../server/recorded-settings.ts"),
  ]);
  /** The live account with that handle, or NOT_FOUND. */
  const accountOf = async (tx: Tx, handle: string) => {
    const agent = await agentByHandle(tx, handle);
    if (!agent) throw notFound(`Agent @${handle}`);
    return agent;
  };
  /** The base URL given (flag, SVC_BASE_URL, settings file), else the one svc serve recorded at its last start. */
  const baseUrlOf = async (tx: Tx, given: string | undefined): Promise<string> => {
    const url = given ?? (await recordedSettings(tx)).base_url;
    if (url) return url;
    const guess = `http://${DEFAULTS.host}:${DEFAULTS.port}`;
    process.stderr.write(`svc: svc serve has not started on this database yet; the link uses ${guess} (give --base-url for another).\n`);
    return guess;
  };
  return { ...admin, ...deletion, exportAccount, createResetLink, accountOf, baseUrlOf };
}

export function usersCommand(): Command {
  const cmd = new Command("users")
    .description("The agents (handles) on this server, for an operator: list them, disable or enable one, give a person a reset link")
    .addHelpText(
      "after",
      example(
        "svc users list",
        "svc users disable mallory",
        "svc users enable mallory",
        "svc users reset-link alice",
        "svc users export alice -o alice.json",
        "svc users delete mallory",
      ) + EXIT_CODES_SEE,
    );
  cmd.addCommand(resetLinkCommand());
  cmd.addCommand(exportCommand());
  cmd.addCommand(deleteCommand());

  cmd.addCommand(
    withDbOptions(new Command("list"))
      .description("List every handle: display name, created, live clients (keys, OAuth sessions, browsers), last seen")
      .addOption(jsonOption())
      .action(
        action(async (o) => {
          const { listUsers } = await domain();
          const users = await withAdminDb(o, (db) => db.read((tx) => listUsers(tx)));
          emit(users, Boolean(o.json), (rows: typeof users) =>
            rows.length
              ? table([
                  ["HANDLE", "NAME", "CREATED", "CLIENTS", "LAST SEEN", "STATUS"],
                  ...rows.map((u) => [
                    `@${u.handle}`,
                    u.display_name,
                    day(u.created_at),
                    String(u.clients),
                    day(u.last_seen_at),
                    u.disabled_at ? `disabled ${day(u.disabled_at)}` : "active",
                  ]),
                ])
              : "No agents yet.",
          );
        }),
      ),
  );

  cmd.addCommand(
    withDbOptions(new Command("disable"))
      .description("Disable a handle: its API keys, OAuth tokens and browser sessions are refused and it cannot sign in; its data is kept")
      .argument("<handle>", "the handle, with or without @")
      .addOption(jsonOption())
      .addHelpText(
        "after",
        example("svc users disable mallory") +
          "\nOther agents still see the handle in their contacts, groups and ledgers as before. `svc users enable` undoes it;\n" +
          "its keys and sessions then work again (revoke them with `svc keys revoke` to end them for good).\n",
      )
      .action(
        action(async (handle: string, o) => {
          const { setDisabled } = await domain();
          const r = await withAdminDb(o, (db) => db.tx((tx) => setDisabled(tx, bare(handle), systemClock.now())));
          if (r.changed) auditAdmin({ event: "account_disabled", handle: bare(handle) });
          emit({ handle: bare(handle), ...r }, Boolean(o.json), () =>
            r.changed ? `Disabled @${bare(handle)}: its credentials are refused from now on.` : `@${bare(handle)} was already disabled (${r.disabled_at}).`,
          );
        }),
      ),
  );

  cmd.addCommand(
    withDbOptions(new Command("enable"))
      .description("Enable a disabled handle again: its keys and sessions that were not revoked work again")
      .argument("<handle>", "the handle, with or without @")
      .addOption(jsonOption())
      .action(
        action(async (handle: string, o) => {
          const { setDisabled } = await domain();
          const r = await withAdminDb(o, (db) => db.tx((tx) => setDisabled(tx, bare(handle), null)));
          if (r.changed) auditAdmin({ event: "account_enabled", handle: bare(handle) });
          emit({ handle: bare(handle), ...r }, Boolean(o.json), () =>
            r.changed ? `Enabled @${bare(handle)} again.` : `@${bare(handle)} was not disabled; nothing to do.`,
          );
        }),
      ),
  );
  return usageExits(cmd);
}

// Recovery without e-mail: the operator hands the person a link (in person, by a channel they trust).
function resetLinkCommand(): Command {
  return withDbOptions(new Command("reset-link"))
    .description(
      `Print a one-time link that signs the person into /account, where they set a new password or add a passkey (it works once, for ${RESET_LINK_TTL_MS / 60_000} minutes)`,
    )
    .argument("<handle>", "the handle whose person cannot sign in")
    .addOption(new Option("--base-url <url>", "the server's public URL (default: the one svc serve last started with on this database)").env("SVC_BASE_URL"))
    .addOption(new Option("--json", "print JSON"))
    .addHelpText(
      "after",
      example("svc users reset-link alice --base-url https://svc.example.org") +
        "\nGive the link only to the person themselves: whoever opens it first is signed in as the handle. Their other sign-ins keep working.\n",
    )
    .action(
      action(async (handleArg: string, o) => {
        const handle = handleArg.replace(/^@/, "").toLowerCase();
        const { accountOf, baseUrlOf, createResetLink } = await domain();
        const link = await withAdminDb(o, (db) =>
          db.tx(async (tx) => {
            const agent = await accountOf(tx, handle);
            return createResetLink(tx, agent.agentId, (await baseUrlOf(tx, o.baseUrl)).replace(/\/+$/, ""), systemClock.now());
          }),
        );
        emit({ handle, ...link }, Boolean(o.json), (d) => `One-time link for @${handle} (until ${d.expires_at}):\n${d.url}`);
      }),
    );
}

function exportCommand(): Command {
  return withDbOptions(new Command("export"))
    .description(
      "Everything a person has on this server as one JSON file: profile, clients (no secrets), contacts, inbox, mail, plans, and their groups' ledgers",
    )
    .argument("<handle>", "the handle, with or without @")
    .addOption(
      new Option("-o, --out <file>", "write it to this file (made readable by you alone; an existing file is never overwritten) instead of printing it"),
    )
    .addHelpText(
      "after",
      example("svc users export alice -o alice.json") +
        "\nThe format (docs/auth.md, Taking your data out) is what the person downloads on /account. It holds what others wrote\n" +
        "to them (messages, notes, descriptions) as data; no key, token, password or sign-in code.\n",
    )
    .action(
      action(async (handleArg: string, o) => {
        const handle = bare(handleArg);
        const { accountOf, exportAccount } = await domain();
        const doc = await withAdminDb(o, (db) => db.read(async (tx) => exportAccount(tx, systemClock.now(), await accountOf(tx, handle))));
        const text = `${JSON.stringify(doc, null, 2)}\n`;
        if (!o.out) {
          process.stdout.write(text);
          return;
        }
        try {
          writeFileSync(o.out, text, { mode: 0o600, flag: "wx" });
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "EEXIST")
            throw new CliError(EXIT.conflict, `${o.out} exists; it is not overwritten.`, "Name a new file.");
          throw err;
        }
        process.stderr.write(`svc: wrote ${o.out} (${Buffer.byteLength(text)} bytes): the account of @${handle}.\n`);
      }),
    );
}

/** What deleting the account does, in a few lines for the operator. */
function planText(p: DeletionPlan, done: boolean): string {
  const group = (g: DeletionPlan["kept"][number]) => `${g.kind === "direct" ? "direct ledger" : `"${printable(g.name)}"`} (balance ${g.balance})`;
  const lines = [
    done ? `Deleted @${p.handle}.` : `Deleting @${p.handle} (${printable(p.display_name)}) cannot be undone:`,
    p.kept.length ? `- stays as a former member, under their name and with their balance, in ${p.kept.map(group).join(", ")}` : "- shares no group with anyone",
    ...(p.removed.length ? [`- ${done ? "removed" : "removes"}, as nobody else is in them: ${p.removed.map(group).join(", ")}`] : []),
    `- ${done ? "ended" : "ends"} ${p.contacts} contact${p.contacts === 1 ? "" : "s"}, ${p.plans} plan${p.plans === 1 ? "" : "s"} they organised, ${p.envelopes} envelope${p.envelopes === 1 ? "" : "s"} nobody else holds`,
    `- ${done ? "told" : "tells"} ${p.told} ${p.told === 1 ? "person" : "people"} (their groups' other members and their contacts)`,
    `- ${done ? "removed" : "removes"} every key, session, passkey, password, phone and inbox item of theirs; the handle is never given out again`,
  ];
  return lines.join("\n");
}

/** One line typed on stdin (a terminal or a pipe); null when it ends first. */
async function readLine(): Promise<string | null> {
  let text = "";
  for await (const chunk of process.stdin) {
    text += chunk.toString();
    const end = text.indexOf("\n");
    if (end >= 0) return text.slice(0, end).replace(/\r$/, "");
  }
  return text ? text : null;
}

function deleteCommand(): Command {
  return withDbOptions(new Command("delete"))
    .description("Delete a person's account for good: they stay in their groups' ledgers as a named former member; everything else of theirs is removed")
    .argument("<handle>", "the handle, with or without @")
    .addOption(new Option("--yes", "do not ask: delete without the typed confirmation"))
    .addOption(jsonOption())
    .addHelpText(
      "after",
      example("svc users delete mallory", "echo mallory | svc users delete mallory", "svc users delete mallory --yes --json") +
        "\nWithout --yes it shows what will happen and asks for the handle to be typed (on stdin). Balances and the\n" +
        "others' history stay as they were; the other members of their groups and their contacts are told. To take\n" +
        "their data out first: svc users export.\n",
    )
    .action(
      action(async (handleArg: string, o) => {
        const handle = bare(handleArg);
        const { accountOf, deleteAccount, deletionPlan } = await domain();
        const report = await withAdminDb(o, async (db) => {
          if (!o.yes) {
            const plan = await db.read(async (tx) => deletionPlan(tx, await accountOf(tx, handle)));
            process.stderr.write(`${planText(plan, false)}\nType the handle (${handle}) to delete it: `);
            const typed = await readLine();
            if (typed === null || bare(typed.trim()) !== handle) {
              throw usageError(`not confirmed: nothing was deleted.`, `Type ${handle} when asked, or give --yes.`);
            }
          }
          return db.tx(async (tx) => deleteAccount(tx, systemClock.now(), await accountOf(tx, handle)));
        });
        auditAdmin({ event: "account_deleted", handle });
        emit(report, Boolean(o.json), (r: typeof report) => planText(r, true));
      }),
    );
}
