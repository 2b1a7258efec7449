// Released migrations are frozen: a database already holds them with these checksums, and a server refuses to
// start on a database whose recorded checksum differs from its own file (db/migrate.ts). An edit must fail here,
// in CI, not on an operator's server. A new migration goes in a new file.
//
// When a release ships new migrations, add one line per new migration to RELEASED, together with that release's
// fixture (docs/operations.md, "Release fixtures"); until then the second test fails and prints the new checksum.
import { createClient } from "@libsql/client";
import { describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checksum } from "../../db/migrate.ts";
import { MIGRATIONS } from "../../db/migrations/index.ts";

/** id, name, SHA-256 of the file, for every migration a release has shipped. 0001-0011: release 0.9.0; 0012-0020: 0.10.0; 0021-0025: 0.11.0; 0026-0031: 0.12.0; 0032: 0.13.0; 0033: 0.14.0. */
const RELEASED: readonly [number, string, string][] = [
  [1, "0001_core", "58d9beacdbce2e175831893d80cb1be82f57c2be41a43a0ae57432ea95b9ad2f"],
  [2, "0002_ledger", "559946fe3829a5e648690730f42efe3fce3a7c0af70337e892a958eb61e62a8d"],
  [3, "0003_mail_plans", "245300c3f959f3c41b4389b163e8c99a9f4fc0980d7ea9fc72796813b2d9e4b5"],
  [4, "0004_expenses_extra", "4218884b9937d0aee30e1ad3b70e564629c88277a8140cd43b8afddb226581c0"],
  [5, "0005_ops", "5c63e9b2a57b189391186607e72fe1a59737f8f046ca0e0cb4075c42f22fe044"],
  [6, "0006_auth", "212aa260b2dcf575ef08955d81e6ae75600aa20e7f8068f47c59e43a81135c78"],
  [7, "0007_ledger_pairs", "6ca581439179cb87e7f1fb0e0117674da53359bcffbe5518659cc205908d4754"],
  [8, "0008_inbox_summary", "375bbeda6332661b188b92806118fcfdc49c5d5278e050abb20ffc8901c0f8fe"],
  [9, "0009_attempts", "9a896234f4bd525fc295eaa11d675f5da4f971d1a5632157472aae4f2861ff1b"],
  [10, "0010_merge_and_client_metadata", "d5131ca7900da9920f52b0cb0ad1ff754930be6e7d99d6ac2d6027e6e0829668"],
  [11, "0011_expense_shares_by_group", "32c0046b6134b47203565aab398102e2f68cc673987d90f5a4661f3278879979"],
  [12, "0012_inbox_counts", "7c8ef7f2d6e2a4498566711c5bcd888ef9f96e0d604456bfa511481d05ba8a60"],
  [13, "0013_payment_corrections", "10ce5bd0eade7868817c71cefb909dd9accebc453d6a7f5a28add3fb26620d41"],
  [14, "0014_ledger_totals", "8cfbdc6beb60e1b13f93b468ba0adb57e95934da8aae3003d45866c179fb9826"],
  [15, "0015_inbox_pending_partial", "08f1db56a741d5746c36f6f95f2408beea483838ec954fd1ab20fc68ea58a87c"],
  [16, "0016_web_clients", "d063ed33239de2a455f3f485b9ff41562dde1f80de01f3c71838d790a82547b6"],
  [17, "0017_quota_indexes", "a54458df3752a7fdfaf6030e6235828bf478d02e1dee9e1137952fe3ca08bf45"],
  [18, "0018_export_order", "d39c198736b07e395d9ceaaed176b06bcd667a8c9c3fbada4b83c5d342e680a3"],
  [19, "0019_accounts", "4228082f12376047f7c725c65a92feadddaeee2e32bd9e4aa2487f0aa4d3fead"],
  [20, "0020_people", "d7397899d012e7439fcd0ef6f6129c1a918215b1b01b8ebe7163b551b9ae96f3"],
  [21, "0021_placeholders", "c5ddb0cf5394751d8f047a2e31d05fd4dec5bf00252b7487c4395bafad6bd2f2"],
  [22, "0022_refunds_spending_batches", "6396e3f1409187c923d2a4d4c60b82e42a2fb59bab2caa19100e8495ab295c58"],
  [23, "0023_receipts_rates_series", "2c540be270fdcacb19d36094b50e4ef8d1b2c1d3b13f780dd53c33b40b921df4"],
  [24, "0024_writer_lease", "026fdbae9d31fcbb41a72b9e1850b0682089f275142e3d61453f27a9781cb6a7"],
  [25, "0025_federation", "1d6aa702f9a70d0a15995e56f672575b01accbf21ca208b480f0563bdb147ebb"],
  [26, "0026_federation_trust", "7efab09e7889e88da6a798fc58ff62ee01a04302229d9c5d822b6c2ac4437c6e"],
  [27, "0027_server_settings", "ba138abc78ea9a904e11fa3e97df0a62d33e301871e1e59e6ff602d27f1a7d17"],
  [28, "0028_factor_origins", "c01de6cbd9a2f537e806b59954fd98912c4f8467d32ced431845d6515a653bfd"],
  [29, "0029_limits", "803070f88d7b945eb514a4bea33cdaf023b237189f4bbfacca56fb6e8f1adcc1"],
  [30, "0030_account_deletion", "5f45dbac4698ee779fc0d7421375e650ac21ebd9aa1fd399f403907fc11db7f5"],
  [31, "0031_email", "1ab81000e58f90945e481c7ed6d5d77561555a17c29f03e463f4d8e997498483"],
  [32, "0032_write_conflicts", "1fe140e9bc46e7ec35fd42263fe7764a73a349b7074c929b144cdc5c85fb4885"],
  [33, "0033_group_events", "e1590605ede381e050f29b6fd4a9290e62ab0d10c2300449a7f85cfa85152cfc"],
];

const FIXTURES = join(import.meta.dir, "../fixtures/releases");

describe("released migrations", () => {
  test("are all still in this build, under their number and name, unchanged", async () => {
    const now = await Promise.all(MIGRATIONS.map(async (m): Promise<[number, string, string]> => [m.id, m.name, await checksum(m.sql)]));
    // A released migration edited, renamed, renumbered or removed shows here as a differing line.
    expect(now.slice(0, RELEASED.length)).toEqual([...RELEASED]);
  });

  test("every release fixture recorded exactly the pinned checksums", async () => {
    const pinned = new Map(RELEASED.map(([id, name, sum]) => [id, `${name} ${sum}`]));
    const dir = mkdtempSync(join(tmpdir(), "svc-pins-"));
    for (const f of readdirSync(FIXTURES).filter((n) => n.endsWith(".db"))) {
      // A copy: opening the WAL-mode file where it is would leave -wal and -shm files beside the fixture.
      copyFileSync(join(FIXTURES, f), join(dir, f));
      const db = createClient({ url: `file:${join(dir, f)}` });
      try {
        const rows = (await db.execute("SELECT id, name, checksum FROM _migrations ORDER BY id")).rows;
        for (const r of rows)
          expect({ fixture: f, id: Number(r.id), migration: `${r.name} ${r.checksum}` }).toEqual({
            fixture: f,
            id: Number(r.id),
            migration: pinned.get(Number(r.id))!,
          });
      } finally {
        db.close();
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });
});
