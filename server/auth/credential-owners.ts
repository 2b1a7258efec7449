// Whose each credential this process has seen authenticated: a credential never changes hands (its hash names one
// client of one agent for good), so a write can read its idempotency record beside the authentication that confirms
// the owner, in one round trip to a remote primary instead of two (server/tools/invoke.ts). Only a guess: the
// authentication in the same transaction decides, and a wrong guess only costs the read again.

// Past this many credentials the map starts over: a guess missing costs one round trip, never an answer.
const MAX_ENTRIES = 50_000;

export class CredentialOwners {
  private readonly owners = new Map<string, string>();

  /** The agent the credential with this hash authenticated as, if seen here. */
  get(tokenHash: string): string | undefined {
    return this.owners.get(tokenHash);
  }

  seen(tokenHash: string, agentId: string): void {
    if (this.owners.size >= MAX_ENTRIES && !this.owners.has(tokenHash)) this.owners.clear();
    this.owners.set(tokenHash, agentId);
  }
}
