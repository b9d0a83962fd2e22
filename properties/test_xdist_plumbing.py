"""pytest-xdist across GPUs on a CPU: the GPU pool's pure functions (properties.gpu_pool), the
plugin's hooks (properties.xdist_plugin), and real ``pytest -n`` runs of a generated test module
against the CPU model with a fake GPU count (NVFP4_FAKE_GPU_COUNT): each worker pinned to its own
CUDA_VISIBLE_DEVICES, one variant on one worker, one closing table with a worker column, and the
usage errors."""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import textwrap
import types
from collections import Counter
from pathlib import Path

import pytest

from properties import gpu_pool, xdist_plugin
from properties.progress_plugin import ProgressPlugin, VariantTally, stage_table

ROOT = Path(__file__).resolve().parents[1]
TABLE_TITLE = "nvfp4 examples per variant"
UUID_A = "GPU-5a1c3f2e-0b9d-4c1e-9a7b-1f2e3d4c5b6a"
UUID_B = "GPU-0f9e8d7c-6b5a-4433-2211-00ffeeddccbb"
MIG = "MIG-1c2d3e4f-5a6b-7c8d-9e0f-a1b2c3d4e5f6"


# ---- CUDA_VISIBLE_DEVICES as CUDA reads it
@pytest.mark.parametrize("value, shown", [
    ("0,1,2", ["0", "1", "2"]),
    (" 3 , 1 ", ["3", "1"]),
    ("01,2", ["1", "2"]),
    ("", []),
    ("-1", []),
    ("1,-1,0", ["1"]),  # CUDA stops at the first entry it rejects
    ("0,,1", ["0"]),
    ("0,abc,1", ["0"]),
    ("2,2,3", ["2"]),
    (f"{UUID_A},{UUID_B}", [UUID_A, UUID_B]),
    (f"{MIG}", [MIG]),
    (f"{UUID_A},1", [UUID_A, "1"]),
])
def test_visible_devices_list_is_read_as_cuda_reads_it(value, shown):
    assert gpu_pool.parse_visible_devices(value) == shown


@pytest.mark.parametrize("value, count, gpus", [
    (None, 4, ["0", "1", "2", "3"]),
    (None, 0, []),
    ("0,1", 0, []),  # no device at all: nothing to hand out, whatever the list says
    ("", 8, []),
    ("-1", 8, []),
    ("3,1", 4, ["3", "1"]),
    ("2,5,1", 4, ["2"]),  # ordinal 5 is past the count: CUDA stops there
    (f"{UUID_A},{UUID_B}", 1, [UUID_A]),  # at most as many as the machine has
    (f"{UUID_B},{UUID_A}", 2, [UUID_B, UUID_A]),
])
def test_visible_gpus_from_the_list_and_the_device_count(value, count, gpus):
    assert gpu_pool.visible_gpus(value, count) == gpus


def test_device_count_from_the_fake_count_or_nvidia_smi(tmp_path):
    assert gpu_pool.physical_device_count({gpu_pool.FAKE_COUNT_ENV: "3"}) == 3
    assert gpu_pool.physical_device_count({gpu_pool.FAKE_COUNT_ENV: "0"}) == 0
    with pytest.raises(ValueError, match=gpu_pool.FAKE_COUNT_ENV):
        gpu_pool.physical_device_count({gpu_pool.FAKE_COUNT_ENV: "two"})
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\n[ \"$1\" = -L ] || exit 9\n"
                   f"echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: {UUID_A})'\n"
                   f"echo '  MIG 1g.10gb     Device  0: (UUID: {MIG})'\n"
                   f"echo 'GPU 1: NVIDIA H100 80GB HBM3 (UUID: {UUID_B})'\n")
    smi.chmod(0o755)
    # nvidia-smi lists every GPU of the machine (a MIG line is not one more GPU)
    assert gpu_pool.physical_device_count({"NVIDIA_SMI": str(smi), "CUDA_VISIBLE_DEVICES": "1"}) == 2
    assert gpu_pool.gpus_from_env({"NVIDIA_SMI": str(smi)}) == ["0", "1"]
    assert gpu_pool.gpus_from_env({"NVIDIA_SMI": str(smi), "CUDA_VISIBLE_DEVICES": "1,0"}) == ["1", "0"]
    assert gpu_pool.gpus_from_env({gpu_pool.FAKE_COUNT_ENV: "4", "CUDA_VISIBLE_DEVICES": "3,1"}) == ["3", "1"]
    assert gpu_pool.gpus_from_env({gpu_pool.FAKE_COUNT_ENV: "4", "CUDA_VISIBLE_DEVICES": ""}) == []


