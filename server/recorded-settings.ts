// What svc serve records of its settings at every start, for the admin commands run beside it: they open the same
// database but not the server's flags (a systemd unit sets --base-url on ExecStart; an admin shell has none of it).
import { serverSettings } from "../db/schema/index.ts";
import type { Tx } from "../db/client.ts";
import { iso } from "./clock.ts";

export interface RecordedSettings {
  /** The public URL every link the server writes starts with. */
  base_url?: string;
}
const KEYS = ["base_url"] as const;

export async function recordSettings(tx: Tx, settings: Required<RecordedSettings>, now: Date): Promise<void> {
  for (const key of KEYS) {
    const value = settings[key];
    await tx
      .insert(serverSettings)
      .values({ key, value, updatedAt: iso(now) })
      .onConflictDoUpdate({ target: serverSettings.key, set: { value, updatedAt: iso(now) } });
  }
}

export async function recordedSettings(tx: Tx): Promise<RecordedSettings> {
  const rows = await tx.select({ key: serverSettings.key, value: serverSettings.value }).from(serverSettings);
  const found: RecordedSettings = {};
  for (const r of rows) if ((KEYS as readonly string[]).includes(r.key)) found[r.key as keyof RecordedSettings] = r.value;
  return found;
}
