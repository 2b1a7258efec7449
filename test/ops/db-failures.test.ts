// Failures of a database server that pass: retried within a bound, then 503 STORAGE_UNAVAILABLE with retry_after;
// a COMMIT that failed is never run again here (whether it committed is unknown); the log names the driver's error.
import { describe, expect, test } from "bun:test";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { SqliteError } from "libsql";
import { retrying } from "../../db/database.ts";
import { atCommit } from "../../db/errors.ts";
import { describeCause, toAppError } from "../../server/errors.ts";

/** What drizzle throws around a driver's error: the statement and its parameters, the driver's error as cause. */
const failedQuery = (cause: Error) => new DrizzleQueryError("SELECT * FROM clients WHERE key_hash = ?", ["secret-hash"], cause);
const driverError = (message: string, code = "") => new SqliteError(message, code, 0);

describe("errors of the database server", () => {
  test("the log line names the driver's own error under drizzle's, never the parameters", () => {
    const text = describeCause(failedQuery(driverError("database is locked", "SQLITE_BUSY")));
    expect(text).toContain("Failed query: SELECT * FROM clients");
    expect(text).toContain("(database: SQLITE_BUSY database is locked)");
    expect(text).not.toContain("secret-hash");
  });

  test.each([
    ["a replica's sync during the primary's log compaction", "SyncError: snapshot not found"],
    ["a primary out of reach", 'WriteDelegation(status: Unavailable, message: "error trying to connect: Connection refused")'],
    ["a busy database server", "SQLITE_BUSY: database is locked"],
    ["a primary gone from under a WebSocket", "HRANA_WEBSOCKET_ERROR: WebSocket connection to 'ws://127.0.0.1:8080/' failed: Failed to connect"],
  ])("%s is 503 STORAGE_UNAVAILABLE with retry_after, not a 500", (_what, message) => {
    expect(toAppError(failedQuery(driverError(message)))).toMatchObject({ code: "STORAGE_UNAVAILABLE", status: 503, retryAfter: 1 });
  });

  test("a transaction that failed for a reason that passes runs again, within a bound", async () => {
    let runs = 0;
    expect(
      await retrying(async () => {
        if (++runs < 3) throw failedQuery(driverError("snapshot not found"));
        return "done";
      }),
    ).toBe("done");
    expect(runs).toBe(3);
    runs = 0;
    const always = retrying(async () => {
      runs++;
      throw failedQuery(driverError("database is locked", "SQLITE_BUSY"));
    });
    await expect(always).rejects.toThrow("Failed query");
    expect(runs).toBe(4);
  });

  test("a COMMIT that failed, or a failure that does not pass, is not run again", async () => {
    for (const err of [atCommit(driverError("stream expired")), driverError("no such table: t")]) {
      let runs = 0;
      await retrying(async () => {
        runs++;
        throw err;
      }).catch(() => {});
      expect(runs).toBe(1);
    }
  });
});
