// svc login, logout and status: the stored URL and key that client commands use, like gh auth.
import { Command, Option } from "commander";
import { hostname } from "node:os";
import { configPath, readConfig, writeConfig } from "../config-file.ts";
import { CliError, EXIT, EXIT_CODES_SEE, action, emit, example, printable, usageExits } from "../output.ts";
import { DEFAULT_URL, type Target, callTool, withJsonOutput, keyOption, request, resolveTarget, urlOption, wantsJson } from "../remote.ts";

const trimUrl = (url: string) => url.replace(/\/+$/, "");
const say = (line: string) => process.stderr.write(`${printable(line)}\n`);

/** This machine's name as the human will see the client on /account (join_network's client_name: 1-40 chars). */
const defaultClientName = () => `svc CLI on ${hostname().replace(/[^\x20-\x7e]/g, "")}`.slice(0, 40).trim();

/**
 * Opens the page in the browser when there is one to open it in (a display on Linux, macOS); never fails:
 * the URL is printed either way. Answers whether a browser was started.
 */
function openBrowser(url: string): boolean {
  const opener =
    process.platform === "darwin" ? "open" : process.platform === "linux" && (process.env.DISPLAY || process.env.WAYLAND_DISPLAY) ? "xdg-open" : null;
  if (!opener || !Bun.which(opener)) return false;
  try {
    Bun.spawn([opener, url], { stdin: "ignore", stdout: "ignore", stderr: "ignore" }).unref();
    return true;
  } catch {
    return false;
  }
}

/**
 * The device flow of join_network: the human confirms the handle on the page while this polls finish_join at the
 * server's interval (longer after RATE_LIMITED, the slow_down of the protocol); answers the new API key.
 */
async function joinFlow(target: Target, o: { name?: string; handle?: string; browser: boolean }): Promise<string> {
  const join = await callTool(target, "join_network", {
    client_name: o.name ?? defaultClientName(),
    ...(o.handle ? { suggested_handle: o.handle } : {}),
  });
  say(`To connect this svc to your handle, open ${join.enter_url}`);
  say(`and check that the page shows the code ${join.user_code} (it works until ${join.expires_at}).`);
  say(
    o.browser && openBrowser(join.enter_url)
      ? "Opened the page in your browser."
      : "Open the page in a browser (on any device); there you sign in to your handle, or create one.",
  );
  say("Waiting for you to confirm there...");
  let interval = Number(join.interval_seconds) || 5;
  let unreachable = 0;
  for (;;) {
    await Bun.sleep(interval * 1000);
    let poll: Record<string, any>;
    try {
      poll = await callTool(target, "finish_join", { poll_token: join.poll_token });
      unreachable = 0;
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      if (err.exitCode === EXIT.rateLimited) {
        interval += 5;
        continue;
      }
      // A server restarting for a moment does not cost the human the code they are typing.
      if (err.exitCode === EXIT.server && ++unreachable < 3) continue;
      throw err;
    }
    if (poll.status === "pending") continue;
    if (poll.status === "connected" && typeof poll.api_key === "string") return poll.api_key;
    if (poll.status === "denied") throw new CliError(EXIT.auth, "the connection was refused on the page.", "Run svc login again to start over.");
    if (poll.status === "expired") throw new CliError(EXIT.auth, "the code expired before it was confirmed.", "Run svc login again for a new code.");
    throw new CliError(EXIT.server, "the join session was already finished and its key handed out.", "Run svc login again.");
  }
}

export function loginCommand(): Command {
  return usageExits(
    new Command("login")
      .description("Connect this svc to your handle and store the API key, so client commands need no flags")
      .addOption(new Option("--key <key>", "an API key to store (from register_agent or the account page); without it, svc runs the join").env("SVC_API_KEY"))
      .addOption(urlOption())
      .addOption(new Option("--no-browser", "print the page to open, do not open a browser"))
      .addOption(new Option("--name <name>", "the name this client gets on your account page (default: svc CLI on HOST)"))
      .addOption(new Option("--handle <handle>", "the handle the page suggests if you create a new one"))
      .addHelpText(
        "after",
        example("svc login --url https://svc.example.org", "svc login --key svc_... --url https://svc.example.org", "svc status") +
          "\nWithout --key: join_network starts a join; open the page it prints (svc opens your browser when it can),\n" +
          "check the code, sign in to your handle or create one, and svc polls finish_join until you have confirmed.\n" +
          "With --key (or SVC_API_KEY): the key is checked, then stored.\n" +
          "The file is $XDG_CONFIG_HOME/svc/config.json (else ~/.config/svc/config.json), readable by you only (mode 600).\n" +
          "Flags and SVC_URL / SVC_API_KEY override it; the stored key is sent only to the stored URL.\n" +
          EXIT_CODES_SEE,
      )
      .action(
        action(async (o: { key?: string; url?: string; browser: boolean; name?: string; handle?: string }) => {
          const url = trimUrl(o.url ?? readConfig().url ?? DEFAULT_URL);
          const key = o.key ?? (await joinFlow({ url }, o));
          // A key that does not work is refused rather than stored.
          const me = await request({ url, key }, "GET", "/v1", { auth: true });
          const path = writeConfig({ url, api_key: key });
          process.stdout.write(`Logged in to ${url} as @${me.agent.handle}; saved to ${path}\n`);
        }),
      ),
  );
}

