"""Tests for resumable-training.

Every case draws a run (seed, sizes, checkpoint_every, total_steps) and a kill plan from the
case's seed. The expected run is the reference's uninterrupted train(), recorded in the
reference's runner (fixture.recorded_run). The submission's run goes through fresh runner
processes (``t.fresh()``), each running fixture.watched_run, which asks after every
``setup.log`` and around every change to ckpt_dir; at the moments of the plan the grader
SIGKILLs the process instead of answering, then starts another one with the same arguments,
until train() returns. Checked here, from outside the sandbox:

* at every question and after every kill: the bytes under ckpt_dir (walked with lstat,
  never following a link) are at most 3 checkpoints' worth, one checkpoint's worth being
  1.25 x the reference's checkpoint file of the same run;
* at every log: steps come one by one, and setup.optimizer has made exactly ``step`` steps;
* after every kill: the restart redoes at most checkpoint_every steps, skips none, and does
  not raise (an exception there means the run could not resume: wrong_answer, with the kill
  named);
* a kill planned in the middle of a checkpoint write (or right after one) waits for a write
  that the fixture's torch.save announces; when none comes for 2 x checkpoint_every steps, the
  case fails (the hooks run in the sandbox: a run that writes around them is not let through
  without the kill);
* at the end: the last logged loss of every step 1..total_steps and the final parameters are
  bitwise those of the reference's uninterrupted run, and ckpt_dir still holds a checkpoint
  (at least half the reference's).

The speed check times uninterrupted runs in folders named like the checked runs' ones, and
after each timed run checks from the host that the folder holds a checkpoint too.
"""

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import torch

from judge import compare
from judge.i18n import T
from judge.session import SubmissionError
from judge.testing import case, workload
from judge.throughput import Workload
from sandbox.protocol import Kind

CKPT_SLACK = 1.25  # one checkpoint's worth, relative to the reference's checkpoint file
MAX_CHECKPOINTS = 3
MAX_ENTRIES = 2000  # a folder walk that finds more is a failure, not a long wait
MB = 1024 * 1024

HINT_ATOMIC = T(
    "检查点要原子地写入：先写到同一目录下的临时文件，flush 并 os.fsync，"
    "再用 os.replace 换成正式文件名（被杀时旧文件仍然完好）",
    "write checkpoints atomically: write a temporary file in the same folder, flush and "
    "os.fsync it, then os.replace it onto the real name (a kill leaves the old file intact)")
HINT_RESUME = T(
    "从 ckpt_dir 里最新的完整检查点恢复，并且至少每 checkpoint_every 步保存一次",
    "resume from the newest complete checkpoint in ckpt_dir, and save one at least every "
    "checkpoint_every steps")
HINT_DISK = T(
    "删除旧的检查点（最多保留两个），并清理被杀时留下的临时文件",
    "delete old checkpoints (keep at most two) and clean up temporary files that a kill left "
    "behind")
HINT_DISK_RESTART = T(
    "重启之后 ckpt_dir 超出了上限：很可能是进程在写完新检查点之后、删除旧检查点之前被杀死，"
    "多留下了一个检查点，下一次保存又多出一个。应当在写新检查点之前删除旧的（或者在启动时清理，"
    "只留最新的一两个），而不是写完之后才删；被杀时留下的临时文件也要清理",
    "ckpt_dir went over the limit after a restart: most likely the process was killed after "
    "writing a new checkpoint and before deleting the old one, which leaves one checkpoint too "
    "many, and the next save adds another. Delete old checkpoints before writing the new one "
    "(or clean up at start-up, keeping the newest one or two), not only after writing it; and "
    "clean up temporary files that a kill left behind")
HINT_STALE = T(
    "ckpt_dir 里留着好几个写了一半的临时文件：每次在写检查点时被杀，都会留下一个，"
    "而之后的进程既不再写这个名字（例如名字里带着进程号），也不删除它。启动时删除残留的临时文件，"
    "或者始终用同一个临时文件名（下次写入会截断它）",
    "ckpt_dir holds several half-written temporary files: every kill in the middle of a "
    "write leaves one, and no later process writes to that name again (a name with the pid "
    "in it, say) or removes it. Delete leftover temporary files when train starts, or always "
    "use the same temporary name (the next write truncates it)")
HINT_UNSEEN = T(
    "用 torch.save（写到路径或已打开的文件）把检查点直接写进 ckpt_dir，至少每 checkpoint_every "
    "步一次：评测通过它观察检查点的写入，在写到一半时杀死进程",
    "write checkpoints into ckpt_dir with torch.save (to a path or an open file), at least "
    "every checkpoint_every steps: the judge watches it to kill the process in the middle of "
    "a write")
HINT_LOG = T(
    "setup.log(step, loss) 要在 optimizer.step() 和 scheduler.step() 之后调用",
    "call setup.log(step, loss) after optimizer.step() and scheduler.step()")
