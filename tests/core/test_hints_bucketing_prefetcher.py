"""Failure messages name the bug, for distributed-bucketing and cuda-prefetcher: each row is
a realistic wrong submission from the problem's submissions/ and words its first failing
case's English message must contain. The CUDA rows run on a machine with a GPU (-m gpu)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.grader import Options, grade
from judge.package import load_problem
from judge.verdict import Verdict

ROOT = Path(__file__).resolve().parents[2] / "problems"

# (problem, fixture, the case to run (None: all), words the English message must contain)
HINTS = [
    ("distributed-bucketing", "own_seed_per_rank", None, "never put the rank into the seed"),
    ("distributed-bucketing", "buckets_split_by_rank", None, "the same rank always gets"),
    ("distributed-bucketing", "round_robin_batches", None, "unrelated parts of the length"),
    ("distributed-bucketing", "small_pools", None, "make them large"),
    ("distributed-bucketing", "no_bucketing", None, "Sort by length, cut into steps"),
    ("distributed-bucketing", "len_forgets_replicas", None, "N // (num_replicas × batch_size)"),
    ("distributed-bucketing", "uneven_counts_strided", "equal_counts",
     "the same on every rank"),
    ("distributed-bucketing", "pads_by_repeating", "ranks_disjoint", "N // (num_replicas"),
    ("distributed-bucketing", "epoch_ignored", None, "both seed and epoch"),
    ("distributed-bucketing", "seed_ignored", None, "seed the generator with seed too"),
    ("distributed-bucketing", "generator_in_init", None, "same batches"),
    ("distributed-bucketing", "global_torch_seed", None, "changed the global RNG state"),
    ("distributed-bucketing", "steps_in_length_order", None, "shuffle the order of the steps"),
    ("distributed-bucketing", "numpy_int_indices", None, "Python ints"),
    ("distributed-bucketing", "rank_not_checked", None, "0 ≤ rank < num_replicas"),
    ("cuda-prefetcher", "iterator_in_init", None, "new iterator of the loader in __iter__"),
    ("cuda-prefetcher", "last_batch_lost", None, "the last batch is missing"),
    ("cuda-prefetcher", "namedtuple_as_tuple", None, "type(batch)(*items)"),
    ("cuda-prefetcher", "reads_whole_loader", None, "never the whole loader"),
    ("cuda-prefetcher", "tensors_only_dict", None, "the dict's keys changed"),
    ("cuda-prefetcher", "torch_tensor_rewrap", None, "this tensor was copied"),
]

# Bugs only a GPU shows (the fixtures carry "# judge-check: needs cuda").
CUDA_HINTS = [
    ("cuda-prefetcher", "no_wait_stream", "consumed_at_once_cuda", "wait_stream(copy_stream)"),
    ("cuda-prefetcher", "no_record_stream", "delayed_read_cuda", "record_stream"),
    ("cuda-prefetcher", "pageable_non_blocking", "pins_itself_cuda", "tensor.pin_memory()"),
    ("cuda-prefetcher", "nested_not_moved", "nested_cuda", "move to the GPU too"),
]


def first_failure(slug, fixture, case, tmp_path, launcher, cuda=False):
    problem = load_problem(ROOT / slug)
    code = (ROOT / slug / "submissions" / "wrong_answer" / f"{fixture}.py").read_text()
    # the first failing case comes before or at the first hidden one: the rest need not run
    options = Options(seed=7, throughput=False, cases=(case,) if case else (),
                      jobs_root=tmp_path, cuda=cuda, stop_at_hidden_failure=True)
    report = grade(problem, code, launcher, options)
    assert report.verdict is Verdict.WRONG_ANSWER, report.to_json("en")
    return next(t for t in report.tests if t.verdict is Verdict.WRONG_ANSWER)


@pytest.mark.parametrize(("slug", "fixture", "case", "words"), HINTS,
                         ids=[f"{s}/{f}" for s, f, _, _ in HINTS])
def test_a_known_bug_gets_its_hint(quick_launcher, tmp_path, slug, fixture, case, words):
    first = first_failure(slug, fixture, case, tmp_path, quick_launcher)
    assert words in first.message("en"), first.message("en")
    assert first.message("zh") and first.message("zh") != first.message("en")


@pytest.mark.gpu
@pytest.mark.parametrize(("slug", "fixture", "case", "words"), CUDA_HINTS,
                         ids=[f"{s}/{f}" for s, f, _, _ in CUDA_HINTS])
def test_a_bug_only_a_gpu_shows_gets_its_hint(quick_launcher, tmp_path, slug, fixture, case,
                                              words):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    first = first_failure(slug, fixture, case, tmp_path, quick_launcher, cuda=True)
    assert words in first.message("en"), first.message("en")
