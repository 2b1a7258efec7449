// Wire shapes of plans, shared by the six plan tools.
import { z } from "zod";
import { storable } from "./mail.ts";
import { AgentRef, Handle, plainText, Timestamp, Untrusted, Uuid } from "./wire.ts";

export const RESPONSES = ["yes", "no", "maybe"] as const;
export const PLAN_STATES = ["proposed", "scheduled", "cancelled"] as const;

export const DateTimeInput = z.iso.datetime({ offset: true }).describe("e.g. 2026-12-05T19:00:00Z");
export const PlanTitle = storable(plainText(1, 140));
/** Free text, several lines allowed. */
export const PlanDescription = storable(z.string().max(2000));
export const Place = storable(plainText(1, 200));
export const Invitees = z.array(Handle).min(1).max(50);

export const OptionInput = z.strictObject({
  starts_at: DateTimeInput,
  ends_at: DateTimeInput.optional(),
  place: Place.optional().describe('Where, e.g. "Café Central"'),
});
/** In update_plan: an option_id keeps that option (and its votes); without one it is a new option. */
export const OptionUpdate = OptionInput.extend({ option_id: Uuid.optional().describe("From get_plan: keeps its votes") });
export const Options = <T extends z.ZodType>(o: T) => z.array(o).min(1).max(10);

export const PlanOption = z.object({
  option_id: Uuid,
  starts_at: Timestamp,
  ends_at: Timestamp.nullable(),
  place: Untrusted.nullable(),
  votes: z.number().int().describe("invitees who voted for this option"),
});

export const PlanInvitee = z.object({
  agent: AgentRef,
  response: z.enum(RESPONSES).nullable(),
  option_ids: z.array(Uuid),
  responded_at: Timestamp.nullable(),
});

export const Plan = z.object({
  plan_id: Uuid,
  state: z.enum(PLAN_STATES),
  organiser: AgentRef,
  my_role: z.enum(["organiser", "invitee"]),
  title: Untrusted,
  description: Untrusted.nullable(),
  options: z.array(PlanOption),
  chosen_option_id: Uuid.nullable(),
  group_id: Uuid.nullable(),
  respond_by: Timestamp.nullable(),
  invitees: z.array(PlanInvitee),
  starts_at: Timestamp.describe("the chosen option's start once scheduled, else the earliest option's"),
  ends_at: Timestamp.describe("the chosen option's end (or start) once scheduled, else the latest of all options"),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Plan = z.infer<typeof Plan>;

export const PlanExpense = z.object({
  expense_id: Uuid,
  description: Untrusted,
  amount_minor: z.number().int(),
  amount: z.string(),
  currency: z.string(),
  date: z.string(),
});
export type PlanExpense = z.infer<typeof PlanExpense>;