HINT_OPT = T(
    "恢复优化器的状态：optimizer.load_state_dict(...)（Adam 的步数和动量都属于训练状态）",
    "restore the optimizer: optimizer.load_state_dict(...) (Adam's step counts and moments "
    "are part of the run's state)")
HINT_EARLY = T(
    "检查点是在 optimizer.step() 之前保存的：它把这一步算作已经做完，存下的模型、优化器和调度器"
    "却还是这一步之前的状态。在 optimizer.step() 和 scheduler.step() 之后再保存",
    "the checkpoint was taken before optimizer.step(): it counts the step as made, but holds "
    "the model, the optimizer and the scheduler as they were before it. Save after "
    "optimizer.step() and scheduler.step()")
HINT_TRAIN = T(
    "这一步前向时模型处于 eval 模式（dropout 关闭了）：载入检查点之后不要调用 model.eval()，"
    "或者在训练前调用 model.train()",
    "the model was in eval mode at this step's forward pass (dropout off): do not call "
    "model.eval() after loading the checkpoint, or call model.train() before training")
HINT_NEXT = T(
    "重启后的步数比优化器实际做过的少：检查点里存的那一步已经做完了，"
    "恢复后应从下一步开始",
    "after the restart the step numbers lag behind the optimizer: the step stored in the "
    "checkpoint was already made, so the run goes on with the next one")
HINT_SCHED = T(
    "恢复学习率调度器的状态：scheduler.load_state_dict(...)，否则学习率会从头开始",
    "restore the scheduler: scheduler.load_state_dict(...); otherwise the learning rate "
    "schedule starts again")
HINT_ORDER = T(
    "这一步的 batch 和不中断时的样本不同：用 setup.make_loader(epoch) 重新创建本 epoch "
    "的 loader，从头迭代并跳过已经用过的 batch（用 list(loader.batch_sampler) "
    "重建会得到另一种顺序：iter(loader) 在打乱之前先从 loader 的 generator 里取了一个种子）",
    "this step's batch holds other samples than the uninterrupted run's: re-create the "
    "epoch's loader with setup.make_loader(epoch) and iterate past the batches already "
    "consumed (rebuilding them from list(loader.batch_sampler) gives another order: "
    "iter(loader) draws a seed from the loader's generator before shuffling)")
HINT_NUMPY = T(
    "增强这一步样本的 NumPy 随机数不同：在保存检查点的那一刻（下一个 batch 还没取）"
    "把 np.random.get_state() 存进检查点，并在跳过已用的 batch 之后再恢复"
    "（加载被跳过的样本也会消耗 NumPy 的随机数）",
    "the NumPy draws that augmented this step's samples differ: save np.random.get_state() "
    "in the checkpoint when it is made (before the next batch is drawn) and restore it "
    "after iterating past the consumed batches (loading them draws from NumPy's RNG too)")
HINT_RANDOM = T(
    "增强这一步样本的 random 随机数不同：在保存检查点的那一刻（下一个 batch 还没取）"
    "把 random.getstate() 存进检查点，并在跳过已用的 batch 之后再恢复"
    "（加载被跳过的样本也会消耗 random 的随机数）",
    "the draws of Python's random that augmented this step's samples differ: save "
    "random.getstate() in the checkpoint when it is made (before the next batch is drawn) "
    "and restore it after iterating past the consumed batches (loading them draws from "
    "random too)")
HINT_TORCH = T(
    "dropout 的随机掩码不同：在保存检查点的那一刻（这一步做完、下一个 batch 还没取）"
    "把 torch.get_rng_state() 存进检查点，恢复时用 torch.set_rng_state 还原；"
    "存得早了或晚了都会差几次随机抽取",
    "dropout drew other masks: save torch.get_rng_state() in the checkpoint at the moment "
    "it is made (after the step it records, before the next batch is drawn) and restore it "
    "with torch.set_rng_state; saved earlier or later, it is a few draws off")
HINT_PARAMS = T(
    "这一步开始时模型参数就已经不同：检查点要保存并恢复 model.state_dict() 和优化器状态",
    "the model's parameters already differed when this step began: save and restore "
    "model.state_dict() and the optimizer's state")
HINT_FINAL = T(
    "train 返回时 setup.model 里必须是最终参数（重启时发现训练已经完成，也要从检查点载入）",
    "train must leave the final parameters in setup.model (also when a restart finds the "
    "run already complete: load them from the checkpoint)")

FEATURES, HIDDEN, CLASSES = 32, 256, 8


# ---------------------------------------------------------------- runs and plans


