"""amp-step's CUDA cases, checked where they can be: their CPU analogues here (the same
case functions with the device rewritten to the CPU, float16 kept: torch's CPU autocast
and GradScaler take float16 too), run in this process against the reference and against
known bugs; and on a machine with a GPU (``pytest -m gpu``) the real cases, graded.

The CUDA cases of token-accumulation and early-stopping call the same scenarios as their
CPU cases with ``device="cuda"``; the GPU test grades them too."""

from __future__ import annotations

import importlib.util
import itertools
import random
from pathlib import Path
from types import ModuleType

import pytest
import torch

from judge.grader import Options, grade
from judge.package import load_problem
from judge.testing import CaseFailed, CaseSkipped
from judge.verdict import Verdict
from sandbox.launch import PlainLauncher

ROOT = Path(__file__).resolve().parents[2] / "problems"
AMP = ROOT / "amp-step"
CUDA_CASES = ("cuda_float16", "cuda_float16_overflow", "cuda_disabled_scaler")


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Caller:
    """``t.sub`` / ``t.ref`` in this process: scenarios get the module itself."""

    def __init__(self, fixture: ModuleType, solution: ModuleType) -> None:
        self.fixture, self.solution = fixture, solution

    def scenario(self, name: str, *args, **kwargs):
        return getattr(self.fixture, name)(self.solution, None, *args, **kwargs)


class LocalCtx:
    """What a case needs of judge.testing.Ctx, without runners."""

    def __init__(self, seed: int, fixture: ModuleType, sub: ModuleType, ref: ModuleType):
        self.random = random.Random(seed)
        self.rng = torch.Generator().manual_seed(seed)
        self.sub, self.ref = Caller(fixture, sub), Caller(fixture, ref)
        self.records: list = []

    def fail(self, zh, en=None):
        from judge.i18n import T

        raise CaseFailed(zh if isinstance(zh, T) else T(zh, en or zh))

    def skip(self, zh, en):
        from judge.i18n import T

        raise CaseSkipped(T(zh, en))

    def explain_errors(self, explain) -> None:
        pass

    def note(self, zh, en) -> None:
        pass


@pytest.fixture(scope="module")
def on_cpu():
    """amp-step's tests module with every setup moved from CUDA to the CPU."""
    tests = load(AMP / "tests.py", "amp_step_tests_on_cpu")
    if not tests.CPU_SCALER:
        pytest.skip("this torch has no GradScaler for the CPU")
    make_setup = tests.make_setup

    def cpu_setup(*args, **kwargs):
        kwargs["device"] = "cpu"
        return make_setup(*args, **kwargs)

    tests.make_setup = cpu_setup
    return tests


def run_case(tests: ModuleType, name: str, solution: ModuleType, seed: int) -> list:
    reference = load(AMP / "reference.py", "amp_step_reference")
    ctx = LocalCtx(seed, tests.FIXTURE, solution, reference)
    original = tests.run

    def recording_run(t, setup):
        assert setup["device"] == "cpu" and setup["dtype"] == "float16"
        got, exp = original(t, setup)
        ctx.records.append(exp)
        return got, exp

    tests.run = recording_run
    try:
        getattr(tests, name)(ctx)
    finally:
        tests.run = original
    return ctx.records


@pytest.mark.parametrize("name", CUDA_CASES)
@pytest.mark.parametrize("seed", [1, 2])
def test_the_cuda_cases_accept_the_reference_on_the_cpu(on_cpu, name, seed):
    reference = load(AMP / "reference.py", "amp_step_as_submission")
    records = run_case(on_cpu, name, reference, seed)
    assert records and all(len(r) >= 3 for r in records)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_the_float16_overflow_case_really_skips_and_grows(on_cpu, seed):
    """A scale of 2**20 overflows float16 gradients: the first steps are skipped and the
    scale backs off until they fit; then steps are taken and the scale grows again."""
    reference = load(AMP / "reference.py", "amp_step_as_submission")
    (records,) = run_case(on_cpu, "cuda_float16_overflow", reference, seed)
    taken = [on_cpu.unpack(r["returned"])[0][1] for r in records]
    scales = [r["scaler"]["scale"] for r in records]
    assert taken[0] is False and True in taken
    assert any(b > a for a, b in itertools.pairwise(scales))  # a growth


@pytest.mark.parametrize(("name", "bug", "words"), [
    ("cuda_float16", "clip_scaled_gradients", "scaler.unscale_(optimizer) first"),
    ("cuda_float16", "scheduler_on_skipped_step", "scheduler.step() must not be called"),
    ("cuda_float16", "ignores_dtype", "expected float16"),
    ("cuda_float16_overflow", "optimizer_step_directly", "call scaler.step(optimizer)"),
    ("cuda_float16_overflow", "taken_when_scale_unchanged", "taken"),
    ("cuda_disabled_scaler", "no_autocast", "autocast off"),
])
def test_the_cuda_cases_reject_known_bugs_on_the_cpu(on_cpu, name, bug, words):
    solution = load(AMP / "submissions" / "wrong_answer" / f"{bug}.py", f"amp_bug_{bug}")
    with pytest.raises(CaseFailed) as failed:
        run_case(on_cpu, name, solution, 4)
    assert words in failed.value.message.en


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize(("slug", "cases"), [
    ("amp-step", CUDA_CASES), ("token-accumulation", ("on_cuda",)),
    ("early-stopping", ("on_cuda",)),
])
def test_the_cuda_cases_accept_the_reference_on_a_gpu(tmp_path, slug, cases):
    problem = load_problem(ROOT / slug)
    options = Options(seed=11, throughput=False, cuda=True, cases=cases, jobs_root=tmp_path)
    report = grade(problem, problem.read("reference.py"), PlainLauncher(), options)
    assert report.device == "cuda"
    assert report.verdict is Verdict.ACCEPTED, report.to_json("en")
    assert [t.verdict for t in report.tests] == [Verdict.ACCEPTED] * len(cases)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize(("slug", "case", "bug"), [
    ("amp-step", "cuda_float16", "clip_scaled_gradients"),
    ("amp-step", "cuda_float16_overflow", "scheduler_on_skipped_step"),
    ("amp-step", "cuda_float16", "ignores_dtype"),
    ("token-accumulation", "on_cuda", "mean_of_microbatch_means"),
    ("early-stopping", "on_cuda", "state_dict_reference"),
])
def test_the_cuda_cases_reject_known_bugs_on_a_gpu(tmp_path, slug, case, bug):
    problem = load_problem(ROOT / slug)
    code = (ROOT / slug / "submissions" / "wrong_answer" / f"{bug}.py").read_text()
    options = Options(seed=11, throughput=False, cuda=True, cases=(case,), jobs_root=tmp_path)
    report = grade(problem, code, PlainLauncher(), options)
    assert report.verdict is Verdict.WRONG_ANSWER, report.to_json("en")
