// The colour theme, before the page paints (loaded without defer in <head>): the reader's
// choice from the toggle (localStorage), else the system's prefers-color-scheme, which is
// followed live while there is no choice. Sets <html data-theme="light|dark">;
// static/style.css does the rest. The toggle button (#theme-switch, in _nav.html) cycles
// system → the other theme → back to following the system.
(() => {
  const KEY = "torch-judge:theme";
  const root = document.documentElement;
  const system = window.matchMedia("(prefers-color-scheme: dark)");
  const stored = () => { try { return localStorage.getItem(KEY); } catch { return null; } };
  const apply = () => {
    const choice = stored();
    const theme = choice === "dark" || choice === "light" ? choice : (system.matches ? "dark" : "light");
    root.dataset.theme = theme;
    const button = document.getElementById("theme-switch");
    if (button) {
      button.setAttribute("aria-pressed", choice ? "true" : "false");
      button.textContent = button.dataset[theme === "dark" ? "toLight" : "toDark"];
      button.title = choice ? button.dataset.followsNot : button.dataset.follows;
    }
  };
  apply();
  system.addEventListener("change", apply);
  document.addEventListener("DOMContentLoaded", () => {
    const button = document.getElementById("theme-switch");
    if (!button) return;
    button.hidden = false;
    apply();
    button.addEventListener("click", () => {
      const choice = stored();
      const next = root.dataset.theme === "dark" ? "light" : "dark";
      // choosing what the system would give anyway means: follow the system again
      const systemTheme = system.matches ? "dark" : "light";
      try {
        if (choice && next === systemTheme) localStorage.removeItem(KEY);
        else localStorage.setItem(KEY, next);
      } catch { /* private mode: this page only */ root.dataset.theme = next; return; }
      apply();
    });
  });
})();
