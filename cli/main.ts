#!/usr/bin/env bun
// The one executable: the server, the admin commands and the client, all from one commander root. Each command
// loads what it runs on (the server, the database, the domain) only when it runs, so a command that does not serve
// starts in milliseconds (test/cli/startup.test.ts holds the static imports of this file free of them).
// First, before anything is imported lazily: @simplewebauthn/server needs this polyfill before @peculiar/x509, and
// imports it first, but the bundler runs a lazily loaded module's CommonJS imports after its ES ones (oven-sh/bun#33337).
import "reflect-metadata";
import { Command } from "commander";
import { VERSION } from "../server/version.ts";
import { backupCommand } from "./commands/backup.ts";
import { federationCommand } from "./commands/federation.ts";
import { callCommand } from "./commands/call.ts";
import { completeCommand, completionCommand } from "./commands/completion.ts";
import { importCommand } from "./commands/import.ts";
import { inboxCommand } from "./commands/inbox.ts";
import { invitesCommand } from "./commands/invites.ts";
import { keysCommand } from "./commands/keys.ts";
import { loginCommand, logoutCommand, statusCommand } from "./commands/login.ts";
import { migrateCommand } from "./commands/migrate.ts";
import { restoreCommand } from "./commands/restore.ts";
import { serveCommand } from "./commands/serve.ts";
import { applySettingsFile } from "./settings-file.ts";
import { toolsCommand } from "./commands/tools.ts";
import { usersCommand } from "./commands/users.ts";
import { EXIT, EXIT_CODES_HELP, printable } from "./output.ts";
import { closest } from "./suggest.ts";
import { toolFields } from "./tool-fields.ts";

const program = new Command("svc")
  .description("svc: a self-hosted agent network with a shared-expense ledger")
  .version(VERSION)
  .showHelpAfterError()
  .addHelpText("after", EXIT_CODES_HELP)
  .addCommand(serveCommand())
  .addCommand(migrateCommand())
  .addCommand(backupCommand())
  .addCommand(restoreCommand())
  .addCommand(invitesCommand())
  .addCommand(keysCommand())
  .addCommand(usersCommand())
  .addCommand(federationCommand())
  .addCommand(inboxCommand())
  .addCommand(callCommand())
  .addCommand(toolsCommand())
  .addCommand(importCommand())
  .addCommand(loginCommand())
  .addCommand(logoutCommand())
  .addCommand(statusCommand())
  .addCommand(completionCommand());
program.addCommand(completeCommand(program), { hidden: true });
applySettingsFile(program);

// A mistyped command is one line with the nearest commands, not the whole help. A tool's name, or what follows its
// verb (balances for get_balances), points at `svc call` with that tool.
program.on("command:*", async ([word = ""]: string[]) => {
  const commands = program.commands.filter((c) => c.name() !== "__complete").map((c) => c.name());
  const names = Object.keys(await toolFields());
  const byTail = new Map(names.map((name) => [name.slice(name.indexOf("_") + 1), name]));
  const tools = [...new Set([...closest(word, names), ...closest(word, [...byTail.keys()]).map((tail) => byTail.get(tail)!)])];
  const near = names.includes(word)
    ? [`svc call ${word}`]
    : [...closest(word, commands).map((c) => `svc ${c}`), ...tools.map((t) => `svc call ${t}`)].slice(0, 3);
  const hint = near.length ? ` Did you mean: ${near.join(", ")}?` : " svc --help lists the commands.";
  process.stderr.write(`${printable(`svc: unknown command '${word}'.${hint}`)}\n`);
  process.exit(EXIT.usage);
});

program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(`svc: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