def test_workers_per_gpu_option_then_environment_then_one():
    assert gpu_pool.workers_per_gpu(None, {}) == 1
    assert gpu_pool.workers_per_gpu(None, {gpu_pool.PER_GPU_ENV: "3"}) == 3
    assert gpu_pool.workers_per_gpu(2, {gpu_pool.PER_GPU_ENV: "3"}) == 2
    for bad in (0, -1):
        with pytest.raises(ValueError, match="at least 1"):
            gpu_pool.workers_per_gpu(bad, {})
    with pytest.raises(ValueError, match=gpu_pool.PER_GPU_ENV):
        gpu_pool.workers_per_gpu(None, {gpu_pool.PER_GPU_ENV: "many"})


def test_worker_assignment_is_balanced_and_refuses_too_many_workers():
    """Every (workers, GPUs, per GPU) up to 8: within the limit each GPU gets at most ``per_gpu``
    workers and the counts differ by at most one, worker i on GPU i mod G; past it, a refusal that
    names the workers, the GPUs and the way out."""
    for n, g, k in itertools.product(range(0, 9), range(1, 5), range(1, 4)):
        gpus = [f"GPU-{i}" if i % 2 else str(i) for i in range(g)]
        if n <= g * k:
            assigned = gpu_pool.assign_workers(n, gpus, k)
            assert assigned == [gpus[i % g] for i in range(n)]
            counts = Counter(assigned)
            assert set(counts) <= set(gpus) and max(counts.values(), default=0) <= k
            assert max(counts.values(), default=0) - min((counts[x] for x in gpus), default=0) <= 1
        else:
            with pytest.raises(gpu_pool.TooManyWorkers) as info:
                gpu_pool.assign_workers(n, gpus, k)
            message = str(info.value)
            assert f"{n} workers" in message and f"{g} visible GPU" in message and ",".join(gpus) in message
            assert f"--workers-per-gpu={-(-n // g)}" in message and gpu_pool.PER_GPU_ENV in message
    assert gpu_pool.assign_workers(5, [], 1) == []  # no GPU: nothing pinned, nothing refused


def test_auto_is_one_worker_per_gpu_and_leaves_cpu_machines_to_xdist(monkeypatch):
    assert gpu_pool.auto_workers(["0", "1", "2"]) == 3
    assert gpu_pool.auto_workers(["0", "1"], 4) == 8
    assert gpu_pool.auto_workers([]) is None
    config = types.SimpleNamespace(getoption=lambda name: {"workers_per_gpu": None}[name])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.delenv(gpu_pool.PER_GPU_ENV, raising=False)
    monkeypatch.setenv(gpu_pool.FAKE_COUNT_ENV, "3")
    assert xdist_plugin.pytest_xdist_auto_num_workers(config) == 3
    monkeypatch.setenv(gpu_pool.PER_GPU_ENV, "2")
    assert xdist_plugin.pytest_xdist_auto_num_workers(config) == 6
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    assert xdist_plugin.pytest_xdist_auto_num_workers(config) == 2
    monkeypatch.setenv(gpu_pool.FAKE_COUNT_ENV, "0")
    assert xdist_plugin.pytest_xdist_auto_num_workers(config) is None  # xdist's CPU count stands
    monkeypatch.setenv(gpu_pool.FAKE_COUNT_ENV, "3")
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "5")
    assert xdist_plugin.pytest_xdist_auto_num_workers(config) is None  # xdist's own override stands


