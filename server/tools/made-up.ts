// The made-up identifiers that tools' example calls use (each tool's `example`, in its own file), and the tool that
// gives a real one: GET /v1/tools names those an example holds, so that `svc tools NAME` can say where to get them,
// and test/cli/examples.test.ts swaps in real ones before running every example.
export const MADE_UP = {
  group_id: { value: "6c1f9a2e-3b7d-4e8a-9c5f-0a1b2c3d4e5f", from: "list_groups" },
  expense_id: { value: "8e2d4c6a-1f3b-4a5c-8d7e-9f0a1b2c3d4e", from: "list_expenses" },
  payment_id: { value: "5b7c9d1e-2f4a-4b6c-8d0e-1f2a3b4c5d6e", from: "list_payments" },
  invite_id: { value: "2a4c6e8f-0b1d-4f3a-9b5c-7d9e1f3a5b7c", from: "get_inbox (a group.invitation item)" },
  envelope_id: { value: "9d1f3b5c-7e9a-4c2e-8f4a-6b8c0d2e4f6a", from: "list_envelopes" },
  plan_id: { value: "4f6a8c0e-2b4d-4a6f-8c1e-3b5d7f9a1c3e", from: "list_plans" },
  option_id: { value: "3c5e7a9b-1d3f-4f5a-9c7e-9b1d3f5a7c9e", from: "get_plan" },
  client_id: { value: "7a9c1e3b-5d7f-4b9d-9a2c-4e6f8a0b2d4f", from: "list_clients" },
  attachment_id: { value: "0b7d3f1a-5c9e-4a2b-8d6f-1e3a5c7b9d0f", from: "list_attachments" },
  item_id: { value: "1e3a5c7e-9b1d-4d3f-8a5b-7c9e1a3b5d7f", from: "get_inbox" },
  poll_token: { value: "join_3kZ8qW1xR7vT5nY2mB9cD4fG6hJ0", from: "join_network" },
  invite_code: { value: "k7qm2xpz9lwr", from: "create_group_invite" },
} as const;

/** A made-up identifier for an example call. */
export const madeUp = (kind: keyof typeof MADE_UP): string => MADE_UP[kind].value;

/** The idempotency_key of every example call to a tool that takes one. */
export const EXAMPLE_IDEMPOTENCY_KEY = "6f1c2a9e-2b7d-4f0e-9a51-3c8d7e6b5a40";

/** The made-up values an example holds (by name) and where real ones come from. */
export function madeUpIn(args: Record<string, unknown>): { field: string; value: string; from: string }[] {
  const text = JSON.stringify(args);
  return Object.entries(MADE_UP)
    .filter(([, m]) => text.includes(m.value))
    .map(([field, m]) => ({ field, value: m.value, from: m.from }));
}
