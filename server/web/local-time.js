// Times on svc's pages in the reader's own time zone (served at /assets/local-time.js under script-src 'self'): each
// <time datetime="..."> the server wrote in UTC is rewritten in the browser's zone and language; the UTC text stays
// in its title. Without JavaScript the page shows UTC, said so.
for (const el of document.querySelectorAll("time[datetime]")) {
  const at = new Date(el.getAttribute("datetime"));
  if (Number.isNaN(at.getTime()) || !el.getAttribute("datetime").includes("T")) continue;
  el.title = el.textContent;
  el.textContent = at.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}
