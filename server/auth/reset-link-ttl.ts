// How long a reset link works, apart from reset-links.ts: `svc users reset-link --help` says it, and svc's help must
// not load the database to say so.
import { MINUTE } from "../clock.ts";

export const RESET_LINK_TTL_MS = 30 * MINUTE;
