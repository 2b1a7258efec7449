-- expense_shares_group (group_id, agent_id) put each share of a new expense in another part of the index, so
-- an expense among 20 members changed some 30 index pages. Only the rebuild of a group's pair ledger reads
-- shares by group, and it needs no agent order: by group alone, the shares of a new expense sit side by side.
DROP INDEX expense_shares_group;
CREATE INDEX expense_shares_by_group ON expense_shares(group_id);
