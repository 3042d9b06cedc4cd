// The submission page, live: follows /api/submissions/{id}/events (server-sent events, one
// JSON object per data: line, see web/README.md) and updates the page as tests land; then,
// while the leaderboard timing (a ranking job) is pending, /api/submissions/{id}/ranking/events.
// Everything from the server is put in with textContent, never as HTML, except the speed
// section, which is taken as a whole from this page rendered again by the server.
(() => {
  const root = document.getElementById("submission");
  if (!root || !window.EventSource) return;
  const text = JSON.parse(document.getElementById("i18n").textContent);
  const $ = (id) => document.getElementById(id);
  const fill = (template, values) => template.replace(/\{(\w+)\}/g, (_, k) => String(values[k]));
  const state = { total: 0, tests: [], done: false };

  function el(tag, props = {}, children = []) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props)) {
      if (k === "text") node.textContent = v;
      else if (k === "dataset") Object.assign(node.dataset, v);
      else node.setAttribute(k, v);
    }
    for (const child of children) node.append(child);
    return node;
  }

  function badge(verdict) {
    if (!verdict) return el("span", { class: "verdict verdict-pending", text: text.pending, dataset: { verdict: "" } });
    return el("span", { class: `verdict verdict-${verdict}`, text: text.labels[verdict] || verdict, dataset: { verdict } });
  }

  function rows(i, test) {
    const name = el("td", { class: "name" }, [el("code", { text: test.name })]);
    if (test.visibility === "hidden") name.append(" ", el("span", { class: "tag hidden-tag", text: text.hidden }));
    const judged = test.verdict && test.verdict !== "skipped";
    const row = el("tr", { class: "test", id: `test-${i}`, dataset: { index: i, visibility: test.visibility } }, [
      el("td", { class: "num", text: String(i + 1) }), name,
      el("td", { class: "category", text: test.category || "" }),
      el("td", { class: "verdict-cell" }, [badge(test.verdict)]),
      el("td", { class: "time", text: judged && test.time_ms != null ? `${Math.round(test.time_ms)} ms` : "" }),
    ]);
    const cell = el("td", { colspan: "4" });
    if (test.message) cell.append(el("pre", { class: "message", text: test.message }));
    if (test.output) cell.append(el("div", { class: "output-label", text: text.output }), el("pre", { class: "output", text: test.output }));
    const detail = el("tr", { class: "detail", id: `detail-${i}` }, [el("td"), cell]);
    detail.hidden = !(test.message || test.output);
    return [row, detail];
  }

  function put(i, test) {
    state.tests[i] = test;
    const [row, detail] = rows(i, test);
    const old = $(`test-${i}`);
    if (old) {
      old.replaceWith(row);
      $(`detail-${i}`).replaceWith(detail);
    } else {
      $("tests").append(row, detail);
    }
    const landed = state.tests.filter((t) => t && t.verdict).length;
    $("progress").value = landed;
  }

  function status(message, kind) {
    $("status").className = `status-line status-${kind}`;
    root.dataset.status = kind;
    $("status-text").textContent = message;
  }

  const handlers = {
    queued(ev) {
      status(text.queued + (ev.position != null ? fill(text.ahead, { n: ev.position }) : ""), "queued");
    },
    start(ev) {
      state.total = ev.total;
      state.tests = [];
      $("tests").replaceChildren();
      $("throughput-list").replaceChildren();
      $("throughput").hidden = true;
      $("progress").max = Math.max(1, ev.total);
      $("progress").value = 0;
      ev.tests.forEach((t, i) => put(i, { ...t, verdict: null }));
      status(fill(text.running, { k: 1, n: ev.total }), "running");
    },
    running(ev) {
      if (ev.index != null) status(fill(text.running, { k: ev.index + 1, n: state.total }), "running");
      else if (ev.name.startsWith("throughput:")) {
        // a speed check: its title from the problem, not the internal throughput:<name>
        const title = text.checks[ev.name] || ev.name.slice("throughput:".length);
        status(fill(text.running_check, { name: title }), "running");
      } else status(fill(text.running_named, { name: ev.name }), "running");
    },
    // what the judging waits in between tests (judge/events.py's "phase" event): for a
    // quiet machine before timing, measuring, ranking; a phase this page does not know
    // leaves the line as it is
    phase(ev) {
      const message = (text.phases || {})[ev.phase];
      if (message) status(message, "running");
    },
    test(ev) { put(ev.index, ev.result); },
    throughput(ev) {
      const r = ev.result;
      const speed = r.ratio != null
        ? fill(text.speed, { ratio: `${r.ratio.toFixed(2)}×`, min: `${r.min_ratio.toFixed(2)}×` })
        : text.not_measured;
      $("throughput-list").append(el("li", { class: "throughput", dataset: { verdict: r.verdict } },
        [badge(r.verdict), " ", r.title ? (r.title[root.dataset.lang] || r.name) : el("code", { text: r.name }),
          " ", el("span", { class: "ratio", text: speed })]));
      $("throughput").hidden = false;
    },
    done(ev) {
      state.done = true;
      $("final-verdict").replaceChildren(badge(ev.verdict));
      status(fill(text.summary, { passed: ev.passed, total: ev.total }), "done");
      $("progress").hidden = true;
      if (ev.message) {
        $("overall-message").textContent = ev.message;
        $("overall-message").hidden = false;
      }
      if (root.dataset.events) return;  // a run (problem page): no speed section, no ranking
      // the server's speed section has the interval, times per kind of input and the plot
      // (with the leaderboard timing's status: follow it while it is pending)
      refreshSpeed().then(() => {
        const ranking = $("ranking-status");
        if (ranking && ranking.dataset.ranking === "pending") followRanking();
      });
    },
  };

  // The speed section as the server renders it now (its plot is server-side SVG).
  async function refreshSpeed() {
    try {
      const page = await fetch(window.location.pathname, { credentials: "same-origin" });
      if (!page.ok) return;
      const fresh = new DOMParser().parseFromString(await page.text(), "text/html").getElementById("throughput");
      if (fresh) $("throughput").replaceWith(document.adoptNode(fresh));
    } catch { /* the page as it is stays */ }
  }

  // A pending ranking's line: a run in progress or queued (which of how many), or the
  // next run's earliest start (in the reader's time) while it waits out its spacing.
  function rankingText(ev) {
    const run = ev.runs > 1 ? fill(text.rank_run, { k: ev.run, n: ev.runs }) : "";
    if (ev.state === "running") return (text.phases[ev.phase] || text.phases.ranking) + run;
    const later = ev.not_before ? new Date(ev.not_before) : null;
    if (later && !Number.isNaN(later.getTime())) {
      const at = later.toLocaleTimeString(document.documentElement.lang, { hour: "2-digit", minute: "2-digit" });
      return fill(text.rank_later, { k: ev.run - 1, n: ev.runs, at });
    }
    return fill(text.rank_queued, { n: ev.position != null ? ev.position : "?" }) + run;
  }

  function follow(url, onEvent) {
    const source = new EventSource(url);
    source.onmessage = (message) => {
      let ev;
      try { ev = JSON.parse(message.data); } catch { return; }
      if (onEvent(ev)) source.close();
    };
    return source;
  }

  function followRanking() {
    follow(`/api/submissions/${root.dataset.id}/ranking/events`, (ev) => {
      if (ev.event === "ranking" && $("ranking-status")) $("ranking-status").textContent = rankingText(ev);
      if (ev.event !== "ranked") return false;
      refreshSpeed();
      return true;
    });
  }

  if (root.dataset.status === "done") {
    if (root.dataset.ranking === "pending") followRanking();
    return;
  }
  // data-events: another stream of the same events (the problem page's "Run examples")
  const events = root.dataset.events || `/api/submissions/${root.dataset.id}/events`;
  const source = follow(`${events}?lang=${root.dataset.lang}`, (ev) => {
    const handle = handlers[ev.event];
    if (handle) handle(ev);
    return ev.event === "done";
  });
  source.onerror = () => {
    if (!state.done && source.readyState !== EventSource.CLOSED) $("status-text").textContent = text.lost;
  };
})();
