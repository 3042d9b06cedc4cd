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

// Ctrl+Enter (Cmd+Enter) in the plain code box submits, as in the editor (when the editor
// bundle is missing; the editor hides the textarea and has its own key).
const codeBox = document.querySelector("textarea[data-editor]");
if (codeBox) {
  codeBox.addEventListener("keydown", (event) => {
    const button = document.getElementById("submit-button");
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey) || !button || !codeBox.form) return;
    event.preventDefault();
    codeBox.form.requestSubmit(button);
  });
}
