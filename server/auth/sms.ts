// Text messages (phone codes) go out through the operator's webhook: svc POSTs {"to": "+E.164", "text": "..."} as
// JSON, and any 2xx means sent. The URL is the operator's own setting, not something a stranger chose, so it is
// fetched directly, loopback and private addresses included (a gateway script beside svc is the usual setup); the SSRF
// guard of safe-fetch.ts is for URLs that clients supply. Never called inside a database transaction: the writer
// would wait on the gateway.
export const SMS_TIMEOUT_MS = 5_000;

/** Why a message was not sent; the message is safe to log (no number, no code). */
export class SmsFailed extends Error {
  override name = "SmsFailed";
}

export async function sendSms(webhook: string, to: string, text: string): Promise<void> {
  let res: Response;
  try {
    res = await fetch(webhook, {
      method: "POST",
      headers: { "Content-Type": "application/json", "User-Agent": "svc-sms" },
      body: JSON.stringify({ to, text }),
      redirect: "manual",
      signal: AbortSignal.timeout(SMS_TIMEOUT_MS),
    });
  } catch (err) {
    throw new SmsFailed(
      err instanceof Error && err.name === "TimeoutError" ? "the SMS webhook did not answer in time" : "the SMS webhook could not be reached",
    );
  }
  // The body is not read beyond what closes the connection; a gateway's error text may echo the message.
  await res.body?.cancel().catch(() => {});
  if (res.status < 200 || res.status > 299) throw new SmsFailed(`the SMS webhook answered ${res.status}`);
}
