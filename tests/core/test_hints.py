"""Failure messages name the bug. Each row is a realistic wrong submission from a core
problem's submissions/wrong_answer/ and the hint its first failing case must give: a
learner who wrote that bug is told what to change, not only that a number differs."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.grader import Options, grade
from judge.package import load_problem
from judge.verdict import Verdict

ROOT = Path(__file__).resolve().parents[2] / "problems"

# (problem, fixture, the case to run (None: all), words the English message must contain)
HINTS = [
    ("padding-collate", "mask_from_pad_id", None, "build the mask from the lengths"),
    ("padding-collate", "pads_with_zero", None, "padding positions must hold pad_id (7)"),
    ("padding-collate", "fixed_max_len", None, "T must be this batch's longest length 3"),
    ("padding-collate", "left_by_flipping_rows", None, "tokens keep their order"),
    ("padding-collate", "sorts_batch_by_length", None, "row i must be batch[i]"),
    ("padding-collate", "modifies_samples", None, "must not modify the samples"),
    ("padding-collate", "side_before_multiple", None, "the order of the parameters"),
    ("length-bucketing", "torch_default_argsort", None, "use a stable sort"),
    ("length-bucketing", "sorted_descending", None, "not descend"),
    ("length-bucketing", "len_ignores_drop_last", None, "N // batch_size"),
    ("length-bucketing", "global_random_shuffle", None, "changed the global RNG state"),
    ("length-bucketing", "seed_times_epoch", None, "seed the generator with both seed and epoch"),
    ("length-bucketing", "sorted_pools_not_shuffled", None, "shuffle the batches"),
    ("length-bucketing", "no_bucketing", None, "sort by length before cutting batches"),
    ("length-bucketing", "padding_over_real_tokens", None, "padding / all tokens"),
    ("length-bucketing", "seeded_from_string_hash", None, "seeded from Python's hash()"),
    ("length-bucketing", "yields_one_list_cleared", None, "yield a new list for every batch"),
    ("grad-accumulation", "divide_by_accum_steps", None, "not by accum_steps"),
    ("grad-accumulation", "mean_of_microbatch_means", None, "weights the samples of small"),
    ("grad-accumulation", "zero_grad_every_microbatch", None, "once per window"),
    ("grad-accumulation", "never_zero_grad", None, "zero_grad() was never called"),
    ("grad-accumulation", "step_off_by_one", None, "(i + 1) % accum_steps == 0"),
    ("grad-accumulation", "drops_short_last_window", None, "must make a step too"),
    ("grad-accumulation", "clip_per_microbatch", None, "clip once"),
    ("grad-accumulation", "clip_norm_per_parameter", None, "not one per parameter"),
    ("grad-accumulation", "clip_grad_value_instead_of_norm", "example_clip_and_scheduler",
     "use clip_grad_norm_"),
    ("grad-accumulation", "scheduler_per_microbatch", None, "once after each optimizer.step()"),
    ("grad-accumulation", "losses_unnormalised", None, "SUM of losses"),
    ("grad-accumulation", "clip_scales_up", None, "must not be scaled up to max_grad_norm"),
    ("grad-accumulation", "windows_by_sample_count", None, "count micro-batches, not samples"),
    ("resumable-training", "forgets_optimizer", "example_one_kill", "restore the optimizer"),
    ("resumable-training", "forgets_scheduler", "example_one_kill", "restore the scheduler"),
    ("resumable-training", "forgets_torch_rng", "example_one_kill", "torch.get_rng_state()"),
    ("resumable-training", "logs_before_step", "example_uninterrupted",
     "after optimizer.step()"),
    ("resumable-training", "non_atomic_save", "kill_mid_write", "atomically"),
    ("resumable-training", "saves_before_optimizer_step", "example_one_kill",
     "the checkpoint was taken before optimizer.step()"),
    ("resumable-training", "eval_after_loading", "example_one_kill", "was in eval mode"),
    ("resumable-training", "pid_named_tmp_never_removed", "many_kills_mid_write",
     "several half-written temporary files"),
    ("train-step", "zero_grad_after_backward", None, "clear them BEFORE backward"),
    ("train-step", "never_zero_grad", None, "leaked into the step"),
    ("train-step", "zeros_instead_of_none", "unused_branch_adamw", "must keep grad None"),
    ("train-step", "clip_after_step", "clip_active", "used unclipped gradients"),
    ("train-step", "clip_grad_value", "clip_active", "clip_grad_value_"),
    ("train-step", "returns_norm_after_clipping", None, "norm BEFORE clipping"),
    ("train-step", "scheduler_before_optimizer", None, "after optimizer.step()"),
    ("train-step", "steps_on_nan_loss", None, "skip the update when the loss is not finite"),
    ("train-step", "ignores_nonfinite_norm", None, "a non-finite gradient norm skips"),
    ("train-step", "no_backward_on_nan_loss", None, "every rank must run backward"),
    ("train-step", "no_model_train", None, "call model.train() before the forward"),
    ("train-step", "returns_tensors", None, "return Python floats"),
    ("warmup-cosine", "warmup_off_by_one", None, "not (s + 1) / W"),
    ("warmup-cosine", "cosine_over_total", None, "must span T − W steps"),
    ("warmup-cosine", "rises_after_total", None, "clamp p at 1"),
    ("warmup-cosine", "min_lr_absolute", None, "the floor is base · m"),
    ("warmup-cosine", "one_base_for_all_groups", None, "its own initial lr"),
    ("warmup-cosine", "step_count_in_closure", None, "the schedule started over"),
    ("warmup-cosine", "stores_a_function_in_state", None, "no functions"),
    ("evaluate", "mean_of_batch_means", None, "weigh each by its batch size"),
    ("evaluate", "accuracy_mean_of_batches", None, "mean of the batches' accuracies"),
    ("evaluate", "accuracy_of_last_batch", "accuracy_all_batches", "the last batch's value"),
    ("evaluate", "no_eval_mode", "example_dataloader", "call model.eval() first"),
    ("evaluate", "model_train_at_the_end", None, "save each module's own training flag"),
    ("evaluate", "restores_top_flag_only", None, "save each module's own training flag"),
    ("evaluate", "mode_not_restored", None, "restore every module's training flag"),
    ("evaluate", "builds_gradients", None, "torch.no_grad() or torch.inference_mode()"),
    ("evaluate", "zero_grad_first", None, "no zero_grad()"),
    ("token-accumulation", "mean_of_microbatch_means", "example_worked",
     "the mean of the micro-batches' mean losses"),
    ("token-accumulation", "counts_ignored_tokens", "example_worked",
     "count only the tokens with labels != ignore_index"),
    ("token-accumulation", "empty_window_steps", "example_ignore_index_and_empty_window",
     "must make no step"),
    ("token-accumulation", "nan_on_empty_microbatch", "empty_microbatch_in_window", "0/0 = NaN"),
    ("token-accumulation", "hard_coded_ignore_index", "ignore_index_valid_id",
     "hard-coded -100"),
    ("amp-step", "clip_scaled_gradients", "example_one_step",
     "scaler.unscale_(optimizer) first"),
    ("amp-step", "optimizer_step_directly", "example_one_step",
     "call scaler.step(optimizer)"),
    ("amp-step", "scheduler_on_skipped_step", "example_skipped_step",
     "scheduler.step() must not be called"),
    ("amp-step", "no_autocast", "example_one_step", "under torch.autocast"),
    ("amp-step", "forgets_update", "example_one_step", "call scaler.update() once"),
    ("amp-step", "zeros_instead_of_none", "unused_parameter", "zero_grad(set_to_none=True)"),
    ("early-stopping", "state_dict_reference", "example_worked",
     "model.state_dict()'s tensors ARE the live parameters"),
    ("early-stopping", "patience_off_by_one", "example_worked", "count >= patience"),
    ("early-stopping", "parameters_only", "example_worked", "keep every buffer too"),
    ("early-stopping", "nan_is_improvement", "example_max_mode_and_resume",
     "Check math.isfinite(metric) first"),
    ("early-stopping", "max_mode_wrong_sign", "example_max_mode_and_resume",
     "metric > best + min_delta"),
    ("early-stopping", "restore_shares_memory", "example_worked", "share memory"),
]


@pytest.fixture(scope="module")
def problems():
    return {}


@pytest.mark.parametrize(("slug", "fixture", "case", "words"), HINTS,
                         ids=[f"{s}/{f}" for s, f, _, _ in HINTS])
def test_a_known_bug_gets_its_hint(problems, quick_launcher, tmp_path, slug, fixture, case,
                                   words):
    if slug not in problems:
        problems[slug] = load_problem(ROOT / slug)
    code = (ROOT / slug / "submissions" / "wrong_answer" / f"{fixture}.py").read_text()
    # the first failing case comes before or at the first hidden one: the rest need not run
    options = Options(seed=7, throughput=False, cases=(case,) if case else (),
                      jobs_root=tmp_path, stop_at_hidden_failure=True)
    report = grade(problems[slug], code, quick_launcher, options)
    assert report.verdict is Verdict.WRONG_ANSWER, report.to_json("en")
    first = next(t for t in report.tests if t.verdict is Verdict.WRONG_ANSWER)
    assert words in first.message("en"), first.message("en")
    assert first.message("zh") and first.message("zh") != first.message("en")


def test_a_scaler_used_out_of_order_gets_a_hint_with_its_runtime_error(quick_launcher,
                                                                       tmp_path):
    """GradScaler's own messages for misuse are terse ("No inf checks were recorded for
    this optimizer."): amp-step's cases add what to change (t.explain_errors)."""
    problem = load_problem(ROOT / "amp-step")
    path = ROOT / "amp-step/submissions/runtime_error/zero_grad_to_none_after_backward.py"
    options = Options(seed=7, throughput=False, cases=("example_one_step",), jobs_root=tmp_path)
    report = grade(problem, path.read_text(), quick_launcher, options)
    assert report.verdict is Verdict.RUNTIME_ERROR, report.to_json("en")
    message = report.tests[0].message
    assert "No inf checks were recorded for this optimizer" in message.en
    assert "zero_grad belongs before the backward" in message.en
    assert "zero_grad 要放在 backward 之前" in message.zh
