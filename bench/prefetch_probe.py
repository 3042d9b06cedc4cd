"""Raw GPU figures behind cuda-prefetcher's CUDA cases and speed bar, in one process.

    python bench/prefetch_probe.py [--reps 3]

Needs a CUDA device. Runs the problem's fixture scenarios directly (no judge, no sandbox)
with the reference and with the fixtures of known bugs, and prints:

* the copy: time of one 64 MiB host-to-device copy from pinned and from pageable memory,
  and the calibration of torch.cuda._sleep (GPU cycles per millisecond);
* the speed check's loop (16 batches of 64 MiB, a step as long as a copy) timed with the
  reference, the other accepted solutions and the too_slow ones: each one's ratio to the
  reference (median of --reps interleaved runs); the bar in problem.toml should sit well
  between the accepted ones and the too_slow ones;
* the races: how many of --reps runs of the "immediate" scenario (no wait_stream) and of the
  "delayed" scenario (no record_stream) read wrong data, for the reference (must be 0) and
  for the fixture that has the bug (should be all);
* the copy log of the "pageable" scenario: the reference's copies must all come from pinned
  memory, the pageable fixture's not.

Figures only, no asserts: bench/gpu_check.sh runs it before `judge check`.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "cuda-prefetcher"


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def solutions() -> dict[str, ModuleType]:
    found = {"reference": load(PROBLEM / "reference.py", "probe_reference")}
    for folder in ("accepted", "too_slow", "wrong_answer"):
        for path in sorted((PROBLEM / "submissions" / folder).glob("*.py")):
            found[f"{folder}/{path.stem}"] = load(path, f"probe_{folder}_{path.stem}")
    return found


def loop_time(fixture: ModuleType, sol: ModuleType, key: int) -> float:
    import torch

    state = fixture.prepare_overlap(sol, None, 16 << 20, 16, key)
    torch.cuda.synchronize()
    start = time.perf_counter()
    fixture.overlap(sol, None, state)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def copy_figures(fixture: ModuleType) -> None:
    import torch

    x = torch.randint(0, 100, (16 << 20,), dtype=torch.int32)
    pinned = x.pin_memory()
    for label, src in (("pinned", pinned), ("pageable", x)):
        times = []
        for _ in range(6):
            start = time.perf_counter()
            src.to("cuda", non_blocking=True)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        ms = statistics.median(times[1:]) * 1000
        print(f"  copy of 64 MiB from {label:8}: {ms:6.2f} ms ({64 / 1024 / ms * 1000:5.1f} GiB/s)")
    print(f"  copy_ms() as the fixture measures it: {fixture.copy_ms(pinned):.3f} ms; "
          f"_sleep: {fixture.cycles_per_ms():.0f} cycles/ms")


def speed(fixture: ModuleType, sols: dict[str, ModuleType], reps: int) -> None:
    timed = {k: v for k, v in sols.items() if not k.startswith("wrong_answer/")}
    times: dict[str, list[float]] = {k: [] for k in timed}
    loop_time(fixture, sols["reference"], 1)  # warm-up: allocator, kernels
    for rep in range(reps):
        for name, sol in timed.items():
            times[name].append(loop_time(fixture, sol, 100 + rep))
    ref = statistics.median(times["reference"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:48} {median * 1000:7.1f} ms   ratio {ref / median:5.2f}")


def races(fixture: ModuleType, sols: dict[str, ModuleType], reps: int) -> None:
    import torch

    plan = [("immediate", "wrong_answer/no_wait_stream", {}),
            ("delayed", "wrong_answer/no_record_stream", {"delay_ms": 150.0})]
    for scenario, buggy, kwargs in plan:
        for name in ("reference", buggy):
            wrong = 0
            for rep in range(reps):
                got = getattr(fixture, scenario)(sols[name], None, 1000 + rep, 8, 8 << 20,
                                                 **kwargs)
                wrong += not torch.equal(got["read"], got["sync"]) or got["not_on_cuda"] > 0
                torch.cuda.empty_cache()
            print(f"  {scenario:10} {name:40} wrong data in {wrong} of {reps} runs")


def copy_log(fixture: ModuleType, sols: dict[str, ModuleType]) -> None:
    for name in ("reference", "accepted/deque_two_ahead_copy_into",
                 "wrong_answer/pageable_non_blocking", "too_slow/sync_to_device"):
        got = fixture.pageable(sols[name], None, 7, 6, 4 << 20)
        copies = got["copies"]
        pageable_async = sum(c["non_blocking"] and not c["pinned"] for c in copies)
        side = sum(c["side_stream"] for c in copies)
        print(f"  {name:40} {len(copies):3} copies, {pageable_async} non_blocking from "
              f"pageable memory, {side} on a side stream")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure")
        return 0
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    fixture = load(PROBLEM / "fixture.py", "probe_fixture")
    sols = solutions()
    print("copy and calibration:")
    copy_figures(fixture)
    print(f"speed check's loop (median of {args.reps}):")
    speed(fixture, sols, args.reps)
    print("races:")
    races(fixture, sols, args.reps)
    print("copy log (a loader that did not pin):")
    copy_log(fixture, sols)
    return 0


if __name__ == "__main__":
    sys.exit(main())
