// The server's settings file, read by svc serve and every admin command alike, so an admin shell finds the same
// database (and base URL) as the running server: /etc/svc/svc.toml, or the path in SVC_CONFIG. Each key is a long
// flag's name (db, base-url, invite-only; base_url works too) and `[quota]` holds --quota's names. Flags win, then
// environment variables, then the file, then the built-in defaults.
import { type Command, InvalidArgumentError, type Option } from "commander";
import { existsSync, readFileSync } from "node:fs";
import { parseQuotas } from "../server/config.ts";
import { CliError, EXIT, action } from "./output.ts";

export const DEFAULT_SETTINGS_FILE = "/etc/svc/svc.toml";

type Value = string | number | boolean | Record<string, unknown> | unknown[];

/** SVC_CONFIG's file (which must exist), else /etc/svc/svc.toml when there is one, else none. */
export function settingsFilePath(env: Record<string, string | undefined> = process.env): string | null {
  const named = env.SVC_CONFIG;
  if (named) {
    if (!existsSync(named)) throw new CliError(EXIT.usage, `SVC_CONFIG names ${named}, which does not exist.`, "Create it, or unset SVC_CONFIG.");
    return named;
  }
  return existsSync(DEFAULT_SETTINGS_FILE) ? DEFAULT_SETTINGS_FILE : null;
}

/** The file's settings by flag name (dashes, as on the command line). */
export function readSettingsFile(path: string): Map<string, Value> {
  let parsed: Record<string, unknown>;
  try {
    parsed = Bun.TOML.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (err) {
    throw new CliError(
      EXIT.usage,
      `${path} is not valid TOML: ${err instanceof Error ? err.message : String(err)}`,
      "Fix the file (svc serve --help lists the settings).",
    );
  }
  return new Map(Object.entries(parsed).map(([key, value]) => [key.replaceAll("_", "-"), value as Value]));
}

const flagName = (o: Option) => o.long?.replace(/^--/, "");

function allFlagNames(cmd: Command, into = new Set<string>()): Set<string> {
  for (const o of cmd.options) if (!o.hidden && flagName(o)) into.add(flagName(o)!);
  for (const sub of cmd.commands) allFlagNames(sub, into);
  return into;
}

/**
 * Fills every option of the command about to run that neither a flag nor an environment variable set from the
 * settings file. A key no command knows is refused, naming the file, so a typo does not pass for a default.
 */
export function applySettingsFile(program: Command, env: Record<string, string | undefined> = process.env): void {
  program.hook(
    "preAction",
    action(async (_root: Command, command: Command) => fillFromFile(program, command, env)),
  );
}

function fillFromFile(program: Command, command: Command, env: Record<string, string | undefined>): void {
  const path = settingsFilePath(env);
  if (!path) return;
  const settings = readSettingsFile(path);
  const known = allFlagNames(program);
  for (const key of settings.keys()) {
    if (!known.has(key))
      throw new CliError(
        EXIT.usage,
        `${path}: unknown setting "${key}".`,
        "Its keys are the long flags of svc serve and the admin commands (svc serve --help).",
      );
  }
  for (const option of command.options) {
    const name = flagName(option);
    if (!name || !settings.has(name)) continue;
    const attribute = option.attributeName();
    const source = command.getOptionValueSource(attribute);
    if (source === "env" || (source === "cli" && name !== "quota")) continue;
    command.setOptionValueWithSource(
      attribute,
      fromFile(path, option, settings.get(name)!, command.getOptionValue(attribute), source === "cli", env),
      "config",
    );
  }
}

function fromFile(path: string, option: Option, value: Value, current: unknown, givenAsFlag: boolean, env: Record<string, string | undefined>): unknown {
  const name = flagName(option)!;
  const wrong = (what: string) => new CliError(EXIT.usage, `${path}: ${name} ${what}.`, `svc serve --help describes --${name}.`);
  if (!option.required && !option.optional) {
    if (typeof value !== "boolean") throw wrong("must be true or false");
    return value;
  }
  if (name === "quota") return quotasFromFile(value, current, givenAsFlag, env, wrong);
  if (typeof value === "object") throw wrong("must be a single value");
  try {
    return option.parseArg ? option.parseArg(String(value), undefined) : String(value);
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw wrong(`is not valid: ${err.message}`);
    throw err;
  }
}

// [quota] name = value: name by name, flags over SVC_QUOTAS over the file.
function quotasFromFile(value: Value, fromFlags: unknown, givenAsFlag: boolean, env: Record<string, string | undefined>, wrong: (what: string) => CliError) {
  if (typeof value !== "object" || Array.isArray(value)) throw wrong("must be a table ([quota] with name = number lines)");
  let file: Record<string, unknown>;
  try {
    file = parseQuotas(
      Object.entries(value)
        .map(([k, v]) => `${k}=${v}`)
        .join(","),
    );
  } catch (err) {
    throw wrong(`is not valid: ${err instanceof Error ? err.message : String(err)}`);
  }
  const fromEnv = env.SVC_QUOTAS ? parseQuotas(env.SVC_QUOTAS) : {};
  for (const k of Object.keys(fromEnv)) delete file[k];
  return { ...file, ...(givenAsFlag ? (fromFlags as object) : {}) };
}
