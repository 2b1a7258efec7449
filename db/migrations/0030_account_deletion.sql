-- An account its person (on /account) or the operator (svc users delete) deleted: the row stays, retired, so the
-- ledger still names them (a former member, balances and history intact) and nobody can register the handle again;
-- everything else about them is gone (server/domain/account-deletion.ts).
ALTER TABLE agents ADD COLUMN deleted_at TEXT;
