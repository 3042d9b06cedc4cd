"""What an author meets on the admin pages: uploads refused on lint errors with the
reasons (issue 15), the calibration table and lint findings on the version page, labels
in the page's language, confirmations, and a 413 page that looks like the site."""

from __future__ import annotations

import html
import io
import re
import shutil
import zipfile
from pathlib import Path

import pytest

from judge.cli import main
from tests.conftest import TESTS, write_problem
from tests.web.support import csrf, package_zip, rows, upload
from tests.web.test_admin import finish_validation, version_id, visible
from web.main import UPLOAD_BODY_LIMIT

BUNDLED_TEMPLATE = Path(__file__).resolve().parents[2] / "problems" / "_template"

LATE_PUBLIC = TESTS + '\n@case(public=True, zh="晚", en="late")\ndef example_late(t):\n    pass\n'


def refusal(response) -> str:
    assert response.status_code == 400, response.text
    return html.unescape(visible(response.text))


def test_a_public_case_after_a_hidden_one_is_refused_at_upload(client, admin, tmp_path):
    r = upload(client, package_zip(write_problem(tmp_path / "p", tests=LATE_PUBLIC)))
    text = refusal(r)
    assert "python -m judge lint" in text
    assert "公开用例 example_late 在隐藏用例 random_values 之后" in text
    assert rows(client.app, "select count(*) from problem_versions "
                            "join problems on problems.id = problem_id "
                            "where slug = 'double-it'")[0][0] == 0  # nothing stored
    api = client.post("/api/admin/problems?lang=en", headers=admin, files={
        "file": ("p.zip", package_zip(write_problem(tmp_path / "q", tests=LATE_PUBLIC)),
                 "application/zip")})
    assert api.status_code == 400
    assert ("tests.py:22: public case example_late comes after hidden case random_values; "
            "put public cases first") in api.json()["detail"]


