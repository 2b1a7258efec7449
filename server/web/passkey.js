// Passkeys on svc's pages: the one script they load (served at /assets/passkey.js under script-src 'self'). A submit
// button marked data-passkey asks the server for WebAuthn options, lets the browser's authenticator answer, puts the
// answer (as @simplewebauthn/server reads it) in the form's credential field and sends the form.
const decode = (text) => {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const bin = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(bin, (ch) => ch.charCodeAt(0)).buffer;
};
const encode = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const ids = (list) => (list ?? []).map((c) => ({ ...c, id: decode(c.id) }));

async function create(o) {
  const cred = await navigator.credentials.create({
    publicKey: { ...o, challenge: decode(o.challenge), user: { ...o.user, id: decode(o.user.id) }, excludeCredentials: ids(o.excludeCredentials) },
  });
  const r = cred.response;
  return {
    id: cred.id,
    rawId: encode(cred.rawId),
    type: cred.type,
    response: { clientDataJSON: encode(r.clientDataJSON), attestationObject: encode(r.attestationObject), transports: r.getTransports ? r.getTransports() : [] },
    clientExtensionResults: cred.getClientExtensionResults(),
    authenticatorAttachment: cred.authenticatorAttachment ?? undefined,
  };
}

async function get(o) {
  const cred = await navigator.credentials.get({ publicKey: { ...o, challenge: decode(o.challenge), allowCredentials: ids(o.allowCredentials) } });
  const r = cred.response;
  return {
    id: cred.id,
    rawId: encode(cred.rawId),
    type: cred.type,
    response: {
      clientDataJSON: encode(r.clientDataJSON),
      authenticatorData: encode(r.authenticatorData),
      signature: encode(r.signature),
      userHandle: r.userHandle ? encode(r.userHandle) : undefined,
    },
    clientExtensionResults: cred.getClientExtensionResults(),
    authenticatorAttachment: cred.authenticatorAttachment ?? undefined,
  };
}

for (const form of document.querySelectorAll("form")) {
  form.addEventListener("submit", async (event) => {
    const button = event.submitter;
    if (!button?.dataset.passkey || form.dataset.answered) return;
    event.preventDefault();
    const status = form.querySelector("[data-passkey-status]");
    const say = (text) => {
      if (status) status.textContent = text;
    };
    try {
      if (!window.PublicKeyCredential) throw new Error("This browser cannot use passkeys; use a password instead.");
      say("Waiting for your passkey…");
      const body = new URLSearchParams(new FormData(form));
      body.set("purpose", button.dataset.passkey);
      const res = await fetch("/passkeys/options", { method: "POST", body, credentials: "same-origin" });
      const data = await res.json();
      if (!res.ok) throw new Error(data.error ?? "The server refused; reload the page and try again.");
      const answer = button.dataset.passkey === "signin" ? await get(data.options) : await create(data.options);
      form.querySelector("input[name=credential]").value = JSON.stringify(answer);
      form.dataset.answered = "1";
      say("");
      form.requestSubmit(button);
    } catch (err) {
      say(err instanceof Error && err.name !== "NotAllowedError" ? err.message : "No passkey was used. Try again, or use another way.");
    }
  });
}
