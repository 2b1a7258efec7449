// The script of every svc page (served at /assets/app.js under script-src 'self'). It registers the service worker
// that keeps the pages a person read while signed in for reading offline (sw.js); tells it to forget them as a
// sign-out form goes (the answer also clears the site's data); and after a refused form moves the focus to the first
// field in error, else to the page's error, so a keyboard or screen reader user lands on what to fix; and sends a
// time typed in a form with its UTC value.
// In a block: a page's classic scripts share one global scope, and these names are this script's own.
{
  if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => undefined);

  const SIGN_OUT = ["/account/signout", "/account/signout-everywhere", "/account/delete"];
  for (const form of document.querySelectorAll("form")) {
    if (!SIGN_OUT.includes(form.getAttribute("action"))) continue;
    form.addEventListener("submit", () => navigator.serviceWorker?.controller?.postMessage({ type: "forget" }));
  }

  // A time typed in a form is the reader's local time: its UTC value goes beside it (the server reads it as UTC
  // without this script, and the form says so).
  for (const input of document.querySelectorAll("input[type=datetime-local][data-utc]")) {
    input.form?.addEventListener("submit", () => {
      const utc = input.form.querySelector(`input[name="${input.dataset.utc}"]`);
      const at = new Date(input.value);
      if (utc) utc.value = input.value && !Number.isNaN(at.getTime()) ? at.toISOString() : "";
    });
  }

  // A field in error is marked aria-invalid; a fieldset in error (the payers, the split) points at its error with
  // aria-describedby, and its first control takes the focus.
  const isError = (el) =>
    el.tagName !== "FIELDSET" || (el.getAttribute("aria-describedby") ?? "").split(" ").some((id) => document.getElementById(id)?.classList.contains("field-error"));
  const inError = [...document.querySelectorAll('main [aria-invalid="true"], main fieldset[aria-describedby]')].find(isError);
  const field = inError?.tagName === "FIELDSET" ? inError.querySelector("input:not([type=hidden]), select, textarea") : inError;
  const error = document.querySelector("main .error[role=alert]");
  if (field) field.focus();
  else if (error) {
    error.tabIndex = -1;
    error.focus();
  }
}