def test_gpu_slots_never_overfill_and_rotate():
    """Random takes and gives: a GPU never holds more than ``per_gpu`` jobs, ``take`` answers None
    exactly when every GPU is full, it picks a least loaded GPU, and with one job per GPU
    successive takes go round the GPUs."""
    rng = random.Random(7)
    for gpus, k in ((["0"], 1), (["0", "1"], 1), (["3", UUID_A, "1"], 2), (["0", "1", "2", "3"], 3)):
        slots = gpu_pool.GpuSlots(gpus, k)
        held: list[str] = []
        for _ in range(300):
            if held and rng.random() < 0.45:
                slots.give(held.pop(rng.randrange(len(held))))
                continue
            before = dict(slots.load)
            gpu = slots.take()
            if gpu is None:
                assert all(n == k for n in before.values())
                continue
            assert before[gpu] == min(before.values()) and before[gpu] < k
            held.append(gpu)
            assert Counter(held) == Counter({g: n for g, n in slots.load.items() if n})
    slots = gpu_pool.GpuSlots(["0", "1", "2"], 1)
    assert [slots.take() for _ in range(4)] == ["0", "1", "2", None]
    slots.give("1")
    assert slots.take() == "1" and not slots.free()
    with pytest.raises(ValueError):
        gpu_pool.GpuSlots([], 1)
    with pytest.raises(ValueError, match="no job"):
        gpu_pool.GpuSlots(["0"], 1).give("0")


def test_table_has_a_worker_column_only_under_xdist():
    a = VariantTally("model:a", seconds=2.0, examples=4, failures=1)
    b = VariantTally("model:b", seconds=1.0, examples=2)
    alone = stage_table([a, b])
    assert "worker" not in alone[0] and alone[1].startswith("model:a ")
    merged = stage_table([a, b], workers=["gw0 (GPU 0)", "gw1 (GPU 1)"])
    assert merged[0].split()[:3] == ["variant", "worker", "examples"]
    assert "gw0 (GPU 0)" in merged[1] and "gw1 (GPU 1)" in merged[2]
    # the columns right of the worker are the single-process row's, shifted by the worker column
    assert merged[1].split()[-11:] == alone[1].split()[-11:]

    plugin = ProgressPlugin(types.SimpleNamespace(observers=[], close=lambda: None))
    records = [{"test_id": "model:a", "seconds": 2.0, "examples": 4, "failures": 1, "failed_tests": 0,
                "warm_examples": 3, "warm_seconds": 1.5, "warm_stages": {"subject": 0.9}}]
    plugin.add_worker_tallies("gw10 (GPU 3)", records)
    plugin.add_worker_tallies("gw2 (GPU 1)", [dict(records[0], test_id="model:b")])
    lines = []
    reporter = types.SimpleNamespace(section=lambda title: lines.append(title), write_line=lines.append)
    plugin.pytest_terminal_summary(reporter)
    assert lines[0].startswith(TABLE_TITLE) and len(lines) == 4
    assert "gw2 (GPU 1)" in lines[2] and "gw10 (GPU 3)" in lines[3]  # workers in number order


def test_plain_nodeid_drops_the_loadgroup_suffix_only():
    def item(nodeid, groups):
        marks = [types.SimpleNamespace(args=(g,), kwargs={}) for g in groups]
        return types.SimpleNamespace(nodeid=nodeid, iter_markers=lambda name: iter(marks))

    base = "properties/test_subject_vs_oracle.py::test_subject_matches_oracle[model:m]"
    assert xdist_plugin.plain_nodeid(item(base + "@model:m", ["model:m"])) == base
    assert xdist_plugin.plain_nodeid(item(base, ["model:m"])) == base  # single process: no suffix
    assert xdist_plugin.plain_nodeid(item(base + "@x", [])) == base + "@x"


# ---- real pytest runs
TINY_MODULE = '''
    import json
    import os

    import pytest

    from properties.checks import check_example
    from properties.strategies import Example


    @pytest.mark.parametrize("seed", range(3))
    def test_variant_example(subject_variant, seed):
        check_example(subject_variant, Example(((64, 64, 256, 1),), seed, "uniform", "separate"), rerun=False)
        record(subject_variant.test_id)


    @pytest.mark.parametrize("n", range(4))
    def test_no_variant(n):
        record(None)


    def record(variant):
        with open(os.environ["XDIST_RECORD"], "a") as f:
            f.write(json.dumps([os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("CUDA_VISIBLE_DEVICES"),
                                variant]) + "\\n")
'''


