import { Command, Option } from "commander";
import { writeConfig } from "../config-file.ts";
import { EXIT_CODES_HELP, action, example, usageExits } from "../output.ts";
import { DEFAULT_URL, request } from "../remote.ts";

export function loginCommand(): Command {
  return usageExits(
    new Command("login")
      .description("Check an API key against a server and store both in the user's config directory, so svc call needs no flags")
      .addOption(new Option("--key <key>", "the API key (from register_agent, finish_join or rotate_api_key)").env("SVC_API_KEY").makeOptionMandatory())
      .addOption(new Option("--url <url>", "server URL").env("SVC_URL").default(DEFAULT_URL))
      .addHelpText(
        "after",
        example("svc login --key svc_... --url https://svc.example.org", "svc call get_me") +
          "\nThe file is $XDG_CONFIG_HOME/svc/config.json (else ~/.config/svc/config.json), readable by you only (mode 600).\n" +
          "Flags and SVC_URL / SVC_API_KEY override it; the stored key is sent only to the stored URL.\n" +
          EXIT_CODES_HELP,
      )
      .action(
        action(async (o: { key: string; url: string }) => {
          const target = { url: o.url.replace(/\/+$/, ""), key: o.key };
          // A key that does not work is refused rather than stored.
          const me = await request(target, "GET", "/v1", { auth: true });
          const path = writeConfig({ url: target.url, api_key: target.key });
          process.stdout.write(`Logged in to ${target.url} as @${me.agent.handle}; saved to ${path}\n`);
        }),
      ),
  );
}
