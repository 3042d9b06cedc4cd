// The problem page's code editor: CodeMirror 6 with Python highlighting and Tab indentation,
// mounted over the page's <textarea name="code">, which it keeps in sync so the plain form
// submit still works. The draft lives in localStorage per problem; "reset" restores the
// starter. Without this bundle the page keeps the plain textarea (see problem.html).
// Colours come from the page's CSS custom properties (static/style.css: --bg, --fg, the
// --syn-* syntax colours as .tok-* classes), so the editor follows the light/dark theme
// without being rebuilt. Ctrl/Cmd+Enter submits; the skip link "#solve" focuses it.
import { basicSetup } from "codemirror";
import { EditorView, keymap } from "@codemirror/view";
import { EditorState } from "@codemirror/state";
import { indentWithTab } from "@codemirror/commands";
import { indentUnit, syntaxHighlighting } from "@codemirror/language";
import { classHighlighter } from "@lezer/highlight";
import { python } from "@codemirror/lang-python";

const DRAFT_PREFIX = "torch-judge:draft:";

const theme = EditorView.theme({
  "&": { color: "var(--fg)", backgroundColor: "var(--bg)" },
  ".cm-content": { caretColor: "var(--fg)" },
  ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--fg)" },
  ".cm-gutters": { backgroundColor: "var(--panel)", color: "var(--muted)", borderRight: "1px solid var(--line)" },
  ".cm-activeLine": { backgroundColor: "var(--active-line)" },
  ".cm-activeLineGutter": { backgroundColor: "var(--soft)", color: "var(--fg)" },
  "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground, .cm-content ::selection":
    { backgroundColor: "var(--selection)" },
  ".cm-matchingBracket, &.cm-focused .cm-matchingBracket": { backgroundColor: "var(--soft)", outline: "1px solid var(--line)" },
  ".cm-tooltip, .cm-panels": { backgroundColor: "var(--panel)", color: "var(--fg)", border: "1px solid var(--line)" },
});

// Ctrl+Enter (Cmd+Enter on a Mac) submits the form, as the button does.
function submitKey(form) {
  return keymap.of([{
    key: "Mod-Enter",
    run: () => {
      const button = document.getElementById("submit-button");
      if (!form || !button) return false;
      form.requestSubmit(button);
      return true;
    },
  }]);
}

function mount(textarea) {
  const form = textarea.form;
  const slug = textarea.dataset.problem;
  const starter = JSON.parse(document.getElementById("starter-code").textContent);
  const key = DRAFT_PREFIX + slug;
  const status = document.getElementById("draft-status");
  const say = (text) => { if (status) status.textContent = text || ""; };

  // A draft wins over the starter, unless the server re-rendered the page with the
  // code just submitted (a rejected submission): then the textarea already holds it.
  let initial = textarea.value;
  const draft = localStorage.getItem(key);
  if (textarea.dataset.fromServer !== "1" && draft !== null && draft !== initial) {
    initial = draft;
    say(textarea.dataset.msgRestored);
  }

  const save = EditorView.updateListener.of((update) => {
    if (!update.docChanged) return;
    const code = update.state.doc.toString();
    textarea.value = code;
    if (code === starter) localStorage.removeItem(key);
    else localStorage.setItem(key, code);
    say(textarea.dataset.msgSaved);
  });

  const view = new EditorView({
    state: EditorState.create({
      doc: initial,
      extensions: [
        submitKey(form),
        basicSetup,
        theme,
        syntaxHighlighting(classHighlighter),
        keymap.of([indentWithTab]),
        indentUnit.of("    "),
        EditorState.tabSize.of(4),
        python(),
        save,
        EditorView.contentAttributes.of({ "aria-label": textarea.getAttribute("aria-label") || "code" }),
      ],
    }),
  });
  textarea.value = initial;
  textarea.hidden = true;
  textarea.insertAdjacentElement("afterend", view.dom);
  view.dom.classList.add("code-editor");

  const setCode = (code) => {
    view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: code } });
  };
  const reset = document.getElementById("reset-code");
  if (reset) {
    reset.hidden = false;
    reset.addEventListener("click", () => {
      if (view.state.doc.toString() !== starter && !window.confirm(reset.dataset.confirm)) return;
      setCode(starter);
      localStorage.removeItem(key);
      say(textarea.dataset.msgReset);
      view.focus();
    });
  }
  if (form) form.addEventListener("submit", () => { textarea.value = view.state.doc.toString(); });
  for (const link of document.querySelectorAll('a[href="#solve"]')) {
    link.addEventListener("click", (event) => { event.preventDefault(); view.focus(); });
  }
  document.body.classList.add("editor-ready");
  window.judgeEditor = { view, setCode, getCode: () => view.state.doc.toString() };
}

const textarea = document.querySelector("textarea[data-editor]");
if (textarea) mount(textarea);