def _pytest(tmp_path, *args, gpus: int = 2, timeout: float = 240):
    """``python3 -m pytest -p conftest -p xdist ARGS`` in ``tmp_path``: the repository's root
    conftest as a plugin (the generated module lives outside the repository), NVFP4_FAKE_GPU_COUNT
    GPUs, no CUDA_VISIBLE_DEVICES of the caller's."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "PYTEST_ADDOPTS")
           and not k.startswith(("PYTEST_XDIST", "NVFP4_"))}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               NVFP4_FAKE_GPU_COUNT=str(gpus), XDIST_RECORD=str(tmp_path / "record.jsonl"),
               NVFP4_SLOW_EXAMPLE_S="0", HYPOTHESIS_PROFILE="smoke")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "xdist", "-p", "no:cacheprovider",
                           *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def tiny(tmp_path):
    pytest.importorskip("xdist")
    (tmp_path / "test_tiny.py").write_text(textwrap.dedent(TINY_MODULE))
    return tmp_path


def test_two_workers_two_gpus_one_variant_per_worker_one_table(tiny):
    done = _pytest(tiny, "-n", "2", "--subject=model", "test_tiny.py")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    from kernel import model

    variants = len(model.DECLARED_VARIANTS)  # three examples each, and four tests without a variant
    assert f"{3 * variants + 4} passed" in done.stdout, out[-4000:]
    records = [json.loads(line) for line in (tiny / "record.jsonl").read_text().splitlines()]
    assert len(records) == 3 * variants + 4
    seen = {}
    for worker, visible, _ in records:
        seen.setdefault(worker, set()).add(visible)
    # each worker saw its own GPU, gw<i> on GPU i
    assert seen == {"gw0": {"0"}, "gw1": {"1"}}, seen
    # the loadgroup distribution: all tests of a variant on one worker
    by_variant = {}
    for worker, _, variant in records:
        if variant is not None:
            by_variant.setdefault(variant, set()).add(worker)
    assert len(by_variant) == variants and all(len(workers) == 1 for workers in by_variant.values()), by_variant
    # one closing table, from the controller, with each variant's worker and its three examples
    assert out.count(TABLE_TITLE) == 1, out[-4000:]
    table = done.stdout[done.stdout.index(TABLE_TITLE):].splitlines()
    assert table[1].split()[:3] == ["variant", "worker", "examples"]
    for variant, (worker,) in by_variant.items():
        row = next(line for line in table if line.startswith(variant))
        label = gpu_pool.worker_label(worker, worker.removeprefix("gw"))
        assert row[44:].split()[:3] == label.split() and row[44:].split()[3] == "3", row
        # the worker's live progress line, led by its id, on standard error
        assert f"[{worker}] [nvfp4 progress] {variant} done: 3 examples" in done.stderr


def test_more_workers_than_gpus_is_a_usage_error(tiny):
    done = _pytest(tiny, "-n", "3", "--subject=model", "test_tiny.py", gpus=2, timeout=120)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:] + done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr
    assert "3 workers" in errors[0] and "2 visible GPUs" in errors[0] and "--workers-per-gpu=2" in errors[0]
    assert not (tiny / "record.jsonl").exists()


def test_benchmark_only_under_xdist_is_a_usage_error(tiny):
    done = _pytest(tiny, "--benchmark-only", "-n", "1", "test_tiny.py", timeout=120)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:] + done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and "--benchmark-only" in errors[0] and "without -n" in errors[0]


def test_ncu_tools_refuse_inside_an_xdist_worker(tmp_path):
    env = dict(os.environ, PYTEST_XDIST_WORKER="gw1")
    for cmd in (["-m", "ci.ncu_one_launch", "h90_m128n128k256_s3_wg1_fp16"],
                ["-m", "profiling.ncu_sweep", "--arch", "sm_90a", "--shapes", "bench4", "--out", str(tmp_path)]):
        done = subprocess.run([sys.executable, *cmd], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
        assert "pytest-xdist worker gw1" in done.stderr and "Traceback" not in done.stderr
