// Every tool's example, exactly as `svc tools NAME` prints it on a terminal, pasted into bash and run against a
// server, in an order where each finds what it needs (alice's contacts, a group, an expense, a plan...). The
// made-up ids of server/tools/made-up.ts are replaced by the real ones, as the example tells a person to do.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { MADE_UP } from "../../server/tools/made-up.ts";
import { TOOLS } from "../../server/tools/catalogue.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { PageClient, signInWithCode } from "../web/page-client.ts";
import { ensureBuilt, svcLine, svcOnTerminal } from "./bin.ts";

let s: TestServer;
/** API keys by handle; alice's comes from the register_agent example itself. */
const keys: Record<string, string> = {};
/** What earlier examples answered, by tool. */
const answers: Record<string, any> = {};

beforeAll(async () => {
  await ensureBuilt();
  s = await startTestServer();
}, 120_000);
afterAll(() => s.stop());

type MadeUp = keyof typeof MADE_UP;

interface Step {
  tool: string;
  /** Whose key the call uses (none for public tools). */
  as?: string;
  /** Prepares what the example needs and names the real values of its made-up ones. */
  setup?: () => Promise<Partial<Record<MadeUp, string>>>;
}

const befriend = async (a: string, b: string) => {
  await s.ok("add_contact", { handle: b }, keys[a]);
  await s.ok("respond_contact_request", { handle: a, action: "accept" }, keys[b]);
};
const group = () => answers.create_group.group.group_id as string;
const expense = () => answers.add_expense.expense.expense_id as string;
const plan = () => answers.create_plan.plan.plan_id as string;

