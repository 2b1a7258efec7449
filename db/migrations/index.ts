// Migrations are embedded in the binary as text, applied in this order, forward only.
import core from "./0001_core.sql" with { type: "text" };
import ledger from "./0002_ledger.sql" with { type: "text" };
import mailPlans from "./0003_mail_plans.sql" with { type: "text" };
import expensesExtra from "./0004_expenses_extra.sql" with { type: "text" };
import ops from "./0005_ops.sql" with { type: "text" };
import auth from "./0006_auth.sql" with { type: "text" };
import ledgerPairs from "./0007_ledger_pairs.sql" with { type: "text" };
import inboxSummary from "./0008_inbox_summary.sql" with { type: "text" };
import attempts from "./0009_attempts.sql" with { type: "text" };
import mergeAndClientMetadata from "./0010_merge_and_client_metadata.sql" with { type: "text" };
import expenseSharesByGroup from "./0011_expense_shares_by_group.sql" with { type: "text" };
import inboxCounts from "./0012_inbox_counts.sql" with { type: "text" };
import paymentCorrections from "./0013_payment_corrections.sql" with { type: "text" };
import ledgerTotals from "./0014_ledger_totals.sql" with { type: "text" };
import inboxPendingPartial from "./0015_inbox_pending_partial.sql" with { type: "text" };
import webClients from "./0016_web_clients.sql" with { type: "text" };
import quotaIndexes from "./0017_quota_indexes.sql" with { type: "text" };
import exportOrder from "./0018_export_order.sql" with { type: "text" };
import accounts from "./0019_accounts.sql" with { type: "text" };
import people from "./0020_people.sql" with { type: "text" };
import placeholders from "./0021_placeholders.sql" with { type: "text" };
import refundsSpendingBatches from "./0022_refunds_spending_batches.sql" with { type: "text" };
import receiptsRatesSeries from "./0023_receipts_rates_series.sql" with { type: "text" };
import writerLease from "./0024_writer_lease.sql" with { type: "text" };
import federation from "./0025_federation.sql" with { type: "text" };
import federationTrust from "./0026_federation_trust.sql" with { type: "text" };
import serverSettings from "./0027_server_settings.sql" with { type: "text" };
import factorOrigins from "./0028_factor_origins.sql" with { type: "text" };
import limits from "./0029_limits.sql" with { type: "text" };
import accountDeletion from "./0030_account_deletion.sql" with { type: "text" };
import email from "./0031_email.sql" with { type: "text" };
import writeConflicts from "./0032_write_conflicts.sql" with { type: "text" };
import groupEvents from "./0033_group_events.sql" with { type: "text" };

export const MIGRATIONS: readonly { id: number; name: string; sql: string }[] = [
  { id: 1, name: "0001_core", sql: core },
  { id: 2, name: "0002_ledger", sql: ledger },
  { id: 3, name: "0003_mail_plans", sql: mailPlans },
  { id: 4, name: "0004_expenses_extra", sql: expensesExtra },
  { id: 5, name: "0005_ops", sql: ops },
  { id: 6, name: "0006_auth", sql: auth },
  { id: 7, name: "0007_ledger_pairs", sql: ledgerPairs },
  { id: 8, name: "0008_inbox_summary", sql: inboxSummary },
  { id: 9, name: "0009_attempts", sql: attempts },
  { id: 10, name: "0010_merge_and_client_metadata", sql: mergeAndClientMetadata },
  { id: 11, name: "0011_expense_shares_by_group", sql: expenseSharesByGroup },
  { id: 12, name: "0012_inbox_counts", sql: inboxCounts },
  { id: 13, name: "0013_payment_corrections", sql: paymentCorrections },
  { id: 14, name: "0014_ledger_totals", sql: ledgerTotals },
  { id: 15, name: "0015_inbox_pending_partial", sql: inboxPendingPartial },
  { id: 16, name: "0016_web_clients", sql: webClients },
  { id: 17, name: "0017_quota_indexes", sql: quotaIndexes },
  { id: 18, name: "0018_export_order", sql: exportOrder },
  { id: 19, name: "0019_accounts", sql: accounts },
  { id: 20, name: "0020_people", sql: people },
  { id: 21, name: "0021_placeholders", sql: placeholders },
  { id: 22, name: "0022_refunds_spending_batches", sql: refundsSpendingBatches },
  { id: 23, name: "0023_receipts_rates_series", sql: receiptsRatesSeries },
  { id: 24, name: "0024_writer_lease", sql: writerLease },
  { id: 25, name: "0025_federation", sql: federation },
  { id: 26, name: "0026_federation_trust", sql: federationTrust },
  { id: 27, name: "0027_server_settings", sql: serverSettings },
  { id: 28, name: "0028_factor_origins", sql: factorOrigins },
  { id: 29, name: "0029_limits", sql: limits },
  { id: 30, name: "0030_account_deletion", sql: accountDeletion },
  { id: 31, name: "0031_email", sql: email },
  { id: 32, name: "0032_write_conflicts", sql: writeConflicts },
  { id: 33, name: "0033_group_events", sql: groupEvents },
];
