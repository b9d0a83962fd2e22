"""Tensor maps rewritten in place between launches: every launch must use the maps of its own tensors.

A TMA variant reads its tensor maps (kernel.tensor_maps) from a device table that the host
writes before the launch. On the seen-shape path (kernel.seen_shapes) a problem of shapes seen
before gets a fresh table block, uploaded without waiting on torch's current stream; the caching
allocator hands the block freed by the previous problem straight back, so two problems of the
same shapes on other tensors run back to back with their maps at the **same device address**,
rewritten by a copy between the two kernels. The TMA unit caches tensor maps by address; what
makes it re-read the new bytes is the kernel's ``fence.proxy.tensormap::generic.acquire`` before
its first TMA with a map (kernel.hopper.ptx.tensormap_acquire). Nothing else in the suite reuses
a map address with other contents: the harness builds take the full path (a fresh table per
prepare, kept alive), the fast path keeps each problem's tables, and the properties synchronize
between examples.

The property: alternate two input sets A, B of identical shapes (different data, different
addresses), ``ROUNDS`` times, each call on the seen path (the fast path is cleared so it cannot
replay a cached table), no synchronization in between, each launch into its own outputs; the
maps must land at one address for consecutive launches (else the provocation did not happen and
the test skips), and every launch's outputs must match the oracle for its own inputs.

Runs in a subprocess with a time limit, so a mutant that deadlocks fails this test instead of
hanging the pytest process (the other properties run in isolation workers). Skips for variants
without tensor maps (cp.async and bulk-copy loaders) and without an sm_90 GPU.
ci.mutation_runner runs it with the plain property of every concurrency mutant of a TMA variant
(aimed at ``hopper_sync_tensormap_acquire_missing__rs``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.properties

ROUNDS = 8
SIZES = [(80, 512, 512, 1), (0, 512, 512, 1), (200, 384, 512, 1)]  # as test_seen_shape_launches_on_the_gpu_match_the_oracle
TIMEOUT_S = float(os.environ.get("NVFP4_MAP_REWRITE_TIMEOUT", "150"))


def uses_tensor_maps(label: str) -> bool:
    from kernel.hopper.variants import DECLARED_VARIANTS

    return any(c.label == label and c.loader == "tma" for c in DECLARED_VARIANTS)


def test_tensor_maps_rewritten_in_place_between_launches(subject_variant, request):
    earlier = [t for s, label, t in getattr(request.config, "_nvfp4_failed_subjects", [])
               if (s, label) == (subject_variant.subject, subject_variant.label)]
    if earlier:
        # a hung or wrong variant already failed a property here: this provocation (a subprocess
        # that may wait TIMEOUT_S for a hang) has nothing to add, and would only delay the verdict
        pytest.skip(f"{subject_variant.label} already failed {earlier[0]} in this process")
    if subject_variant.subject != "hopper":
        pytest.skip("Hopper variants only (the tensor-map tables are the Hopper family's fourth table)")
    if not uses_tensor_maps(subject_variant.label):
        pytest.skip(f"{subject_variant.label}: no tensor maps (loader is not TMA)")
    import torch

    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("needs an sm_90 GPU")
    cmd = [sys.executable, "-m", "properties.test_tensor_map_rewrite", subject_variant.label]
    try:
        # the Python seen path: its seen_tables is where run() records each upload's address (the
        # native seen pass, kernel/native/fast_probe.cpp, uploads the same block without it)
        env = dict(os.environ, NVFP4_NATIVE_PROBE="0")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{subject_variant.label}: no answer within {TIMEOUT_S:.0f} s (hang) while launching "
                    f"alternating tensor sets on rewritten tensor maps")
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        pytest.fail(f"{subject_variant.label}: the launch process failed (exit {proc.returncode}): "
                    f"{(proc.stderr or proc.stdout)[-1500:]}")
    result = json.loads(lines[-1])
    if not result["addresses"]:
        pytest.fail(f"{subject_variant.label}: no table upload was recorded (the seen path's seen_tables was not "
                    f"called: a harness change bypassed the hook); the provocation cannot be judged")
    if not result["same_address_rewrites"]:
        pytest.skip(f"provocation not achieved: no two consecutive launches had their tensor maps at one address "
                    f"({result['addresses']})")
    assert not result["bad"], (
        f"{subject_variant.label}: launches on tensor maps rewritten in place at one address read the wrong "
        f"tensors: {result['bad'][:4]} (of {result['launches']} launches, {result['same_address_rewrites']} "
        f"rewrites at one address); repro: python -m properties.test_tensor_map_rewrite {subject_variant.label}")


def run(label: str) -> dict:
    """The launches (in this process; the test runs it as a subprocess)."""
    import torch

    import oracle
    from kernel.family import get_family

    family = get_family("hopper")
    config = family.find(label)
    pipeline = family.pipeline
    family.custom_kernel(oracle.make_inputs(SIZES, 0, device="cuda"), config)  # learns the shapes
    torch.cuda.synchronize()
    sets = [oracle.make_inputs(SIZES, seed, device="cuda") for seed in (1, 2)]
    expected = [oracle.expected_outputs(data) for data in sets]
    torch.cuda.synchronize()

    addresses: list[int] = []
    seen_tables = pipeline.seen_tables

    def recording(*args, **kwargs):
        tables, aux, stream = seen_tables(*args, **kwargs)
        addresses.append(-1 if aux is None else aux.tensor.data_ptr())
        return tables, aux, stream

    pipeline.seen_tables = recording
    launches = []  # (set index, outputs)
    try:
        for _round in range(ROUNDS):
            for i, data in enumerate(sets):
                outs = [torch.full_like(c, float("nan")) for _, _, c in data[0]]
                # no cached table: the seen path uploads a new one, into the block just freed
                pipeline.fast_path.clear()
                family.custom_kernel(oracle.replace_outputs(data, outs), config)
                launches.append((i, outs))
        torch.cuda.synchronize()
    finally:
        pipeline.seen_tables = seen_tables
    bad = []
    for n, (i, outs) in enumerate(launches):
        report = oracle.compare(outs, [e.reference for e in expected[i]], [e.bound for e in expected[i]])
        if not report.ok:
            bad.append(f"launch {n} (set {'AB'[i]}): {str(report)[:200]}")
    rewrites = sum(1 for a, b in zip(addresses, addresses[1:]) if a == b and a != -1)
    return {"launches": len(launches), "addresses": [hex(a) for a in addresses[:6]],
            "same_address_rewrites": rewrites, "bad": bad}


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1])))
