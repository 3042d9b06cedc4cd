"""The problem bank as the web sees it: public cases read from the syntax tree (never by
importing tests.py), statements sanitised, GPU needs."""

from __future__ import annotations

import re
import sys

from fastapi.testclient import TestClient

from tests.web.support import GOOD, make_user, write_cuda_problem
from web.catalog import Catalog, public_cases
from web.main import create_app
from web.markdown import render

TESTS = '''
from judge.testing import case

@case(public=True, zh="样例", en="example")
def example_one(t):
    pass

@case(zh="隐藏", en="hidden")
def hidden_one(t):
    pass

FLAG = True

@case(public=FLAG, zh="看起来公开", en="looks public")
def not_literal(t):
    pass

@case(public=True, zh="公开", en="public", device="cuda")
def public_cuda(t):
    pass
'''


def test_only_literal_public_cases_are_shown():
    found = public_cases(TESTS)
    assert [e.name for e in found] == ["example_one", "public_cuda"]
    assert found[0].category.en == "example" and found[0].is_example
    assert found[0].code.startswith('@case(public=True, zh="样例"')
    assert "hidden_one" not in found[0].code


def test_public_cases_of_the_module_style_are_shown_too():
    found = public_cases(TESTS.replace("@case(public=True, zh=\"公开\"",
                                       "@testing.case(public=True, zh=\"公开\""))
    assert [e.name for e in found] == ["example_one", "public_cuda"]
    assert found[1].code.startswith("@testing.case(public=True")


def test_bundled_problems_show_the_suites_public_cases():
    from judge.package import load_all
    from judge.testing import collect

    for problem in load_all():
        shown = [e.name for e in public_cases(problem.read("tests.py"))]
        assert shown == [c.name for c in collect(problem).cases if c.public], problem.slug


def test_the_bank_never_imports_tests(problems_root):
    catalog = Catalog(problems_root)
    p = catalog.get("add-one")
    assert catalog.get("3") is p and catalog.get("nope") is None and catalog.get("99") is None
    assert [e.name for e in p.examples] == ["example_small"]
    assert not p.needs_gpu and not p.prefers_gpu
    assert not any(name.startswith("judge_problem_add_one") for name in sys.modules)


def test_hostile_markdown_is_neutralised():
    html = render("""
<script>alert(1)</script>
<img src=x onerror=alert(2)>
[link](javascript:alert(3)) [ok](https://example.org)
![pic](javascript:alert(4))

```python
x = "</code></pre><script>alert(5)</script>"
```

```"><script>alert(6)</script>
y
```
""")
    tags = re.findall(r"<[a-z][^>]*>", html)
    assert not [t for t in tags if re.search(r"\bon\w+=|javascript:|<script", t)], tags
    assert "&lt;script&gt;alert(1)" in html  # shown as text
    assert '<a href="https://example.org" rel="noopener noreferrer">ok</a>' in html
    assert '<pre class="hl"><code class="language-python">' in html
    assert "&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;" in html


def test_a_problem_that_needs_a_gpu_is_refused_without_gpu_workers(settings, clock,
                                                                   problems_root):
    write_cuda_problem(problems_root)
    with TestClient(create_app(settings, clock=clock)) as client:
        assert client.app.state.catalog.get("gpu-add").needs_gpu
        alice = make_user(client, "alice")
        r = client.post("/api/submissions?lang=en", headers=alice,
                        json={"problem": "gpu-add", "code": GOOD})
        assert r.status_code == 503 and "no GPU worker" in r.json()["detail"]
        worker_auth = {"Authorization": "Bearer worker-secret"}
        client.post("/worker/register", headers=worker_auth, json={"name": "g", "gpu": True})
        r = client.post("/api/submissions", headers=alice,
                        json={"problem": "gpu-add", "code": GOOD})
        assert r.status_code == 202


def test_the_bank_follows_edits_on_disk(problems_root):
    catalog = Catalog(problems_root)
    before = catalog.get("add-one").version
    assert not catalog.refresh()
    toml = problems_root / "add-one" / "problem.toml"
    toml.write_text(toml.read_text().replace('zh = "加一"', 'zh = "加一（新）"'))
    assert catalog.refresh()
    after = catalog.get("add-one")
    assert after.version != before and after.title("zh") == "加一（新）"
    toml.write_text("not toml [")  # an edit in progress: keep what works
    assert not catalog.refresh() and catalog.get("add-one") is after
