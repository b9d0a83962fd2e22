"""Stream-K over the balanced lists (``HopperConfig.stream_k``) on the GPU: a tile split between
two CTAs continues one chain of 16-K wgmma updates from the fp32 partial the first CTA hands on,
so C must be bit-identical to the same build without stream-K, on problems whose ranges split
full and light tiles, put a CTA's whole range inside one tile (a piece that waits and hands on),
and mix K per group; on the full grid and on 2 and 3 CTAs; with every boundary claimed (the
production build, launched three times: the state words idle again in between) and with every
boundary taken by the CTA after it (``Perturbation.streamk_take``: the path a grid that is not
co-resident takes). The launches run in a child process with a time limit, so a protocol that
spins forever fails the test (``hung``) instead of stopping the run. And two problems of one
geometry launched alternately on one workspace. Skipped where no sm_90 GPU runs.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from kernel.hopper.config import STREAM_K_CONFIG

ROOT = Path(__file__).resolve().parents[2]
CASES = {
    "bench1": [(m, 4096, 7168, 1) for m in (80, 176, 128, 72, 64, 248, 96, 160)],
    "mixed_k": [(200, 384, 4096, 1), (33, 256, 7168, 1), (64, 130, 2048, 1)],  # CTA 8's range inside one tile
    "ragged": [(130, 257, 512, 1), (7, 130, 256, 1), (0, 128, 256, 1), (256, 646, 768, 1)],
}
CHILD_TIMEOUT_S = 240


def _gpu():
    from properties.subjects import gpu_skip_reason

    reason = gpu_skip_reason("hopper")
    if reason:
        pytest.skip(reason)


def _differs(got, want) -> list[int]:
    import torch

    return [g for g, (x, y) in enumerate(zip(got, want)) if not torch.equal(x.view(torch.int16), y.view(torch.int16))]


def child_main(take: bool) -> int:
    """Every case on the full grid and on 2 and 3 CTAs, each launch against the twin without
    stream-K; prints one line per mismatch; the exit status is the number of mismatches."""
    import torch

    from kernel import hopper
    from kernel.perturbation import Perturbation
    from oracle.inputs import make_inputs

    twin = dataclasses.replace(STREAM_K_CONFIG, stream_k=False)
    bad = 0
    for case, sizes in sorted(CASES.items()):
        data = make_inputs(sizes, 31, device="cuda")
        want = [c.clone() for c in hopper.custom_kernel(data, config=twin)]
        for ctas in (0, 2, 3):
            if not ctas and not take:  # production: the fast path, the same launch again
                for rep in range(3):
                    for g in data[0]:
                        g[2].fill_(float("nan"))
                    got = hopper.custom_kernel(data, config=STREAM_K_CONFIG)
                    torch.cuda.synchronize()
                    for g in _differs(got, want):
                        print(f"MISMATCH {case} full grid rep {rep} group {g}", flush=True)
                        bad += 1
                continue
            p = Perturbation(0, 0, 0, poison=True, delays=False, runtime=True, max_ctas=ctas, streamk_take=take)
            prep = hopper.prepare(data, STREAM_K_CONFIG, perturbation=p)
            assert not ctas or prep.plan.num_ctas == ctas
            for rep in range(2):
                prep.delay_table.copy_(torch.tensor(p.device_words(), dtype=torch.int32))
                for c in prep.outputs:
                    c.fill_(float("nan"))
                got = [c.clone() for c in hopper.launch(prep)]
                torch.cuda.synchronize()
                for g in _differs(got, want):
                    print(f"MISMATCH {case} {ctas or 'full'} grid take={take} rep {rep} group {g}", flush=True)
                    bad += 1
    print(f"DONE {bad} mismatches", flush=True)
    return min(bad, 100)


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("take", [False, True], ids=["claimed", "taken"])
def test_stream_k_is_bit_identical_to_its_twin(take):
    _gpu()
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from kernel.tests.test_gpu_streamk import child_main; " \
           f"raise SystemExit(child_main({take}))"
    try:
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:  # the child is killed: its context and its spinning CTAs with it
        pytest.fail(f"hung: no result within {CHILD_TIMEOUT_S} s (take={take}); output so far:\n"
                    f"{(e.stdout or b'')[-2000:]!r}")
    assert proc.returncode == 0 and "DONE 0 mismatches" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.mark.gpu
@pytest.mark.sm90
def test_back_to_back_launches_leave_every_boundary_idle():
    """Two problems of one geometry (one workspace), launched alternately with nothing between
    them: a word left CLAIMED, PUBLISHED or TAKEN would make the next launch read the other
    problem's partial, run a tile twice over, or spin forever."""
    _gpu()
    import torch

    from kernel import hopper
    from oracle.inputs import make_inputs

    twin = dataclasses.replace(STREAM_K_CONFIG, stream_k=False)
    da = make_inputs(CASES["bench1"], 41, device="cuda")
    db = make_inputs(CASES["bench1"], 42, device="cuda")
    wa = [c.clone() for c in hopper.custom_kernel(da, config=twin)]
    wb = [c.clone() for c in hopper.custom_kernel(db, config=twin)]
    torch.cuda.synchronize()
    for rep in range(4):
        oa = hopper.custom_kernel(da, config=STREAM_K_CONFIG)
        ob = hopper.custom_kernel(db, config=STREAM_K_CONFIG)
        torch.cuda.synchronize()
        assert not _differs(oa, wa) and not _differs(ob, wb), f"rep {rep}"
