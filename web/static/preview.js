// The preview page (python -m judge preview, web/preview.py): asks /preview/version every
// second for the stamp of the package's files and reloads the page when it is no longer
// the one the page was rendered at, so what is shown follows the files on disk. Not in the
// middle of "Run examples": then once the run is done. The editor keeps its draft across
// reloads (localStorage); "Reset to starter" shows a changed starter.py.
(() => {
  const root = document.getElementById("preview");
  if (!root || !window.fetch) return;
  const status = document.getElementById("preview-status");
  const idle = status ? status.textContent : "";
  const say = (key) => { if (status) status.textContent = key ? status.dataset[key] : idle; };
  const running = () => {
    const run = document.getElementById("submission");
    return Boolean(run) && ["queued", "running"].includes(run.dataset.status);
  };
  let changed = false;

  async function look() {
    try {
      const response = await fetch("/preview/version", { cache: "no-store" });
      if (!response.ok) throw new Error(response.statusText);
      const { version } = await response.json();
      changed = changed || version !== root.dataset.version;
      say(changed ? "changed" : null);
    } catch {
      say("lost");
    }
    if (changed && !running()) {
      window.location.reload();
      return;
    }
    window.setTimeout(look, 1000);
  }
  window.setTimeout(look, 1000);
})();
