// The script of every svc page (served at /assets/app.js under script-src 'self'). It registers the service worker
// that keeps the pages a person read while signed in for reading offline (sw.js); tells it to forget them as a
// sign-out form goes (the answer also clears the site's data); and after a refused form moves the focus to the first
// field in error, else to the page's error, so a keyboard or screen reader user lands on what to fix.
if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => undefined);

const SIGN_OUT = ["/account/signout", "/account/signout-everywhere", "/account/delete"];
for (const form of document.querySelectorAll("form")) {
  if (!SIGN_OUT.includes(form.getAttribute("action"))) continue;
  form.addEventListener("submit", () => navigator.serviceWorker?.controller?.postMessage({ type: "forget" }));
}

const invalid = document.querySelector('main [aria-invalid="true"]');
const error = document.querySelector("main .error[role=alert]");
if (invalid) invalid.focus();
else if (error) {
  error.tabIndex = -1;
  error.focus();
}
