"""The timeline build (``profiling.timeline``) on the GPU: the stamps are where the kernel is.

For the default dispatch's two builds on a ragged 3-group problem (an empty group, rows past M),
on the full grid and on a grid of 2 CTAs (each walks several tiles): the outputs are bit-identical to the production
build's (the stamps change no result); every CTA with a tile stamps every point but
``phase1_done``, which exactly the prepass build stamps; and per CTA the points come in the
kernel's order: start <= the producer's first acquire <= its first commit <= the first tile's
epilogue <= the last tile's epilogue <= the end of its stores, and the producer's tail after its
first commit; phase 1 done after the start and before the first epilogue. Skipped where no sm_90
GPU runs.
"""

from __future__ import annotations

import pytest

from kernel.hopper.variants import FASTEST_STAGED_PDL_CONFIG, SPLIT_WARP_CONFIG

CONFIGS = [SPLIT_WARP_CONFIG, FASTEST_STAGED_PDL_CONFIG]
SIZES = [(200, 512, 1024, 1), (0, 384, 512, 1), (70, 640, 768, 1)]


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("ctas", [0, 2])
@pytest.mark.parametrize("config", CONFIGS, ids=[c.label for c in CONFIGS])
def test_timeline_stamps_follow_the_kernel(config, ctas):
    from properties.subjects import gpu_skip_reason

    reason = gpu_skip_reason("hopper")
    if reason:
        pytest.skip(reason)
    import torch

    from kernel import hopper
    from kernel.perturbation import Perturbation, timeline_perturbation, timeline_stamps
    from oracle.inputs import make_inputs

    data = make_inputs(SIZES, 5, device="cuda")
    want = [c.clone() for c in hopper.custom_kernel(data, config=config)]
    marker = Perturbation(0, 0, 0, poison=False, delays=False, runtime=True, timeline=True, max_ctas=ctas)
    assert marker.compile_form == timeline_perturbation()  # the cap is data: one build
    prep = hopper.prepare(data, config, perturbation=marker)
    if ctas:
        assert prep.plan.num_ctas == ctas
    for _rep in range(2):  # a second launch over the same table: the "first" stamps must be reset
        prep.delay_table.copy_(torch.tensor(marker.device_words(), dtype=torch.int32))
        for c in prep.outputs:
            c.fill_(float("nan"))
        got = [c.clone() for c in hopper.launch(prep)]
        torch.cuda.synchronize()
        for g, (x, y) in enumerate(zip(got, want)):
            assert torch.equal(x.view(torch.int16), y.view(torch.int16)), f"group {g}: the timeline build's C differs"
        stamps = timeline_stamps(prep.delay_table.cpu().tolist(), prep.plan.num_ctas)
        prepass = config.y_source == "prepass"
        for cta in range(prep.plan.num_ctas):
            s = {name: values[cta] for name, values in stamps.items()}
            assert s["start"], f"CTA {cta} did not stamp its start"
            assert bool(s["phase1_done"]) == prepass
            if not s["epilogue_first"]:  # a CTA without a tile: nothing after the start but the tail
                assert not s["epilogue_last"] and not s["epilogue_last_end"]
                continue
            order = ["start", "producer_first_acquire", "producer_first_commit", "epilogue_first", "epilogue_last",
                     "epilogue_last_end"]
            assert all(s[p] for p in order + ["producer_tail"]), (cta, s)
            assert [s[p] for p in order] == sorted(s[p] for p in order), (cta, s)
            assert s["producer_tail"] >= s["producer_first_commit"]
            assert s["start"] <= s["tables_read"] <= s["epilogue_first"], (cta, s)
            if prepass:
                assert s["start"] <= s["phase1_done"] <= s["epilogue_first"], (cta, s)
                if config.prepass_chunk:  # thread 0: its chunks, the grid barrier, the CTA barrier
                    assert s["tables_read"] <= s["phase1_decoded"] <= s["phase1_passed"] <= s["phase1_done"], (cta, s)
                    if s["phase1_loaded"]:  # its first chunk's steps (a CTA may decode none)
                        steps = ["tables_read", "phase1_loaded", "phase1_fenced", "phase1_published", "phase1_decoded"]
                        assert [s[p] for p in steps] == sorted(s[p] for p in steps), (cta, s)
