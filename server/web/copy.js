// Copy buttons on svc's pages (served at /assets/copy.js under script-src 'self'): a button marked data-copy names
// the id of a field whose value it copies. The button comes hidden and is shown only here, so a browser without
// JavaScript sees the field alone, which stays selectable.
for (const button of document.querySelectorAll("button[data-copy]")) {
  const fieldEl = document.getElementById(button.dataset.copy);
  const status = document.querySelector(`[data-copy-status="${button.dataset.copy}"]`);
  if (!fieldEl) continue;
  const say = (text) => {
    if (status) status.textContent = text;
  };
  button.hidden = false;
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(fieldEl.value);
      say("Copied.");
    } catch {
      fieldEl.focus();
      fieldEl.select();
      say("Selected: copy it with your keyboard or menu.");
    }
  });
}
