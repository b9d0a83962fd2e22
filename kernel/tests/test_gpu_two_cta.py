"""Two CTAs per SM (``TWO_CTA_CONFIG``, label ``..._cta2``) on the GPU.

Its tile is half of production's (one consumer warpgroup, 64 rows of X), but every element of C
is the same chain of 16-K wgmma updates in K order, so C must be the same bits as the production
prepass build's, on the standard shapes and on ragged problems (an empty group, rows and columns
past the tile edges), on the full grid and on 3 CTAs (each walks many tiles). And the occupancy
the build asks for must be what the GPU gives it: on bench1 (each CTA busy for most of the
launch), every CTA of the grid of twice the SM count starts within the first fifth of the launch
(a second CTA that cannot sit beside the first one on its SM starts only when that one ends).
Skipped where no sm_90 GPU runs.
"""

from __future__ import annotations

import pytest

from kernel.hopper.config import SPLIT_WARP_CONFIG, TWO_CTA_CONFIG

CASES = {
    "bench1": [(m, 4096, 7168, 1) for m in (80, 176, 128, 72, 64, 248, 96, 160)],
    "bench3": [(192, 3072, 4096, 1), (320, 3072, 4096, 1)],
    "bench4": [(128, 4096, 1536, 1), (384, 4096, 1536, 1)],
    "ragged": [(130, 257, 512, 1), (7, 130, 256, 1), (0, 128, 256, 1), (256, 646, 768, 1)],
}


def _gpu():
    from properties.subjects import gpu_skip_reason

    reason = gpu_skip_reason("hopper")
    if reason:
        pytest.skip(reason)


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("ctas", [0, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_same_bits_as_production(case, ctas):
    _gpu()
    import torch

    from kernel import hopper
    from kernel.perturbation import Perturbation
    from oracle.inputs import make_inputs

    data = make_inputs(CASES[case], 41, device="cuda")
    want = [c.clone() for c in hopper.custom_kernel(data, config=SPLIT_WARP_CONFIG)]
    if ctas:  # the cap is run-time data of the harness build (no poison, no delay)
        p = Perturbation(0, 0, 0, poison=False, delays=False, runtime=True, max_ctas=ctas)
        prep = hopper.prepare(data, TWO_CTA_CONFIG, perturbation=p)
        assert prep.plan.num_ctas == ctas
        got = hopper.launch(prep)
    else:
        got = hopper.custom_kernel(data, config=TWO_CTA_CONFIG)
    torch.cuda.synchronize()
    bad = [g for g, (x, y) in enumerate(zip(got, want)) if not torch.equal(x.view(torch.int16), y.view(torch.int16))]
    assert not bad, f"{case}, {ctas or 'full'} grid: groups {bad} differ from the production build"


@pytest.mark.gpu
@pytest.mark.sm90
def test_two_ctas_are_resident_on_every_sm():
    _gpu()
    import torch

    from kernel import device as devmod
    from kernel import hopper
    from kernel.perturbation import timeline_perturbation, timeline_stamps
    from oracle.inputs import make_inputs

    data = make_inputs(CASES["bench1"], 43, device="cuda")
    marker = timeline_perturbation()
    prep = hopper.prepare(data, TWO_CTA_CONFIG, perturbation=marker)
    ctas = prep.plan.num_ctas
    assert ctas == 2 * devmod.sm_count()
    words = torch.tensor(marker.device_words(), dtype=torch.int32)
    for _warm in range(2):
        prep.delay_table.copy_(words)
        hopper.launch(prep)
        torch.cuda.synchronize()
    stamps = timeline_stamps(prep.delay_table.cpu().tolist(), ctas)
    starts = stamps["start"]
    assert all(starts), "a CTA did not stamp its start"
    t0 = min(starts)
    end = max(t for values in stamps.values() for t in values if t)
    late = sorted(range(ctas), key=lambda c: -starts[c])[:4]
    assert max(starts) - t0 < 0.2 * (end - t0), (
        f"CTAs {late} started {[(starts[c] - t0) / 1e3 for c in late]} us into a {(end - t0) / 1e3:.1f} us "
        "launch: two CTAs of this build do not sit on one SM at once")
