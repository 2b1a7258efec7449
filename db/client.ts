// The one way into the database, for everything outside db/: opening (db/open.ts), the Db and its calls
// (db/database.ts), open errors (db/errors.ts) and the query helpers of domain code (db/query.ts).
//
// Queries are written with drizzle; drizzle's sqlite-proxy hands each statement to the handle of the call it runs
// in: at once on a snapshot for a read, into the call's batch for a write.
export type { Orm, RawSql, Row, TxKind } from "./connections.ts";
export { batchOf, remoteRequests, snapshotOf } from "./connections.ts";
export { databaseBusy, DbOpenError, describeUrl, driverCause, transient, WriteConflict } from "./errors.ts";
export { DEFAULT_CONNECT_TIMEOUT_MS, type DbOptions, localFilePath, openDb, selectMode } from "./open.ts";
export { type Db, type DbMode, isReadOnly, type Tx } from "./database.ts";
export {
  allAfterCommit,
  deleteCounted,
  getAfterCommit,
  guard,
  guardChanged,
  jsonEach,
  jsonList,
  NeedsWrite,
  placeholders,
  prepared,
  preparedInsert,
  preparedWrite,
  requireWrite,
  scalar,
  unseenFailure,
  writeFilledLater,
} from "./query.ts";
