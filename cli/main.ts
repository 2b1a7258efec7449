#!/usr/bin/env bun
// The one executable: the server, the admin commands and the client, all from one commander root.
import { Command } from "commander";
import { serveCommand } from "./commands/serve.ts";

const program = new Command("svc")
  .description("svc: a self-hosted agent network with a shared-expense ledger")
  .version("0.9.0")
  .showHelpAfterError()
  .addCommand(serveCommand());

program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(`svc: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
