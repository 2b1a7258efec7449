// The one way into the database, for everything outside db/: opening (db/open.ts), the pool and its transactions
// (db/pool.ts), open errors (db/errors.ts) and the query helpers of domain code (db/query.ts).
//
// Queries are written with drizzle; drizzle's sqlite-proxy hands each statement's SQL to the connection
// that runs the transaction, which keeps every statement prepared once and reuses it.
export type { Orm, RawSql, Row, TxKind } from "./connections.ts";
export { Gate, remoteRequests, remoteSockets, remoteStatements, sendAhead } from "./connections.ts";
export { databaseBusy, DbOpenError, describeUrl, driverCause, transient } from "./errors.ts";
export { DEFAULT_CONNECT_TIMEOUT_MS, type DbOptions, localFilePath, openDb, selectMode } from "./open.ts";
export { type Db, type DbMode, isReadOnly, type Tx } from "./pool.ts";
export {
  allOnCommit,
  getOnCommit,
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
} from "./query.ts";
