// "Run examples" on the problem page: posts the editor's code (kept in the textarea by the
// editor bundle) to /api/runs with the page's session cookie and its CSRF token in the
// X-CSRF-Token header, then shows the public tests live in #run-result by following
// /api/runs/{id}/events with static/submission.js (the submission page's rendering).
// A refusal (429: too many runs, one already running) is shown as the server words it.
(() => {
  const button = document.getElementById("run-button");
  const panel = document.getElementById("run-result");
  const root = document.getElementById("submission");
  if (!button || !panel || !root || !window.EventSource || !window.fetch) return;
  const text = JSON.parse(document.getElementById("i18n").textContent);
  const form = document.getElementById("submit-form");
  const code = document.getElementById("code");
  const error = document.getElementById("run-error");
  const csrf = form.querySelector('input[name="csrf_token"]').value;
  button.hidden = false;

  function follow(run) {
    root.dataset.id = String(run.id);
    root.dataset.events = `/api/runs/${run.id}/events`;
    root.dataset.status = "queued";
    document.getElementById("tests").replaceChildren();
    document.getElementById("final-verdict").replaceChildren();
    document.getElementById("overall-message").hidden = true;
    document.getElementById("progress").hidden = false;
    document.getElementById("status-text").textContent = text.queued;
    panel.hidden = false;
    const script = document.createElement("script");  // runs submission.js again, for this run
    script.src = "/static/submission.js";
    document.body.append(script);
    script.remove();
  }

  button.addEventListener("click", async () => {
    error.hidden = true;
    button.disabled = true;
    const status = document.getElementById("status-text");
    try {
      status.textContent = text.sending;
      const response = await fetch(`/api/runs?lang=${root.dataset.lang}`, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify({ problem: code.dataset.problem, code: code.value }),
      });
      const body = await response.json().catch(() => ({}));
      if (response.status !== 202) {
        error.textContent = text.failed + (body.detail || response.statusText);
        error.hidden = false;
        return;
      }
      follow(body);
    } catch (e) {
      error.textContent = text.failed + e;
      error.hidden = false;
    } finally {
      button.disabled = false;
    }
  });
})();
