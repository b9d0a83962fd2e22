"""Stream-K over the balanced lists (``HopperConfig.stream_k``) on the GPU: a tile split between
two CTAs continues one chain of 16-K wgmma updates from the fp32 partial the first CTA hands on,
so C must be bit-identical to the same build without stream-K, on problems whose ranges split
full and light tiles, put a CTA's whole range inside one tile (a piece that waits and hands on),
and mix K per group; with every boundary taken by the CTA after it (``Perturbation.streamk_take``:
the path a grid that is not co-resident takes); on the full grid and on 2 and 3 CTAs; and launched
back to back on one workspace, alternating two problems (every state word must be idle again
after each launch, or the next launch reads a stale partial or hangs: run under a timeout).
Skipped where no sm_90 GPU runs.
"""

from __future__ import annotations

import dataclasses

import pytest

from kernel.hopper.config import STREAM_K_CONFIG

CASES = {
    "bench1": [(m, 4096, 7168, 1) for m in (80, 176, 128, 72, 64, 248, 96, 160)],
    "mixed_k": [(200, 384, 4096, 1), (33, 256, 7168, 1), (64, 130, 2048, 1)],  # CTA 8's range inside one tile
    "ragged": [(130, 257, 512, 1), (7, 130, 256, 1), (0, 128, 256, 1), (256, 646, 768, 1)],
}


def _gpu():
    from properties.subjects import gpu_skip_reason

    reason = gpu_skip_reason("hopper")
    if reason:
        pytest.skip(reason)


def _same(got, want, what):
    import torch

    for g, (x, y) in enumerate(zip(got, want)):
        assert torch.equal(x.view(torch.int16), y.view(torch.int16)), f"{what}: group {g} differs"


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("take", [False, True], ids=["claimed", "taken"])
@pytest.mark.parametrize("ctas", [0, 2, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_stream_k_is_bit_identical_to_its_twin(case, ctas, take):
    _gpu()
    import torch

    from kernel import hopper
    from kernel.perturbation import Perturbation
    from oracle.inputs import make_inputs

    data = make_inputs(CASES[case], 31, device="cuda")
    twin = dataclasses.replace(STREAM_K_CONFIG, stream_k=False)
    want = [c.clone() for c in hopper.custom_kernel(data, config=twin)]
    if not ctas and not take:
        for _rep in range(3):  # the fast path: the same launch again, the words idle in between
            for c in data[0]:
                c[2].fill_(float("nan"))
            got = hopper.custom_kernel(data, config=STREAM_K_CONFIG)
            torch.cuda.synchronize()
            _same(got, want, f"{case}, production build")
        return
    p = Perturbation(0, 0, 0, poison=True, delays=False, runtime=True, max_ctas=ctas, streamk_take=take)
    prep = hopper.prepare(data, STREAM_K_CONFIG, perturbation=p)
    if ctas:
        assert prep.plan.num_ctas == ctas
    for _rep in range(2):
        prep.delay_table.copy_(torch.tensor(p.device_words(), dtype=torch.int32))
        for c in prep.outputs:
            c.fill_(float("nan"))
        got = [c.clone() for c in hopper.launch(prep)]
        torch.cuda.synchronize()
        _same(got, want, f"{case}, {ctas or 'full'} grid, take={take}")


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
        _same(oa, wa, f"rep {rep}, problem a")
        _same(ob, wb, f"rep {rep}, problem b")
