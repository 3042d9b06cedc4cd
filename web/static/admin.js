// The admin's version page, live: follows /api/admin/versions/{id}/events (server-sent
// snapshots {status, files, errors}) while the version is validated, and reloads the page
// once it is valid or invalid (the server then offers publishing or says why not).
// Everything from the server is put in with textContent, never as HTML.
// Publishing and rejudging everything ask first (data-confirm, data-confirm-all).
(() => {
  for (const form of document.querySelectorAll("form[data-confirm], form[data-confirm-all]")) {
    form.addEventListener("submit", (event) => {
      const all = form.dataset.confirmAll && form.querySelector('input[name="which"]:checked')?.value === "all";
      const question = form.dataset.confirm || (all ? form.dataset.confirmAll : null);
      if (question && !window.confirm(question)) event.preventDefault();
    });
  }
})();

(() => {
  const root = document.getElementById("version");
  if (!root || !window.EventSource) return;
  if (root.dataset.status === "valid" || root.dataset.status === "invalid") return;
  const text = JSON.parse(document.getElementById("i18n").textContent);

  function el(tag, props = {}, children = []) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props)) {
      if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const child of children) node.append(child);
    return node;
  }

  function speed(s) {
    if (s.ratio === null || s.ratio === undefined) return `${s.name} —`;
    const interval = s.interval ? ` [${s.interval[0].toFixed(2)}, ${s.interval[1].toFixed(2)}]` : "";
    return `${s.name} ${Number(s.ratio.toPrecision(3))}x${interval}`;
  }

  function row(f) {
    const state = f.ok === true ? "ok" : f.ok === false ? "bad" : "pending";
    const label = (v) => text.labels[v] || v;
    const verdict = f.verdict
      ? el("span", { class: `verdict verdict-${f.verdict}`, "data-verdict": f.verdict, text: label(f.verdict) })
      : el("span", { class: "verdict verdict-pending", text: "…" });
    const mark = el("td");
    if (f.ok === true) mark.textContent = "✓";
    if (f.ok === false) mark.append("✗ ", el("pre", { class: "message", text: f.detail || "" }));
    return el("tr", { class: `file ${state}` }, [
      el("td", {}, [el("code", { text: f.label })]), el("td", { "data-verdict": f.expected, text: label(f.expected) }),
      el("td", {}, [verdict]),
      el("td", { class: "caught" }, f.caught_by && f.expected !== "accepted" ? [el("code", { text: f.caught_by })] : []),
      el("td", { class: "speed", text: (f.speed || []).map(speed).join(", ") }), mark,
    ]);
  }

  function show(snap) {
    const status = document.getElementById("version-status");
    status.replaceChildren(el("span", { class: `vstatus vstatus-${snap.status}`, "data-status": snap.status, text: text[snap.status] || snap.status }));
    document.querySelector("#files tbody").replaceChildren(...snap.files.map(row));
    document.getElementById("errors").replaceChildren(
      ...snap.errors.map((e) => el("li", {}, [el("pre", { class: "message", text: e })])));
    root.dataset.status = snap.status;
    root.dataset.judged = String(snap.files.filter((f) => f.verdict).length);
  }

  const source = new EventSource(`/api/admin/versions/${root.dataset.id}/events`);
  source.onmessage = (message) => {
    const snap = JSON.parse(message.data);
    show(snap);
    if (snap.status === "valid" || snap.status === "invalid") {
      source.close();
      window.location.reload();
    }
  };
})();
