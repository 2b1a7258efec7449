// svc federation: this server's federation keys and the hosts it refuses, for an operator (docs/federation.md).
// The database and the federation code are loaded when a subcommand runs.
import { Command, Option } from "commander";
import { iso } from "../../server/clock.ts";
import { systemClock } from "../../server/clock.ts";
import { parseHosts } from "../../server/config.ts";
import { withAdminDb, withDbOptions } from "../admin-db.ts";
import { EXIT_CODES_HELP, action, emit, example } from "../output.ts";

const jsonOption = () => new Option("--json", "print JSON");

export function federationCommand(): Command {
  const cmd = new Command("federation")
    .description("Federation with other svc servers, for an operator: rotate the signing key, list keys, block or unblock a host")
    .addHelpText("after", example("svc federation rotate-key", "svc federation keys", "svc federation block spam.example") + EXIT_CODES_HELP);
  cmd.addCommand(
    withDbOptions(new Command("rotate-key"))
      .description("Publish a new signing key, used once peers' caches expire (5 minutes); the old key stays published for 24 hours")
      .addOption(new Option("--now", "sign with the new key at once (peers fetch the keys again on an unknown kid)"))
      .addOption(jsonOption())
      .action(
        action(async (o) => {
          const { rotateFederationKey } = await import("../../server/federation/keys.ts");
          const res = await withAdminDb(o, (db) => db.tx((tx) => rotateFederationKey(tx, systemClock.now(), Boolean(o.now))));
          emit(res, Boolean(o.json), (r: typeof res) => `New federation key ${r.kid}, signing from ${r.used_from}.`);
        }),
      ),
  );
  cmd.addCommand(
    withDbOptions(new Command("keys"))
      .description("The keys this server publishes (kid, not before, expiry)")
      .addOption(jsonOption())
      .action(
        action(async (o) => {
          const { publishedKeys } = await import("../../server/federation/keys.ts");
          const keys = await withAdminDb(o, (db) => db.read((tx) => publishedKeys(tx, systemClock.now())));
          emit(keys, Boolean(o.json), (ks: typeof keys) =>
            ks.map((k) => `${k.kid}  from ${new Date(k.nbf * 1000).toISOString()}${k.exp ? `  until ${new Date(k.exp * 1000).toISOString()}` : ""}`).join("\n"),
          );
        }),
      ),
  );
  for (const [name, blocked] of [
    ["block", true],
    ["unblock", false],
  ] as const) {
    cmd.addCommand(
      withDbOptions(new Command(name))
        .description(blocked ? "Refuse every transaction from a host, whatever the mode" : "Take a host off the blocklist")
        .argument("<host>", "the server's host, e.g. spam.example or 127.0.0.1:8702")
        .action(
          action(async (host: string, o) => {
            const [h] = parseHosts(host);
            const [{ eq }, { federationHosts }] = await Promise.all([import("drizzle-orm"), import("../../db/schema/index.ts")]);
            await withAdminDb(o, (db) =>
              db.tx(async (tx) => {
                await tx
                  .insert(federationHosts)
                  .values({ host: h!, blocked, firstSeenAt: iso(systemClock.now()) })
                  .onConflictDoNothing();
                await tx.update(federationHosts).set({ blocked }).where(eq(federationHosts.host, h!));
              }),
            );
            emit({ host: h, blocked }, false, () => `${h} ${blocked ? "blocked" : "unblocked"}.`);
          }),
        ),
    );
  }
  return cmd;
}
