// The client-mode settings `svc login` stores, so `svc call` and `svc tools` work without flags.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { EXIT, CliError } from "./output.ts";

export interface StoredConfig {
  url?: string;
  api_key?: string;
}

/** $XDG_CONFIG_HOME/svc/config.json, or ~/.config/svc/config.json (the XDG base directory rules). */
export function configPath(): string {
  const xdg = process.env.XDG_CONFIG_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(homedir(), ".config"), "svc", "config.json");
}

export function readConfig(): StoredConfig {
  const path = configPath();
  if (!existsSync(path)) return {};
  try {
    const c = JSON.parse(readFileSync(path, "utf8"));
    return {
      url: typeof c?.url === "string" ? c.url : undefined,
      api_key: typeof c?.api_key === "string" ? c.api_key : undefined,
    };
  } catch {
    throw new CliError(EXIT.failure, `${path} is not valid JSON.`, "Fix or delete the file, then run `svc login` again.");
  }
}

/** Writes the file readable by its owner only (it holds an API key); returns its path. */
export function writeConfig(c: StoredConfig): string {
  const path = configPath();
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // Written beside and renamed so a reader never sees half a file, and the key is never world-readable for a moment.
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(c, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
  return path;
}
