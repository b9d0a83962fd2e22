"""The mutant runner's GPU runs over several GPUs, on a CPU: each GPU run gets one GPU of the pool
as its CUDA_VISIBLE_DEVICES, at most ``--jobs-per-gpu`` at once on one GPU, the queue's priority
order kept; CPU runs take no GPU. The runs themselves are fakes (no GPU, no copies)."""

from __future__ import annotations

import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import ci.mutation_runner as mr
from ci.mutants import MUTANTS, SYNC_MUTANTS
from properties.gpu_pool import GpuSlots

ROOT = Path(__file__).resolve().parents[1]


class Occupancy:
    """Who runs where, while it runs: the most runs seen at once on each GPU and in all."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now: Counter = Counter()
        self.peak: Counter = Counter()
        self.total = self.peak_total = 0
        self.started: list = []

    def run(self, key, gpu, seconds=0.02):
        with self.lock:
            self.started.append((key, gpu))
            self.now[gpu] += 1
            self.total += 1
            self.peak[gpu] = max(self.peak[gpu], self.now[gpu])
            self.peak_total = max(self.peak_total, self.total)
        time.sleep(seconds)
        with self.lock:
            self.now[gpu] -= 1
            self.total -= 1


@pytest.mark.parametrize("gpus, per_gpu, jobs", [(["0", "1"], 1, 4), (["0", "1", "2"], 2, 4), (["5"], 1, 3),
                                                 (["0", "1"], 3, 8)])
def test_pool_holds_each_gpu_to_its_jobs_and_uses_them_all(gpus, per_gpu, jobs):
    seen = Occupancy()
    pool = mr._PriorityPool(jobs, priority=lambda item: 0, slots=GpuSlots(gpus, per_gpu),
                            needs_gpu=lambda item: item[0] == "gpu")
    futures = [pool.submit(lambda item, gpu: seen.run(item, gpu, 0.1), ("gpu", i)) for i in range(12)]
    futures += [pool.submit(lambda item, gpu: seen.run(item, gpu, 0.1), ("cpu", i)) for i in range(4)]
    pool.start()
    pool.join()
    for f in futures:
        f.result()
    on_gpu = [gpu for (kind, _), gpu in seen.started if kind == "gpu"]
    assert len(on_gpu) == 12 and set(on_gpu) == set(gpus)
    assert all(gpu is None for (kind, _), gpu in seen.started if kind == "cpu")
    assert all(seen.peak[g] <= per_gpu for g in gpus), seen.peak
    assert seen.peak_total <= jobs
    # the GPUs fill before any doubles up: with room for all, some moment had every GPU busy
    assert max(seen.peak[g] for g in gpus) == min(per_gpu, -(-12 // len(gpus)))


def test_a_busy_gpu_lets_cpu_tasks_pass_and_keeps_gpu_tasks_in_priority_order():
    """One GPU, one slot, three threads: GPU tasks start in priority order (lower first, FIFO
    among equals), never two at once; a CPU task queued behind them starts while the GPU is busy."""
    seen = Occupancy()
    pool = mr._PriorityPool(3, priority=lambda item: item[1], slots=GpuSlots(["0"], 1),
                            needs_gpu=lambda item: item[0] == "gpu")
    order = [("gpu", 3, "a"), ("gpu", 1, "b"), ("gpu", 2, "c"), ("gpu", 1, "d"), ("cpu", 9, "e")]
    for item in order:
        pool.submit(lambda item, gpu: seen.run(item, gpu, 0.05), item)
    pool.start()
    pool.join()
    gpu_starts = [item[2] for item, gpu in seen.started if item[0] == "gpu"]
    assert gpu_starts == ["b", "d", "c", "a"]
    assert [item[2] for item, _ in seen.started].index("e") <= 1  # not after the GPU queue
    assert seen.peak["0"] == 1


def _fake_run_one(seen: Occupancy):
    def fake(m, subject, *, mode, baseline_of=None, gpu=None, **_):
        name = m.name if m else f"(baseline {baseline_of.variant if baseline_of else subject})"
        seen.run((name, mode, subject), gpu)
        verdict = "caught" if m else "passed"
        if mode == mr.PROPS:
            return [mr.Result(name, subject, "k", verdict, mode="plain"),
                    mr.Result(name, subject, "k", verdict, mode="perturbed")]
        return mr.Result(name, subject, "k", verdict, mode=mode)
    return fake


def test_run_all_pins_every_gpu_run_to_a_gpu_of_the_pool(monkeypatch):
    """Hopper mutants (value and concurrency, with the CPU static verdict) and a CPU subject's
    mutants in one run over a fake pool of three GPUs at one run each: every hopper property or
    sanitizer run names one of them, never two runs on one GPU at once; static and CPU runs none."""
    seen = Occupancy()
    monkeypatch.setattr(mr, "run_one", _fake_run_one(seen))
    monkeypatch.setattr(mr, "gpu_reason", lambda: None)
    monkeypatch.setattr(mr, "repo_files", lambda: [])
    monkeypatch.setattr(mr.gpu_pool, "gpus_from_env", lambda env=None: pytest.fail("the pool was given"))
    hopper_values = [m for m in MUTANTS if m.subject == "hopper" and not m.variant][:3]
    sync = [m for m in SYNC_MUTANTS if not m.equivalent_because][:2]
    cpu = [m for m in MUTANTS if m.subject == "model"][:2]
    modes = (*mr.MODES, mr.STATIC_MODE)
    mr.run_all(hopper_values + sync + cpu, jobs=6, baseline=True, carry=[], timeout=100, log=lambda *_: None,
               modes=modes, jobs_per_gpu=1, gpus=["0", "1", "2"])
    gpu_runs = [(key, gpu) for key, gpu in seen.started if key[2] == "hopper" and key[1] != mr.STATIC_MODE]
    other = [(key, gpu) for key, gpu in seen.started if (key, gpu) not in gpu_runs]
    assert gpu_runs and all(gpu in ("0", "1", "2") for _, gpu in gpu_runs)
    assert any(key[1].startswith("sanitizer:") for key, _ in gpu_runs)
    assert {key[1] for key, _ in other} >= {mr.STATIC_MODE, "plain"} and all(gpu is None for _, gpu in other)
    assert all(n <= 1 for g, n in seen.peak.items() if g is not None), seen.peak
    assert len({gpu for _, gpu in gpu_runs}) == 3


def test_run_all_enumerates_the_visible_gpus_and_skips_them_without_a_gpu(monkeypatch):
    seen = Occupancy()
    monkeypatch.setattr(mr, "run_one", _fake_run_one(seen))
    monkeypatch.setattr(mr, "repo_files", lambda: [])
    monkeypatch.setenv("NVFP4_FAKE_GPU_COUNT", "4")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    value = next(m for m in MUTANTS if m.subject == "hopper" and not m.variant)
    monkeypatch.setattr(mr, "gpu_reason", lambda: None)
    mr.run_all([value], jobs=2, baseline=True, carry=[], timeout=100, log=lambda *_: None, jobs_per_gpu=1)
    assert {gpu for _, gpu in seen.started} <= {"3", "1"} and len(seen.started) == 2
    # no usable GPU: the GPU mutants are skipped as before, nothing asks for a GPU
    seen.started.clear()
    monkeypatch.setattr(mr, "gpu_reason", lambda: "needs an sm_90 (H200) GPU; this machine has none")
    monkeypatch.setattr(mr.gpu_pool, "gpus_from_env", lambda env=None: pytest.fail("no GPU run, no pool"))
    results = mr.run_all([value], jobs=2, baseline=True, carry=[], timeout=100, log=lambda *_: None)
    assert [r.verdict for r in results] == ["skipped"] and not seen.started


def test_run_one_gives_its_process_the_gpu(monkeypatch, tmp_path):
    envs = []

    def fake_run(cmd, *, cwd, env, capture_output, text, timeout):
        envs.append(env)
        return subprocess.CompletedProcess(cmd, 0, "1 passed in 0.1s\n", "")

    monkeypatch.setattr(mr.subprocess, "run", fake_run)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    for gpu, expected in (("2", "2"), (None, "7")):
        r = mr.run_one(None, "model", carry=[], timeout=10, keep=False, files=[], gpu=gpu)
        assert r.verdict == "passed", r
        assert envs[-1]["CUDA_VISIBLE_DEVICES"] == expected


def test_jobs_per_gpu_option_and_the_script_variable(monkeypatch):
    got = {}

    def fake_run_all(mutants, **kw):
        got.update(kw)
        return []

    monkeypatch.setattr(mr, "run_all", fake_run_all)
    name = next(m.name for m in MUTANTS if m.subject == "model")
    assert mr.main(["--subject=model", f"--mutant={name}", "--jobs=4", "--jobs-per-gpu=2"]) == 0
    assert got["jobs_per_gpu"] == 2 and got["jobs"] == 4
    got.clear()
    mr.main(["--subject=model", f"--mutant={name}"])
    assert got["jobs_per_gpu"] == 1
    with pytest.raises(SystemExit, match="at least 1"):
        mr.main(["--subject=model", "--jobs-per-gpu=0"])
    script = (ROOT / "ci" / "gpu_mutants.sh").read_text()
    header = "\n".join(line for line in script.splitlines() if line.startswith("#"))
    assert "JOBS_PER_GPU" in header and "CUDA_VISIBLE_DEVICES" in header
    assert '--jobs-per-gpu "${JOBS_PER_GPU:-$JOBS}"' in script
