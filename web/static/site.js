// Show <time datetime="...Z"> in the reader's local time zone.
for (const el of document.querySelectorAll("time[datetime]")) {
  const when = new Date(el.getAttribute("datetime"));
  if (!Number.isNaN(when.getTime())) {
    el.title = el.textContent;
    el.textContent = when.toLocaleString(document.documentElement.lang, {
      year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
    });
  }
}
