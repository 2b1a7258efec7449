// Whose each credential this process has seen authenticated, and as what: a credential never changes hands (its hash
// names one client of one agent for good), so a write can read its idempotency record beside the authentication that
// confirms the owner, and run its tool's first statements with them (server/tools/invoke.ts): one round trip to a
// remote primary instead of three. Only a guess: the authentication in the same transaction decides, and a wrong
// guess only costs the statements again.
import type { Principal } from "../contract/principal.ts";

// Past this many credentials the map starts over: a guess missing costs one round trip, never an answer.
const MAX_ENTRIES = 50_000;

export class CredentialOwners {
  private readonly owners = new Map<string, Principal>();

  /** The principal the credential with this hash last authenticated as, if seen here. */
  get(tokenHash: string): Principal | undefined {
    return this.owners.get(tokenHash);
  }

  seen(tokenHash: string, principal: Principal): void {
    if (this.owners.size >= MAX_ENTRIES && !this.owners.has(tokenHash)) this.owners.clear();
    this.owners.set(tokenHash, principal);
  }
}