export function logoutCommand(): Command {
  return usageExits(
    new Command("logout")
      .description("Forget the stored API key (the URL stays); the key itself keeps working until disconnected on the server")
      .addHelpText(
        "after",
        example("svc logout") +
          "\nThe key is only removed from this machine. To end it on the server too, disconnect the client on\n" +
          "the server's /account page, or with disconnect_client from another client of your handle.\n" +
          EXIT_CODES_SEE,
      )
      .action(
        action(async () => {
          const stored = readConfig();
          if (!stored.api_key) throw new CliError(EXIT.failure, `not logged in: ${configPath()} holds no key.`, "svc login stores one.");
          const path = writeConfig({ url: stored.url });
          process.stdout.write(`Logged out of ${stored.url ?? DEFAULT_URL}: removed the key from ${path}.\n`);
          process.stdout.write(`The key still works until its client is disconnected on ${stored.url ?? DEFAULT_URL}/account.\n`);
        }),
      ),
  );
}

/** What svc status finds: each part null when it could not be found out, with why in `problem`. */
interface Status {
  url: string;
  config_file: string;
  key_from: "flag or SVC_API_KEY" | "config file" | null;
  reachable: boolean;
  agent: { handle: string; display_name: string; agent_id: string } | null;
  client: { client_id: string; name: string; kind: string; created_at: string; last_used_at: string | null } | null;
  problem: string | null;
}

function statusText(s: Status): string {
  return [
    `server: ${s.url} (${s.reachable ? "reachable" : "not reachable"})`,
    `logged in as: ${s.agent ? `@${s.agent.handle} (${s.agent.display_name})` : "-"}`,
    `key: ${s.key_from ? `from the ${s.key_from}` : "none"}${s.client ? `; client "${s.client.name}" (${s.client.kind}, made ${s.client.created_at.slice(0, 10)})` : ""}`,
    `config file: ${s.config_file}`,
    ...(s.problem ? [`problem: ${s.problem}`] : []),
  ]
    .map(printable)
    .join("\n");
}

export function statusCommand(): Command {
  return usageExits(
    withJsonOutput(new Command("status"))
      .description("Show which server the client commands use, whether it answers, who you are there and the key's client")
      .addOption(urlOption())
      .addOption(keyOption())
      .addHelpText("after", `${example("svc status", "svc status --url https://svc.example.org")}${EXIT_CODES_SEE}`)
      .action(
        action(async (o: { url?: string; key?: string; jsonOut?: boolean }) => {
          const target = resolveTarget(o);
          const s: Status = {
            url: target.url,
            config_file: configPath(),
            key_from: o.key ? "flag or SVC_API_KEY" : target.key ? "config file" : null,
            reachable: false,
            agent: null,
            client: null,
            problem: null,
          };
          let failure: CliError | undefined;
          try {
            await request(target, "GET", "/v1/tools/get_me");
            s.reachable = true;
            if (!target.key) throw new CliError(EXIT.auth, "no API key for this server.", `svc login --url ${target.url} stores one.`);
            const me = await callTool(target, "get_me", {}, true);
            s.agent = { handle: me.agent.handle, display_name: me.agent.display_name, agent_id: me.agent.agent_id };
            const { clients } = await callTool(target, "list_clients", { limit: 100 }, true);
            const c = clients.find((x: Record<string, unknown>) => x.current);
            if (c) s.client = { client_id: c.client_id, name: c.name, kind: c.kind, created_at: c.created_at, last_used_at: c.last_used_at };
          } catch (err) {
            if (!(err instanceof CliError)) throw err;
            failure = err;
            s.problem = [err.message, err.suggestedAction].filter(Boolean).join(" ");
          }
          emit(s, wantsJson(o), statusText);
          if (failure) process.exit(failure.exitCode);
        }),
      ),
  );
}
