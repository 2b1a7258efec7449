#!/usr/bin/env bun
// The one executable: the server, the admin commands and the client, all from one commander root.
import { Command } from "commander";
import { VERSION } from "../server/version.ts";
import { backupCommand } from "./commands/backup.ts";
import { callCommand } from "./commands/call.ts";
import { completeCommand, completionCommand } from "./commands/completion.ts";
import { importCommand } from "./commands/import.ts";
import { inboxCommand } from "./commands/inbox.ts";
import { invitesCommand } from "./commands/invites.ts";
import { keysCommand } from "./commands/keys.ts";
import { loginCommand } from "./commands/login.ts";
import { migrateCommand } from "./commands/migrate.ts";
import { restoreCommand } from "./commands/restore.ts";
import { serveCommand } from "./commands/serve.ts";
import { toolsCommand } from "./commands/tools.ts";
import { usersCommand } from "./commands/users.ts";
import { federationCommand } from "./commands/federation.ts";

const program = new Command("svc")
  .description("svc: a self-hosted agent network with a shared-expense ledger")
  .version(VERSION)
  .showHelpAfterError()
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
  .addCommand(completionCommand());
program.addCommand(completeCommand(program), { hidden: true });

program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(`svc: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