def test_a_zip_with_two_top_folders_says_so(client, admin, tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for top in ("double-it", "other"):
            for path in sorted(write_problem(tmp_path / top).rglob("*")):
                if path.is_file():
                    archive.writestr(f"{top}/{path.name}", path.read_bytes())
    text = refusal(upload(client, buffer.getvalue()))
    assert "压缩包顶层有 2 个文件夹（double-it, other）" in text
    assert "missing problem.toml" not in text


def test_a_folder_not_named_after_the_slug_is_refused_like_check(client, admin, tmp_path,
                                                                settings, capsys):
    folder = write_problem(tmp_path / "p")
    text = refusal(upload(client, package_zip(folder, top="my-problem")))
    assert "文件夹名 'my-problem' 必须与 slug 'double-it' 相同" in text
    assert version_id(upload(client, package_zip(folder, top="double-it"))) > 0
    renamed = folder.rename(tmp_path / "p" / "renamed")
    assert main(["problems", "add", str(renamed), "--data-dir", str(settings.data_dir)]) == 2
    err = capsys.readouterr().err
    assert "the folder 'renamed' must be named after the slug 'double-it'" in err


def test_the_version_page_shows_the_calibration_and_lint_in_the_page_language(
        client, admin, tmp_path):
    vid = version_id(upload(client, package_zip(write_problem(tmp_path / "p"))))
    speed = [{"name": "big", "verdict": "accepted", "ratio": 0.8, "interval": [0.7, 0.9],
              "min_ratio": 0.3}]
    finish_validation(client, vid, [
        {"label": "reference", "expected": "accepted", "verdict": "accepted", "ok": True,
         "detail": "", "speed": speed},
        {"label": "starter", "expected": "not accepted", "verdict": "runtime_error",
         "ok": True, "detail": "", "caught_by": "example_small", "caught_public": True},
        {"label": "submissions/wrong_answer/a.py", "expected": "wrong_answer",
         "verdict": "wrong_answer", "ok": True, "detail": "", "caught_by": "example_small",
         "caught_public": True},
        {"label": "submissions/too_slow/b.py", "expected": "too_slow", "verdict": "too_slow",
         "ok": True, "detail": "", "speed": [{**speed[0], "ratio": 0.05,
                                              "interval": [0.04, 0.06]}]}])
    page = client.get(f"/admin/versions/{vid}").text
    table = visible(page[page.index('id="files"'):page.index("</table>", page.index('id="files"'))])
    assert "不能通过" in table and "not accepted" not in table
    assert "example_small （只有公开用例）" in table and "big 0.8x [0.70, 0.90]" in table
    bars = visible(page[page.index('id="bars"'):])
    assert "建议 min_ratio 0.221" in bars  # sqrt(0.07 * 0.7): between the two
    lint = visible(page[page.index('id="lint"'):])
    assert "警告 · submissions/accepted 有 0 个正确解答" in lint
    client.post("/lang", data={"lang": "en", "csrf_token": csrf(client, "/admin/problems")})
    page = visible(client.get(f"/admin/versions/{vid}").text)
    assert "not accepted" in page and "suggested min_ratio 0.221" in page
    assert "warning · submissions/accepted 0 correct solution(s)" in page


def test_publish_and_rejudge_all_ask_first(client, admin, tmp_path):
    vid = version_id(upload(client, package_zip(write_problem(tmp_path / "p"))))
    from web.data import bank

    with client.app.state.sessionmaker() as db:
        bank.validation_finished(db, vid, {"ok": True, "errors": [], "files": []},
                                 client.app.state.clock())
        db.commit()
    page = client.get(f"/admin/versions/{vid}").text
    form = re.search(r'<form[^>]*/publish"[^>]*>', page).group(0)
    assert 'data-confirm="发布后学员立刻看到这个版本' in form
    page = client.get("/admin/problems/double-it").text
    form = re.search(r'<form[^>]*id="rejudge-form"[^>]*>', page).group(0)
    assert 'data-confirm-all="重测这道题的全部提交？' in form
    assert '<script src="/static/admin.js"' in page
    script = client.get("/static/admin.js").text
    assert "window.confirm(question)" in script and "event.preventDefault()" in script


def test_a_zip_too_large_gets_a_page_of_the_site_in_the_admins_language(client, admin):
    client.post("/lang", data={"lang": "zh", "csrf_token": csrf(client, "/admin/problems")})
    token = csrf(client, "/admin/problems")
    big = b"0" * (UPLOAD_BODY_LIMIT + 1024)
    r = client.post("/admin/problems/upload", data={"csrf_token": token},
                    files={"file": ("big.zip", big, "application/zip")})
    assert r.status_code == 413
    text = visible(r.text)
    assert "文件太大：题目包的 zip 最多 20 MiB" in text
    assert "root" in text and "退出" in text  # the nav of a logged-in admin


@pytest.mark.parametrize("seed, stored", [(None, None), (7, 7)])
def test_a_validation_without_a_seed_does_not_claim_seed_0(seed, stored):
    from web.validation import validation_result

    got = validation_result({"ok": True, "files": [], "seed": seed, "time_s": 12.5})
    assert got["seed"] == stored and got["time_s"] == 12.5


@pytest.mark.slow
def test_a_validation_is_split_across_the_idle_workers_and_merged(
        client, admin, worker, plain, settings, problems_root, tmp_path):
    from tests.web.test_admin import run_worker

    folder = write_problem(tmp_path / "p")
    for name, body in (("accepted/a.py", "return x + x"), ("accepted/b.py", "return 2 * x"),
                       ("wrong_answer/c.py", "return x")):
        path = folder / "submissions" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {name}\ndef double(x):\n    {body}\n")
    for name in ("one", "two"):
        worker.register(name, False, {})  # both idle: heard from now, no job
    vid = version_id(upload(client, package_zip(folder)))
    jobs = rows(client.app, f"select shard, shards from jobs where version_id = {vid} "
                            f"order by shard")
    assert jobs == [(0, 2), (1, 2)]
    assert run_worker(worker, plain, settings, problems_root) == 2  # one worker, both shards
    # The first shard claimed takes every file; the second finds them taken.
    assert rows(client.app, "select shard, count(*) from validation_takes group by shard") \
        == [(0, 5)]
    data = client.get(f"/api/admin/versions/{vid}").json()
    assert data["status"] == "valid", data
    report = data["report"]
    assert [(f["label"], f["verdict"]) for f in report["files"]] == [
        ("reference", "accepted"), ("starter", "runtime_error"),
        ("submissions/accepted/a.py", "accepted"), ("submissions/accepted/b.py", "accepted"),
        ("submissions/wrong_answer/c.py", "wrong_answer")]
    assert report["shards"] == 2 and report["time_s"] is not None and "parts" not in report
    page = visible(client.get(f"/admin/versions/{vid}").text)
    assert "验证用时" in page


def test_shards_merge_like_one_check():
    from judge.shards import merge_parts

    ref = {"label": "reference", "expected": "accepted", "verdict": "accepted", "ok": True}
    bad = {"label": "submissions/accepted/a.py", "expected": "accepted",
           "verdict": "wrong_answer", "ok": False, "detail": "a.py: expected accepted"}
    merged = merge_parts([{"files": [ref], "errors": [], "warnings": ["w"]},
                          {"files": [bad], "errors": [], "warnings": ["w"]}])
    assert merged["ok"] is False and merged["warnings"] == ["w"]
    assert merged["files"][0]["ok"] is False and "may be wrong" in merged["files"][0]["detail"]
    crashed = {**ref, "verdict": "runtime_error", "ok": False}
    merged = merge_parts([{"files": [crashed]}, {"files": [{**bad, "ok": True}]}])
    assert [f["label"] for f in merged["files"]] == ["reference"]
    assert merged["errors"][0].startswith("the reference is not accepted")
    # A CUDA-only fixture a CPU shard skipped and a GPU shard took is judged, not skipped.
    ref = {"label": "reference", "expected": "accepted", "verdict": "accepted", "ok": True}
    cuda = {**ref, "label": "submissions/too_slow/sync.py", "expected": "too_slow"}
    merged = merge_parts([{"files": [ref], "skipped": [cuda["label"]]},
                          {"files": [cuda], "skipped": []}])
    assert merged["skipped"] == [] and merged["ok"]


def test_english_pages_use_an_ascii_colon(tmp_path):
    from fastapi.testclient import TestClient

    from tests.web.support import write_bank
    from web.main import create_app
    from web.settings import Settings

    root = write_bank(tmp_path / "problems")
    with (root / "add-one" / "problem.toml").open("a") as f:
        f.write('\n[[throughput]]\nname = "big"\nworkload = "big"\n'
                'title = { zh = "大数组", en = "a big array" }\n')
    app = create_app(Settings(data_dir=tmp_path / "data", problems_dir=root,
                              worker_token="w", secret_key="s"))
    with TestClient(app) as client:
        client.cookies.set("lang", "en")
        english = visible(client.get("/problems/add-one").text)
        client.cookies.set("lang", "zh")
        chinese = visible(client.get("/problems/add-one").text)
    app.state.engine.dispose()
    assert "Speed check: a big array" in english and "：" not in english.split("Speed check")[1][:5]
    assert "速度检查：大数组" in chinese


def test_an_edit_that_puts_a_public_case_last_is_refused(client, admin):
    from tests.web.test_admin import _tests

    base = rows(client.app, "select published_version_id from problems")[0][0]
    tests = _tests(client, base) + ('\n\n@case(public=True, zh="晚", en="late")\n'
                                    'def example_late(t):\n    pass\n')
    fields = {"csrf_token": csrf(client, f"/admin/versions/{base}/edit"),
              "statement_zh": "# 加一\n\n新的题面", "statement_en": "# Add one\n\nNew text",
              "tests": tests, "case_wall_s": "5", "cpu_s": "20", "memory_mb": "1024",
              "output_kb": "16"}
    text = refusal(client.post(f"/admin/versions/{base}/edit", data=fields))
    assert "公开用例 example_late 在隐藏用例" in text and "之后" in text
    assert rows(client.app, "select count(*) from problem_versions")[0][0] == 1


def test_shards_take_the_reference_then_the_costliest_files_first(tmp_path):
    from judge.package import load_problem
    from judge.shards import by_cost, check_files, file_cost

    folder = tmp_path / "template"
    shutil.copytree(BUNDLED_TEMPLATE, folder)
    (folder / "submissions" / "time_limit_exceeded").mkdir()
    (folder / "submissions" / "time_limit_exceeded" / "sleeps.py").write_text(
        "import time\n\ndef masked_mean(x, mask):\n    time.sleep(60)\n")
    problem = load_problem(folder, named_by_slug=False)
    files = check_files(problem, cuda=True)
    order = [label for label, _, _ in by_cost(problem, files)]
    assert sorted(order) == sorted(label for label, _, _ in files)
    # the reference, then the fixture that waits out its wall limit, then the too_slow
    # fixture (its timed calls are the slow ones), the accepted ones, the rest last
    assert order[:2] == ["reference", "submissions/time_limit_exceeded/sleeps.py"]
    assert file_cost(problem, "time_limit_exceeded") == problem.meta.limits.case_wall_s
    kinds = [label.split("/")[1] for label in order[2:] if "/" in label]
    timed = kinds[:kinds.index("accepted")] + ["accepted"] * kinds.count("accepted")
    assert timed[0] == "too_slow" and kinds[:len(timed)] == timed
    assert order.index("starter") > order.index(next(f for f in order if "/accepted/" in f))


def test_a_shard_judges_only_the_files_it_takes_in_the_order_it_asks(plain):
    from judge.check import check_problem
    from judge.package import load_problem
    from judge.shards import by_cost, check_files

    problem = load_problem(BUNDLED_TEMPLATE, named_by_slug=False)
    asked: list[str] = []

    def take(label: str, expected: str) -> bool:
        asked.append(label)
        return label in ("reference", "starter")

    result = check_problem(problem, plain, workers=1, throughput=False, take=take)
    assert asked == [label for label, _, code in by_cost(problem, check_files(problem))
                     if code is not None]  # each file once, just before it would be judged
    assert [o.label for o in result.outcomes] == ["reference", "starter"] and result.ok
    # A shard that takes nothing judges nothing and is not a failure.
    nothing = check_problem(problem, plain, workers=1, throughput=False,
                            take=lambda label, expected: False)
    assert nothing.outcomes == [] and nothing.ok


def test_an_identical_upload_says_it_stored_nothing_new(client, admin, tmp_path):
    data = package_zip(write_problem(tmp_path / "p"))
    first = upload(client, data)
    assert first.headers["location"].endswith(f"/admin/versions/{version_id(first)}")
    again = upload(client, data)
    assert again.status_code == 303 and again.headers["location"].endswith("?notice=unchanged")
    page = client.get(again.headers["location"]).text
    assert 'id="unchanged"' in page and "没有保存新版本" in page
    assert 'id="unchanged"' not in client.get(first.headers["location"]).text


def test_a_version_carries_the_change_note_its_author_wrote(client, admin, tmp_path):
    token = csrf(client, "/admin/problems")
    assert 'id="upload-note"' in client.get("/admin/problems").text
    r = client.post("/admin/problems/upload", data={"csrf_token": token,
                                                    "note": "  one more hidden case "},
                    files={"file": ("p.zip", package_zip(write_problem(tmp_path / "p")),
                                    "application/zip")}, follow_redirects=False)
    vid = version_id(r)
    assert client.get(f"/api/admin/versions/{vid}").json()["note"] == "one more hidden case"
    assert "one more hidden case" in visible(client.get(f"/admin/versions/{vid}").text)
    api = client.post("/api/admin/problems", headers=admin, data={"note": "via the API"},
                      files={"file": ("q.zip", package_zip(write_problem(
                          tmp_path / "q", number=8, slug="triple-it")), "application/zip")})
    assert api.status_code == 201 and api.json()["note"] == "via the API"
    plain = upload(client, package_zip(write_problem(tmp_path / "r", number=9, slug="quad-it")),
                   name="quad.zip")
    assert client.get(f"/api/admin/versions/{version_id(plain)}").json()["note"] == "quad.zip"


def test_an_edit_keeps_its_change_note(client, admin):
    from tests.web.test_admin import _tests

    base = rows(client.app, "select published_version_id from problems")[0][0]
    assert 'id="edit-note"' in client.get(f"/admin/versions/{base}/edit").text
    fields = {"csrf_token": csrf(client, f"/admin/versions/{base}/edit"),
              "statement_zh": "# 加一\n\n新的题面", "statement_en": "# Add one\n\nNew text",
              "tests": _tests(client, base), "case_wall_s": "5", "cpu_s": "20",
              "memory_mb": "1024", "output_kb": "16", "note": "clearer statement"}
    vid = version_id(client.post(f"/admin/versions/{base}/edit", data=fields,
                                 follow_redirects=False))
    assert client.get(f"/api/admin/versions/{vid}").json()["note"] == "clearer statement"


def test_a_never_published_version_can_be_deleted_and_a_published_one_cannot(
        client, admin, tmp_path):
    vid = version_id(upload(client, package_zip(write_problem(tmp_path / "p"))))
    page = client.get(f"/admin/versions/{vid}").text
    assert 'id="delete-version"' in page and 'data-confirm="删除这个从未发布的版本' in page
    content_hash = client.get(f"/api/admin/versions/{vid}").json()["version"]
    store = client.app.state.store
    assert store.has(content_hash)
    r = client.post(f"/admin/versions/{vid}/delete", data={
        "csrf_token": csrf(client, f"/admin/versions/{vid}")}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/admin/problems"  # the last one
    assert client.get(f"/api/admin/versions/{vid}").status_code == 404
    assert not store.has(content_hash)
    assert rows(client.app, "select count(*) from problems where slug = 'double-it'")[0][0] == 0
    assert "删除版本" in visible(client.get("/admin/audit").text)
    # the bundled, published add-one is kept, and says why
    base = rows(client.app, "select published_version_id from problems")[0][0]
    assert 'id="delete-version"' not in client.get(f"/admin/versions/{base}").text
    r = client.delete(f"/api/admin/versions/{base}?lang=en", headers=admin)
    assert r.status_code == 409 and r.json()["detail"] == (
        "cannot delete: a bundled version comes from the problems/ folder and cannot be "
        "deleted")


def test_a_version_once_published_is_kept(client, admin, tmp_path):
    from web.data import bank

    first = version_id(upload(client, package_zip(write_problem(tmp_path / "p"))))
    second = version_id(upload(client, package_zip(write_problem(tmp_path / "q", wall=4.0))))
    with client.app.state.sessionmaker() as db:
        for vid in (first, second):
            bank.validation_finished(db, vid, {"ok": True, "errors": [], "files": []},
                                     client.app.state.clock())
        db.commit()
    for vid in (first, second):
        r = client.post(f"/admin/versions/{vid}/publish", data={
            "csrf_token": csrf(client, "/admin/problems")}, follow_redirects=False)
        assert r.status_code == 303
    r = client.delete(f"/api/admin/versions/{first}?lang=en", headers=admin)
    assert r.status_code == 409 and "was published once" in r.json()["detail"]
    assert "这个版本发布过" in visible(client.get(f"/admin/versions/{first}").text)


def test_problems_add_takes_a_change_note(client, settings, tmp_path, capsys):
    folder = write_problem(tmp_path / "p", number=990)  # the CLI's bank: the bundled ones
    assert main(["problems", "add", str(folder), "--note", "first draft",
                 "--data-dir", str(settings.data_dir)]) == 0
    assert rows(client.app, "select note from problem_versions join problems on "
                            "problems.id = problem_id where slug = 'double-it'") == [
        ("first draft",)]


def test_two_versions_are_compared_file_by_file(client, admin, tmp_path):
    first = version_id(upload(client, package_zip(write_problem(tmp_path / "p"))))
    second = version_id(upload(client, package_zip(write_problem(
        tmp_path / "q", wall=4.0, tests=TESTS.replace('en="negatives"', 'en="negative values"')),
        extra={"data.txt": "hello"})))
    page = client.get("/admin/problems/double-it").text
    assert 'id="compare-form"' in page and 'action="/admin/compare"' in page
    assert f'/admin/versions/{second}/diff?against={first}' in page  # no published one yet
    diff = client.get(f"/admin/compare?old={first}&new={second}").text
    sections = re.findall(r'data-file="([^"]+)" data-status="([^"]+)"', diff)
    assert sections == [("problem.toml", "changed"), ("tests.py", "changed"),
                        ("data.txt", "added")]
    text = html.unescape(visible(diff))
    assert "-case_wall_s = 3.0" in text and "+case_wall_s = 4.0" in text
    assert '+def negatives(t):' not in text and 'en="negative values"' in text
    same = client.get(f"/admin/versions/{first}/diff?against={first}").text
    assert 'id="no-difference"' in same


def test_a_new_number_reaches_the_problem_only_when_published(client, admin, tmp_path):
    from web.data import bank

    def valid(vid):
        with client.app.state.sessionmaker() as db:
            bank.validation_finished(db, vid, {"ok": True, "errors": [], "files": []},
                                     client.app.state.clock())
            db.commit()

    def publish(vid):
        r = client.post(f"/admin/versions/{vid}/publish", data={
            "csrf_token": csrf(client, "/admin/problems")}, follow_redirects=False)
        assert r.status_code == 303, r.text

    def number():
        return rows(client.app, "select number from problems where slug = 'double-it'")[0][0]

    first = version_id(upload(client, package_zip(write_problem(tmp_path / "p", number=7))))
    valid(first)
    publish(first)
    second = version_id(upload(client, package_zip(write_problem(tmp_path / "q", number=8))))
    assert number() == 7  # not renumbered by an upload nobody sees yet
    valid(second)
    page = client.get(f"/admin/versions/{second}").text
    assert 'id="renumbers"' in page and "把题号从 7 改为 8" in page
    assert "题号将从 7 改为 8。" in re.search(r'<form[^>]*/publish"[^>]*>', page).group(0)
    publish(second)
    assert number() == 8
    assert 'id="renumbers"' not in client.get(f"/admin/versions/{second}").text


def test_the_edit_form_edits_every_text_file(client, admin, tmp_path):
    from tests.web.support import GOOD, WRONG, write_bank

    extra = {"solution.zh.md": "# 解法\n", "solution.en.md": "# Solution\n",
             "submissions/accepted/plus.py": GOOD, "submissions/wrong_answer/big.py": WRONG}
    base = version_id(upload(client, package_zip(write_bank(tmp_path) / "add-one",
                                                 extra=extra)))
    (content_hash,) = rows(client.app, f"select content_hash from problem_versions "
                                       f"where id = {base}")[0]
    old = client.app.state.store.files(content_hash)
    form = client.get(f"/admin/versions/{base}/edit").text
    assert 'name="reference_py"' in form and 'name="problem_toml"' in form
    assert 'name="fixture_py"' not in form  # add-one has no fixture.py
    for name in extra:
        assert f'name="text:{name}"' in form
    toml = old["problem.toml"].decode().replace('difficulty = "easy"', 'difficulty = "hard"')
    toml = toml.replace("cpu_s = 20.0", "cpu_s = 25.0")
    fields = {"csrf_token": csrf(client, f"/admin/versions/{base}/edit"),
              "statement_zh": old["statement.zh.md"].decode(),
              "statement_en": old["statement.en.md"].decode(), "tests": old["tests.py"].decode(),
              "case_wall_s": "5.0", "cpu_s": "20.0", "memory_mb": "2048", "output_kb": "16",
              "problem_toml": toml,
              "reference_py": "def add_one(x):\n    return 1 + x  # reordered\n",
              "starter_py": old["starter.py"].decode(),
              # one save, several files; CRLF as a browser sends it is the same text
              "text:solution.en.md": "# Solution\r\n\r\nAdd one.\r\n",
              "text:solution.zh.md": "# 解法\r\n",
              "text:submissions/wrong_answer/big.py": "# bug: big values\n" + WRONG,
              "text:submissions/accepted/plus.py": GOOD}
    vid = version_id(client.post(f"/admin/versions/{base}/edit", data=fields,
                                 follow_redirects=False))
    new = client.app.state.store.files(client.get(f"/api/admin/versions/{vid}").json()["version"])
    assert b"# reordered" in new["reference.py"]
    assert b'difficulty = "hard"' in new["problem.toml"]
    assert b"cpu_s = 25.0" in new["problem.toml"]  # the toml's own edit: fields unchanged
    assert new["solution.en.md"] == b"# Solution\n\nAdd one.\n"
    assert new["submissions/wrong_answer/big.py"].startswith(b"# bug: big values\n")
    assert {name: new[name] for name in ("solution.zh.md", "submissions/accepted/plus.py",
                                         "starter.py")} == {
        name: old[name] for name in ("solution.zh.md", "submissions/accepted/plus.py",
                                     "starter.py")}


def test_the_statement_preview_shows_both_languages_whatever_the_admins_language(
        client, admin, tmp_path):
    folder = write_problem(tmp_path / "p")
    (folder / "statement.zh.md").write_text("# 加倍\n\n把每个元素乘以二。\n")
    (folder / "statement.en.md").write_text("# Double\n\nMultiply every element by two.\n")
    vid = version_id(upload(client, package_zip(folder)))
    for lang in ("zh", "en"):
        client.post("/lang", data={"lang": lang, "csrf_token": csrf(client, "/admin/problems")})
        page = client.get(f"/admin/versions/{vid}").text
        zh = page[page.index('id="statement-preview-zh"'):page.index('id="statement-preview-en"')]
        en = page[page.index('id="statement-preview-en"'):]
        assert "把每个元素乘以二。" in zh and "Multiply every element by two." in en