def run_params(seed, *, samples, batch_size, total_steps, checkpoint_every, split=0.5):
    return {"seed": seed, "samples": samples, "batch_size": batch_size, "features": FEATURES,
            "hidden": HIDDEN, "classes": CLASSES, "dropout": 0.1, "lr": 3e-3,
            "warmup": max(1, total_steps // 8), "total_steps": total_steps,
            "checkpoint_every": checkpoint_every, "split": split}


@dataclass(frozen=True)
class Shape:
    """A run's sizes: steps per epoch, checkpoint_every, total_steps."""

    per_epoch: int
    every: int
    total: int


def random_run(t, *, every, epochs=None, per_epoch=None, total=None):
    per = per_epoch or t.random.randint(5, 8)
    batch = t.random.choice([8, 12, 16])
    samples = (per - 1) * batch + t.random.randint(1, batch)  # the last batch may be short
    total = total or per * (epochs or 4) + t.random.randint(1, per - 1)
    params = run_params(t.random.randrange(1 << 40), samples=samples, batch_size=batch,
                        total_steps=total, checkpoint_every=every,
                        split=round(t.random.uniform(0.15, 0.85), 3))
    return params, Shape(per, every, total)


def mid_epoch_steps(shape, low, high):
    """Steps in [low, high] that are neither next to an epoch boundary nor a checkpoint."""
    return [s for s in range(low, high + 1)
            if s % shape.per_epoch not in (0, 1) and (shape.every == 1 or s % shape.every)]


@dataclass(frozen=True)
class Kill:
    """Kill at ``at`` ("log": right after setup.log of ``step``; "save_mid": in the middle of
    the first checkpoint write once ``step`` steps were made; "after_ckpt": right after the
    first checkpoint completed once ``step`` steps were made)."""

    at: str
    step: int


# ---------------------------------------------------------------- measuring the folder


class Planted(Exception):
    """ckpt_dir (or a folder in it) was replaced by something the judge will not follow."""


def folder_usage(path: Path) -> tuple[int, list[tuple[str, int]]]:
    """Bytes of everything under ``path`` and the largest files, never following a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        raise Planted(os.strerror(e.errno) if e.errno else "cannot be opened") from None
    files: list[tuple[str, int]] = []
    try:
        _walk(fd, "", files, 0)
    finally:
        os.close(fd)
    files.sort(key=lambda f: -f[1])
    return sum(size for _, size in files), files


def _walk(fd: int, prefix: str, files: list[tuple[str, int]], depth: int) -> None:
    with os.scandir(fd) as entries:
        for entry in entries:
            if len(files) > MAX_ENTRIES or depth > 8:
                raise Planted("too many files or folders")
            try:  # a learner's thread may remove files while the judge walks the folder
                st = entry.stat(follow_symlinks=False)
                if not entry.is_dir(follow_symlinks=False):
                    files.append((prefix + entry.name, st.st_size))
                    continue
                sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                              dir_fd=fd)
            except OSError:  # gone, or swapped for a link meanwhile: nothing to count
                continue
            try:
                _walk(sub, f"{prefix}{entry.name}/", files, depth + 1)
            finally:
                os.close(sub)


def mb(n: float) -> str:
    return f"{n / MB:.2f} MB"


def number(v) -> str:
    """An int the sandbox sent, for a message (anything else shows as '?')."""
    return str(v) if type(v) is int else "?"


# ---------------------------------------------------------------- the expected run


@dataclass
class Expected:
    logs: dict[int, dict]
    final: dict
    unit: int  # one checkpoint's worth of bytes

    @property
    def limit(self) -> int:
        return MAX_CHECKPOINTS * self.unit


def folder_name() -> str:
    """A checkpoint folder's name: unpredictable, so that a submission can neither take it
    beforehand nor tell the runs the judge checks from the runs it times."""
    return f"ckpt-{secrets.token_hex(8)}"


def new_folder(t, role: str) -> tuple[Path, str]:
    """A name for a run's checkpoint folder in the role's working directory, and its host
    path. The fixture makes the folder (for every run alike); a name already taken by
    anything (the submission may fill its folder with names) is never used."""
    for _ in range(100):
        name = folder_name()
        host = t.workdir(role) / name
        if not os.path.lexists(host):
            return host, name
    raise AssertionError("no free name for a checkpoint folder")


def expected_run(t, params) -> Expected:
    got = t.ref.scenario("recorded_run", params)
    assert got["largest_file"] > 0, "the reference wrote no checkpoint"
    logs = {int(e["step"]): e for e in got["logs"]}
    assert sorted(logs) == list(range(1, params["total_steps"] + 1))
    return Expected(logs, got["final"], int(got["largest_file"] * CKPT_SLACK))


# ---------------------------------------------------------------- following the submission


def ordinal(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")


@dataclass
class Logged:
    step: int
    loss: float
    run: int
    nth: int  # the nth log of its run
    data: dict


@dataclass
class RunInfo:
    index: int
    after: T | None  # what ended the previous process, as a clause: "after the process was ..."
    after_kind: str | None  # the kind of kill ("log", "save_mid", ...) or "end"
    before: int  # the highest step logged before this process started
    logs: list[Logged] = field(default_factory=list)


class Follow:
    """Follows one run across its processes: checks every event, decides the kills."""

    def __init__(self, t, params, expected: Expected, host: Path, plan: list[Kill]):
        self.t = t
        self.params = params
        self.exp = expected
        self.host = host
        self.plan = list(plan)
        self.every = params["checkpoint_every"]
        self.total = params["total_steps"]
        self.top = 0  # the highest step logged so far
        self.last: dict[int, Logged] = {}
        self.runs: list[RunInfo] = []
        self.kills: list[T] = []  # how each process was killed, in order
        self.armed = False  # an "after_ckpt" kill waits for the next quiet moment

    # ------------------------------------------------ processes
    def start(self, after: T | None = None, after_kind: str | None = None) -> RunInfo:
        run = RunInfo(len(self.runs), after, after_kind, self.top)
        self.runs.append(run)
        return run

    def where(self, e: Logged) -> T:
        run = self.runs[e.run]
        if run.after is None:
            return T(f"第 {e.step} 步（第一次运行，还没有被杀过）",
                     f"step {e.step} (in the first run, before any kill)")
        first = run.logs[0].step if run.logs else e.step
        return T(f"第 {e.step} 步（第 {run.index + 1} 次运行的第 {e.nth} 步：{run.after.zh}，"
                 f"它从第 {first} 步开始）",
                 f"step {e.step} (run {run.index + 1}, its {ordinal(e.nth)} step: "
                 f"{run.after.en}, it began at step {first})")

    # ------------------------------------------------ events
    def measure(self, moment: T) -> None:
        try:
            used, files = folder_usage(self.host)
        except Planted as e:
            self.t.fail(T(f"{moment.zh}：无法测量 ckpt_dir：它被删除了或被换成了符号链接，"
                          f"或者里面的文件太多、目录太深（{e}）", f"{moment.en}: ckpt_dir "
                          f"cannot be measured: it was removed or replaced by a symbolic link, "
                          f"or it holds too many files or folders ({e})"))
        if used > self.exp.limit:
            shown = [f"{name} {mb(size)}" for name, size in files[:5]]
            shown += [f"+{len(files) - 5}"] if len(files) > 5 else []
            zh, en = "，".join(shown), ", ".join(shown)
            self.t.fail(T(f"{moment.zh}：ckpt_dir 里有 {mb(used)}（{zh}），超过了 "
                          f"{MAX_CHECKPOINTS} 个检查点的量 {mb(self.exp.limit)}"
                          f"（一个检查点的量是参考解答检查点的 {CKPT_SLACK} 倍，"
                          f"即 {mb(self.exp.unit)}）",
                          f"{moment.en}: ckpt_dir held {mb(used)} ({en}), more than "
                          f"{MAX_CHECKPOINTS} checkpoints' worth, {mb(self.exp.limit)} (one "
                          f"checkpoint's worth is {CKPT_SLACK} x the reference's checkpoint, "
                          f"{mb(self.exp.unit)})") + T(" —— ", " — ") + self.disk_hint(files))

    def disk_hint(self, files: list[tuple[str, int]]) -> T:
        """Several files clearly smaller than the largest one after mid-write kills: the
        half-written temporary files of killed processes, never removed. Else a folder
        that was within the limit until a restart: most likely a kill between writing a new
        checkpoint and deleting the old one left one too many."""
        largest = files[0][1] if files else 0
        partial = [name for name, size in files if 0 < size < 0.95 * largest]
        if len(partial) >= 2 and self.kinds_of_kills() & {"save_mid"}:
            return HINT_STALE
        restarted = any(run.after is not None for run in self.runs)
        return HINT_DISK_RESTART if restarted else HINT_DISK

    def kinds_of_kills(self) -> set[str]:
        return {run.after_kind for run in self.runs if run.after_kind is not None}

    def on_event(self, run: RunInfo, data) -> tuple[T, str] | None:
        """Check one event; return (how, kind) when the process is to be killed now."""
        if not isinstance(data, dict) or not isinstance(data.get("event"), str):
            return None
        kind = data["event"]
        self.measure(self.moment(kind, data))
        if kind == "log":
            self.on_log(run, data)
        return self.decide(kind, data)

    def moment(self, kind: str, data: dict) -> T:
        path = str(data.get("path", ""))[:200]
        s = self.top
        texts = {
            "log": T(f"第 {data.get('step')} 步的 setup.log 时", f"at setup.log of step "
                     f"{data.get('step')}"),
            "save_mid": T(f"第 {s} 步之后写 {path} 写到一半时", f"after step {s}, halfway "
                          f"through writing {path}"),
            "save_done": T(f"第 {s} 步之后写完 {path} 时", f"after step {s}, once {path} was "
                           f"written"),
            "commit": T(f"第 {s} 步之后 os.replace/os.rename 到 {path} 时", f"after step {s}, "
                        f"right after os.replace/os.rename onto {path}"),
        }
        return texts.get(kind, T(f"第 {s} 步之后，改动 ckpt_dir 里的文件（{kind} {path}）之前",
                                 f"after step {s}, before a change in ckpt_dir ({kind} {path})"))

    def on_log(self, run: RunInfo, data: dict) -> None:
        t, step, loss = self.t, data.get("step"), data.get("loss")
        if type(step) is not int or not isinstance(loss, float):
            t.fail(T("setup.log 收到了无效的参数", "setup.log got invalid arguments"))
        if not 1 <= step <= self.total:
            t.fail(T(f"调用了 setup.log({step}, ...)，但步数应当在 1..{self.total} 之间",
                     f"setup.log({step}, ...) was called, but steps run from 1 to {self.total}"))
        if run.logs and step != run.logs[-1].step + 1:
            prev = run.logs[-1].step
            t.fail(T(f"每一步调用一次 setup.log，步数依次加一：setup.log({prev}, ...) 之后却是 "
                     f"setup.log({step}, ...)", f"setup.log is called once per step, counting "
                     f"up by one: setup.log({prev}, ...) was followed by setup.log({step}, ...)"))
        entry = Logged(step, loss, run.index, len(run.logs) + 1, data)
        adam = data.get("adam")
        if adam != step:
            if adam == step - 1 and run.after is None:
                hint = HINT_LOG
            elif adam == step - 1 and data.get("sched") == step - 1:
                # restored one step behind, the scheduler too: saved before the step
                hint = HINT_EARLY
            elif isinstance(adam, int) and adam > step and run.after is not None:
                hint = HINT_NEXT
            else:
                hint = HINT_OPT
            t.fail(T(f"{self.where(entry).zh}：调用 setup.log 时 setup.optimizer "
                     f"做过 {adam} 次更新，应当是 {step} 次",
                     f"{self.where(entry).en}: when setup.log was called, setup.optimizer "
                     f"had made {adam} step(s); expected {step}")
                   + T(" —— ", " — ") + hint)
        if not run.logs and run.after is not None:
            self.check_restart(run, step)
        run.logs.append(entry)
        self.last[step] = entry
        self.top = max(self.top, step)

    def check_restart(self, run: RunInfo, first: int) -> None:
        assert run.after is not None
        before, after = run.before, run.after
        if first > before + 1:
            self.t.fail(T(f"{after.zh}，重启的 train 从第 {first} 步开始：第 {before + 1}–"
                          f"{first - 1} 步被跳过了", f"{after.en}, the "
                          f"restarted train began at step {first}: steps {before + 1}–{first - 1} "
                          f"were skipped") + T(" —— ", " — ") + HINT_RESUME)
        redone = before - first + 1
        if redone > self.every:
            hint = HINT_RESUME
            if run.after_kind == "save_mid" and first == 1:
                hint = T("写了一半的检查点没法用，于是从头开始了。", "the half-written checkpoint "
                         "could not be used, so it started over: ") + HINT_ATOMIC
            self.t.fail(T(f"{after.zh}，重启的 train 从第 {first} 步开始，重做了 {redone} 步"
                          f"（第 {first}–{before} 步），但最多只能重做 checkpoint_every = "
                          f"{self.every} 步", f"{after.en}, the restarted "
                          f"train began at step {first} and redid {redone} steps ({first}–"
                          f"{before}); at most checkpoint_every = {self.every} may be redone")
                        + T(" —— ", " — ") + hint)

    # ------------------------------------------------ kills
    def decide(self, kind: str, data: dict) -> tuple[T, str] | None:
        if not self.plan:
            return None
        kill, s = self.plan[0], self.top
        path = str(data.get("path", ""))[:200]
        how = None
        if kill.at == "log" and kind == "log" and data.get("step") == kill.step:
            how = T(f"在第 {s} 步的 setup.log 之后立即被杀死", f"killed right after setup.log "
                    f"of step {s}")
        elif kill.at == "save_mid" and kind == "save_mid" and s >= kill.step:
            done, size = number(data.get("written")), number(data.get("total"))
            how = T(f"在第 {s} 步之后写检查点 {path} 写到一半（{done}/{size} 字节）时被杀死",
                    f"killed halfway through writing checkpoint {path} after step {s} "
                    f"({done} of {size} bytes written)")
        elif kill.at == "after_ckpt" and s >= kill.step:
            if kind == "save_done":
                self.armed = True
            elif self.armed and kind in ("commit", "log", "remove"):
                # the file torch.save wrote is now complete, renamed into place, or the
                # run has gone on: the checkpoint is done
                how = (T(f"在检查点写完后第 {s} 步的 setup.log 之后被杀死", f"killed right after "
                         f"setup.log of step {s}, the first step after a checkpoint")
                       if kind == "log" else
                       T(f"在第 {s} 步之后的检查点刚刚写完时被杀死", f"killed right after a "
                         f"checkpoint was completed (after step {s})"))
        if how is None and kill.at != "log" and kind == "log" and s >= kill.step + 2 * self.every:
            # The kill waits for a checkpoint write that the fixture's torch.save announces.
            # None came for two checkpoint intervals: the run saves too rarely, or writes
            # around the hooks (to a buffer, a file outside ckpt_dir, or an unhooked save).
            # The kill this case is about cannot be made, so the case fails rather than pass
            # without it.
            what = (T("写到一半", "in the middle of") if kill.at == "save_mid"
                    else T("刚写完", "right after"))
            self.t.fail(T(f"评测计划在第 {kill.step} 步之后的检查点{what.zh}时杀死进程，但到第 {s} "
                          f"步为止没有看到任何用 torch.save 写进 ckpt_dir 的检查点",
                          f"the judge planned to kill the process {what.en} writing a "
                          f"checkpoint after step {kill.step}, but up to step {s} it saw no "
                          f"checkpoint written into ckpt_dir with torch.save")
                        + T(" —— ", " — ") + HINT_UNSEEN)
        if how is None:
            return None
        self.plan.pop(0)
        self.armed = False
        return how, kill.at

    # ------------------------------------------------ the end
    def check_kept(self) -> None:
        """A finished run leaves its last checkpoint: a restart must find the run complete.
        (Measured from outside: a run that skips its saves when it thinks nobody watches
        leaves nothing.)"""
        try:
            used, _ = folder_usage(self.host)
        except Planted:
            used = 0
        if used < self.exp.unit / CKPT_SLACK / 2:
            self.t.fail(T(f"train 返回时 ckpt_dir 里只有 {used} 字节，没有检查点（参考解答的"
                          f"检查点约 {mb(self.exp.unit / CKPT_SLACK)}）：再次启动时无法知道训练"
                          f"已经完成",
                          f"when train returned, ckpt_dir held {used} bytes, no checkpoint (the "
                          f"reference's is about {mb(self.exp.unit / CKPT_SLACK)}): started "
                          f"again, the run could not know it was complete")
                        + T(" —— ", " — ") + HINT_RESUME)

    def check_final(self, final) -> None:
        problem = compare.value_equal(final, self.exp.final, what="final parameters")
        if problem is not None:
            self.t.fail(problem + T(" —— ", " — ") + HINT_FINAL)

    def check_losses(self) -> None:
        for step in range(1, self.total + 1):
            got = self.last.get(step)
            if got is None:
                self.t.fail(T(f"第 {step} 步从没有被记录（setup.log）过："
                              f"train 在第 {self.top} 步之后就返回了",
                              f"step {step} was never logged (setup.log): train returned "
                              f"after step {self.top}"))
            want = self.exp.logs[step]["loss"]
            if got.loss != want:
                e, g = f"{want:.8g}", f"{got.loss:.8g}"
                if e == g:
                    e, g = repr(want), repr(got.loss)
                hint = self.diagnose(got)
                self.t.fail(T(f"{self.where(got).zh}：loss 期望 {e}，得到 {g}",
                              f"{self.where(got).en}: loss expected {e}, got {g}")
                            + (T(" —— ", " — ") + hint if hint else T("", "")))

    def diagnose(self, failed: Logged) -> T | None:
        """The likely cause: the first difference in this run, up to the failing step."""
        checks = [("training", HINT_TRAIN), ("sched", HINT_SCHED), ("batch", HINT_ORDER),
                  ("numpy", HINT_NUMPY), ("random", HINT_RANDOM), ("torch", HINT_TORCH),
                  ("params", HINT_PARAMS)]
        for e in self.runs[failed.run].logs[:failed.nth]:
            want = self.exp.logs[e.step]
            for key, hint in checks:
                if e.data.get(key) != want.get(key):
                    return hint
        return None


# ---------------------------------------------------------------- running a plan


def run_killed(t, params, plan: list[Kill], *, restart_after_end: bool = False) -> Follow:
    """Run train in fresh processes, killing at the plan's moments, until it returns. With
    ``restart_after_end``, a run that no kill interrupted is started once more after it
    returned (it must find the run complete)."""
    follow = Follow(t, params, expected_run(t, params), new_folder(t, "sub")[0], plan)
    after, after_kind = None, None
    ends, finals = 0, []
    while ends < (2 if restart_after_end and len(follow.runs) == 1 else 1):
        run = follow.start(after, after_kind)
        killed = None
        with t.fresh() as proc:
            stream = proc.stream("watched_run", params, proc.path_inside(follow.host))
            events = iter(stream)
            try:
                for event in events:
                    if event.kind not in (Kind.ASK, Kind.EVENT):
                        continue
                    killed = follow.on_event(run, event.data)
                    if killed is not None:
                        proc.kill()
                        break
            except SubmissionError as e:
                if after is None:
                    raise
                hint = HINT_ATOMIC if after_kind == "save_mid" else HINT_RESUME
                t.fail(T(f"{after.zh}，重启的 train ", f"{after.en}, the restarted train ")
                       + e.describe() + T("\n—— ", "\n— ") + hint)
            finally:
                events.close()
        if killed is not None:
            how, after_kind = killed
            follow.kills.append(how)
            after = T(f"进程{how.zh}后", f"after the process was {how.en}")
            follow.measure(T("进程被杀死之后", "after the process was killed"))
            continue
        follow.measure(T("train 返回时", "when train returned"))
        assert stream.result is not None
        value = stream.result.value
        finals.append(value.get("final") if isinstance(value, dict) else value)
        ends += 1
        after = T("train 正常返回后又一次启动", "when started again after train had returned")
        after_kind = "end"
    follow.check_losses()
    for final in finals:
        follow.check_final(final)
    follow.check_kept()
    return follow


def run_once(t, params) -> Follow:
    """An uninterrupted run in the shared process: its logs and final parameters."""
    host, name = new_folder(t, "sub")
    follow = Follow(t, params, expected_run(t, params), host, [])
    got = t.sub.scenario("recorded_run", params, name)
    if not isinstance(got, dict) or not isinstance(got.get("logs"), list):
        t.fail(T("场景没有返回可用的结果", "the scenario returned nothing usable"))
    run = follow.start()
    for entry in got["logs"]:
        follow.on_log(run, entry if isinstance(entry, dict) else {})
    follow.measure(T("train 返回时", "when train returned"))
    follow.check_losses()
    follow.check_final(got.get("final"))
    follow.check_kept()
    return follow


def summary(follow: Follow) -> tuple[str, str]:
    kills = follow.kills
    zh = f"{follow.total} 步全部与不中断的运行逐位一致；{len(follow.runs)} 次运行"
    en = (f"all {follow.total} steps bitwise equal to the uninterrupted run; "
          f"{len(follow.runs)} run(s)")
    if kills:
        zh += "；进程" + "；".join(k.zh for k in kills)
        en += "; the process was " + "; ".join(k.en for k in kills)
    return zh, en


# ---------------------------------------------------------------- public cases


@case(public=True, zh="不中断地训练 24 步", en="24 steps without a kill")
def example_uninterrupted(t):
    params = run_params(20240601, samples=100, batch_size=16, total_steps=24,
                        checkpoint_every=5)
    t.note(*summary(run_once(t, params)))


@case(public=True, zh="第 13 步之后被杀死一次，然后恢复",
      en="killed once after step 13, then resumed")
def example_one_kill(t):
    params = run_params(20240602, samples=100, batch_size=16, total_steps=30,
                        checkpoint_every=5)
    t.note(*summary(run_killed(t, params, [Kill("log", 13)])))


# ---------------------------------------------------------------- hidden cases


@case(zh="不中断的运行", en="an uninterrupted run")
def no_kill(t):
    params, _ = random_run(t, every=t.random.randint(2, 7))
    run_once(t, params)


@case(zh="磁盘占用：许多检查点，ckpt_dir 最多 3 个检查点的量", en="disk use: many checkpoints, at "
      "most 3 checkpoints' worth in ckpt_dir")
def disk_usage(t):
    params, _ = random_run(t, every=t.random.randint(1, 2), epochs=5)
    run_once(t, params)


@case(zh="多次被杀死：epoch 的末尾、开头和中间", en="several kills: at the end, the start and the "
      "middle of epochs")
def kills_across_epochs(t):
    per = t.random.randint(5, 8)
    # checkpoint_every divides the epoch: some checkpoints fall exactly on an epoch's end
    every = t.random.choice([d for d in range(2, per + 1) if per % d == 0])
    params, shape = random_run(t, every=every, per_epoch=per, epochs=5)
    first = t.random.randint(1, 2) * per  # right after the last step of an epoch
    second = 3 * per + 1  # right after the first step of an epoch
    third = t.random.choice(mid_epoch_steps(shape, second + 2, shape.total - 1))
    run_killed(t, params, [Kill("log", first), Kill("log", second), Kill("log", third)])


@case(zh="第一个检查点之前被杀死，以及检查点刚写完就被杀死",
      en="a kill before the first checkpoint, and one right after a checkpoint completed")
def kills_around_checkpoints(t):
    every = t.random.randint(5, 8)
    params, shape = random_run(t, every=every, total=every * t.random.randint(4, 6)
                               + t.random.randint(1, every - 1))
    before = t.random.randint(2, shape.every)
    # after the third checkpoint or a later one, with one more written after the restart: a
    # loop that prunes only after saving is left with one checkpoint too many by such a kill
    after = t.random.randint(3, shape.total // shape.every - 1) * shape.every
    run_killed(t, params, [Kill("log", before), Kill("after_ckpt", after)])


@case(zh="写检查点写到一半时被杀死", en="kills in the middle of writing a checkpoint")
def kill_mid_write(t):
    params, shape = random_run(t, every=t.random.randint(3, 6))
    k = t.random.randint(3, shape.total // shape.every)
    run_killed(t, params, [Kill("save_mid", shape.every), Kill("save_mid", k * shape.every)])


@case(zh="重写同一个检查点时两次写到一半被杀死", en="killed twice in the middle of rewriting "
      "the same checkpoint")
def kill_mid_rewrite(t):
    params, shape = random_run(t, every=t.random.randint(3, 6))
    k = t.random.randint(2, shape.total // shape.every)
    # The second kill comes at the first checkpoint write after the restart, which rewrites
    # the checkpoint that the first kill cut in half: a loop that copies its checkpoint to a
    # backup before overwriting it copies the half-written file over the good backup.
    ck = k * shape.every
    run_killed(t, params, [Kill("save_mid", ck), Kill("save_mid", ck)])


@case(zh="写检查点时六次被杀死，每次都写到一半", en="six kills, each in the middle of a "
      "checkpoint write")
def many_kills_mid_write(t):
    every = t.random.randint(2, 3)
    params, shape = random_run(t, every=every, epochs=4)
    # Most of each file written when the kill comes: a run that leaves such files behind
    # (names that no later process writes again: its pid, say; the sandbox gives every
    # runner a random one of 64) is over 3 checkpoints' worth with 4 of them.
    params["split"] = round(t.random.uniform(0.7, 0.85), 3)
    picks = sorted(t.random.sample(range(1, shape.total // every + 1), 6))
    run_killed(t, params, [Kill("save_mid", k * every) for k in picks])


@case(zh="重启时训练已经完成", en="the run is already complete at a restart")
def already_complete(t):
    every = t.random.randint(2, 6)
    params, shape = random_run(t, every=every, total=every * t.random.randint(4, 7))
    # killed right after the last checkpoint: the restart finds the run complete
    run_killed(t, params, [Kill("after_ckpt", shape.total)], restart_after_end=True)


@case(zh="每一步都保存检查点 (checkpoint_every = 1)", en="a checkpoint every step "
      "(checkpoint_every = 1)")
def checkpoint_every_step(t):
    params, shape = random_run(t, every=1, epochs=3)
    mid = t.random.choice(mid_epoch_steps(shape, 2, shape.per_epoch - 1))
    run_killed(t, params, [Kill("save_mid", mid), Kill("log", 2 * shape.per_epoch)])


@case(zh="检查点间隔比一个 epoch 还长：重做步数的上限", en="checkpoints further apart than an "
      "epoch: the bound on redone steps")
def long_interval(t):
    per = t.random.randint(5, 7)
    every = t.random.randint(per + 2, 2 * per + 1)
    params, _ = random_run(t, every=every, per_epoch=per, total=3 * every + per)
    # right after the step whose checkpoint is not written yet: every step since the last
    # checkpoint is redone, exactly checkpoint_every of them
    run_killed(t, params, [Kill("log", 2 * every)])


# ---------------------------------------------------------------- throughput


def timed_checkpoint(sub: Path, ref: Path) -> T | None:
    """After a timed run, measured from outside: the submission's folder holds at least half
    a checkpoint's worth (the reference's checkpoint of the same run). A run that skips its
    saves when it guesses that it is timed does not."""
    _, ref_files = folder_usage(ref)
    assert ref_files, "the reference's timed run left no checkpoint"
    want = ref_files[0][1]
    try:
        used, _ = folder_usage(sub)
    except Planted as e:
        return T(f"计时的训练结束后无法测量 ckpt_dir（{e}）",
                 f"after a timed run, ckpt_dir could not be measured ({e})")
    if used < want / 2:
        return T(f"计时的训练结束时 ckpt_dir 里只有 {used} 字节，没有检查点（参考解答的检查点是 "
                 f"{mb(want)}）：计时的训练也必须至少每 checkpoint_every 步保存一次",
                 f"when the timed run returned, ckpt_dir held {used} bytes, no checkpoint (the "
                 f"reference's is {mb(want)}): a timed run too must save at least every "
                 f"checkpoint_every steps")
    return None


@workload
def checkpoint_overhead(device):
    current: dict[str, str] = {}

    def make(rng):
        seed = int(torch.randint(0, 1 << 40, (1,), generator=rng))
        params = run_params(seed, samples=100, batch_size=16, total_steps=60,
                            checkpoint_every=20)
        # named like the folders of the checked runs (fixture.prepare_timed makes it as the
        # scenarios make theirs): a submission cannot tell that it is being timed by its folder
        current["name"] = folder_name()
        return [params, current["name"]], {}

    def check(got, exp, folders):
        if not isinstance(got, dict):
            return False
        problem = (compare.value_equal(got.get("logs"), exp["logs"], what="logs")
                   or compare.value_equal(got.get("final"), exp["final"], what="final parameters"))
        if problem is not None:
            return problem
        return timed_checkpoint(folders["sub"] / current["name"],
                                folders["ref"] / current["name"]) or True

    return Workload(fn="timed_train", target="fixture", prepare="prepare_timed", make=make,
                    check=check, check_folders=True, warmup=1, min_pairs=7, max_pairs=30)
