// Typesets a statement's math with KaTeX (from npm): web/markdown.py turns $...$ into
// <span class="math inline">TeX</span> and $$...$$ into <div class="math block">TeX</div>,
// the TeX as escaped text. A formula KaTeX cannot parse stays as its TeX, marked with the
// error in its title; without this bundle the TeX is shown as it is.
import katex from "katex";
import "katex/dist/katex.min.css";

for (const el of document.querySelectorAll(".statement .math")) {
  const tex = el.textContent.trim();
  try {
    katex.render(tex, el, { displayMode: el.classList.contains("block"), throwOnError: true, output: "htmlAndMathml" });
  } catch (err) {
    el.textContent = tex;
    el.title = String(err.message || err);
    el.classList.add("math-error");
  }
}