const STEPS: Step[] = [
  {
    tool: "register_agent",
    setup: async () => {
      for (const h of ["bob", "carol", "dave", "mallory"]) keys[h] = (await s.register(h)).key;
      return {};
    },
  },
  { tool: "get_me", as: "alice" },
  { tool: "update_me", as: "alice" },
  { tool: "get_contact_code", as: "alice" },
  { tool: "rotate_contact_code", as: "alice" },
  { tool: "add_contact", as: "alice" },
  { tool: "respond_contact_request", as: "bob" },
  { tool: "list_contacts", as: "alice" },
  { tool: "block_contact", as: "alice" },
  { tool: "get_inbox", as: "alice" },
  { tool: "ack_inbox", as: "alice", setup: async () => ({ item_id: answers.get_inbox.items[0].item_id }) },
  { tool: "join_network" },
  { tool: "finish_join", setup: async () => ({ poll_token: answers.join_network.poll_token }) },
  { tool: "get_settings_link", as: "alice" },
  { tool: "list_clients", as: "alice" },
  {
    tool: "disconnect_client",
    as: "alice",
    setup: async () => {
      // A second app of alice's, made on her account page as a person would.
      const browser = new PageClient(s.url);
      await browser.get("/account");
      await signInWithCode(s, browser, "account", "alice", keys.alice!);
      await browser.post("/account/keys", { name: "Old laptop" });
      const { clients } = await s.ok("list_clients", {}, keys.alice);
      return { client_id: clients.find((c: any) => c.name === "Old laptop").client_id };
    },
  },
  { tool: "rotate_api_key", as: "rotator", setup: async () => ((keys.rotator = (await s.register("rotator")).key), {}) },
  { tool: "create_group", as: "alice" },
  { tool: "respond_group_invite", as: "bob", setup: async () => ({ invite_id: answers.create_group.invites[0].invite_id }) },
  { tool: "list_groups", as: "alice" },
  { tool: "get_group", as: "alice", setup: async () => ({ group_id: group() }) },
  { tool: "update_group", as: "alice", setup: async () => ({ group_id: group() }) },
  { tool: "create_group_invite", as: "alice", setup: async () => ({ group_id: group() }) },
  {
    tool: "join_group",
    as: "carol",
    setup: async () => {
      await s.ok("join_group", { invite_code: answers.create_group_invite.invite.code }, keys.dave);
      return { invite_code: answers.create_group_invite.invite.code };
    },
  },
  { tool: "add_expense", as: "alice", setup: async () => ({ group_id: group() }) },
  { tool: "list_expenses", as: "alice", setup: async () => ({ group_id: group() }) },
  { tool: "get_expense", as: "alice", setup: async () => ({ expense_id: expense() }) },
  { tool: "update_expense", as: "alice", setup: async () => ({ expense_id: expense() }) },
  { tool: "respond_expense", as: "bob", setup: async () => ({ expense_id: expense() }) },
  { tool: "list_recurring", as: "alice", setup: async () => ({ group_id: group() }) },
  {
    tool: "stop_recurring",
    as: "alice",
    setup: async () => ({
      expense_id: (
        await s.ok(
          "add_expense",
          { group_id: group(), description: "Rent", amount: "900.00", repeat: "monthly", split: { mode: "equal", among: [{ handle: "alice" }] } },
          keys.alice,
        )
      ).expense.expense_id,
    }),
  },
  { tool: "add_attachment", as: "alice", setup: async () => ({ expense_id: expense() }) },
  { tool: "list_attachments", as: "bob", setup: async () => ({ expense_id: expense() }) },
  { tool: "delete_attachment", as: "alice", setup: async () => ({ attachment_id: answers.add_attachment.attachment.attachment_id }) },
  { tool: "delete_expense", as: "alice", setup: async () => ({ expense_id: expense() }) },
  { tool: "restore_expense", as: "alice", setup: async () => ({ expense_id: expense() }) },
  { tool: "record_payment", as: "bob", setup: async () => ({ group_id: group() }) },
  { tool: "list_payments", as: "alice", setup: async () => ({ group_id: group() }) },
  { tool: "respond_payment", as: "alice", setup: async () => ({ payment_id: answers.record_payment.payment.payment_id }) },
  { tool: "get_balances", as: "alice", setup: async () => ({ group_id: group() }) },
  { tool: "get_activity", as: "alice", setup: async () => ({ group_id: group() }) },
  { tool: "get_spending", as: "alice", setup: async () => ({ group_id: group() }) },
  { tool: "export_group", as: "alice", setup: async () => ({ group_id: group() }) },
  { tool: "open_direct_ledger", as: "alice" },
  { tool: "remove_group_member", as: "alice", setup: async () => ({ group_id: group() }) },
  { tool: "leave_group", as: "carol", setup: async () => ({ group_id: group() }) },
  {
    tool: "archive_group",
    as: "alice",
    setup: async () => ({ group_id: (await s.ok("create_group", { name: "Old flat", currency: "EUR" }, keys.alice)).group.group_id }),
  },
  { tool: "send_envelope", as: "alice" },
  { tool: "get_envelope", as: "bob", setup: async () => ({ envelope_id: answers.send_envelope.envelope.envelope_id }) },
  { tool: "reply_envelope", as: "bob", setup: async () => ({ envelope_id: answers.send_envelope.envelope.envelope_id }) },
  { tool: "list_envelopes", as: "alice" },
  { tool: "create_plan", as: "alice", setup: async () => (await befriend("alice", "carol"), {}) },
  { tool: "get_plan", as: "alice", setup: async () => ({ plan_id: plan() }) },
  { tool: "list_plans", as: "alice" },
  { tool: "respond_plan", as: "bob", setup: async () => ({ plan_id: plan(), option_id: answers.create_plan.plan.options[0].option_id }) },
  { tool: "update_plan", as: "alice", setup: async () => ({ plan_id: plan(), option_id: answers.create_plan.plan.options[0].option_id }) },
  { tool: "cancel_plan", as: "alice", setup: async () => ({ plan_id: plan() }) },
  { tool: "remove_contact", as: "alice" },
];

/** The example command `svc tools NAME` shows a person. */
async function shownExample(tool: string): Promise<string> {
  const shown = await svcOnTerminal(["tools", tool, "--url", s.url]);
  expect(shown.code).toBe(0);
  const line = shown.output.split("\n").find((l) => l.startsWith("  svc call "));
  if (!line) throw new Error(`svc tools ${tool} shows no example:\n${shown.output}`);
  return line.trim();
}

describe("every tool's example in svc tools runs as shown", () => {
  test("the steps cover the whole catalogue, once each", () => {
    expect(STEPS.map((st) => st.tool).sort()).toEqual(TOOLS.map((t) => t.name).sort());
  });

  for (const step of STEPS) {
    test(step.tool, async () => {
      const real = (await step.setup?.()) ?? {};
      let line = await shownExample(step.tool);
      for (const [kind, value] of Object.entries(real)) line = line.replaceAll(MADE_UP[kind as MadeUp].value, value);
      // A made-up value left in the line would have been caught by the server; say which step forgot it.
      for (const m of Object.values(MADE_UP)) expect(line).not.toContain(m.value);
      const r = await svcLine(line, { SVC_URL: s.url, ...(step.as ? { SVC_API_KEY: keys[step.as]! } : {}) });
      expect({ line, code: r.code, stderr: r.stderr }).toEqual({ line, code: 0, stderr: "" });
      answers[step.tool] = r.json();
      if (step.tool === "register_agent") keys.alice = answers.register_agent.api_key;
    }, 30_000);
  }
});
