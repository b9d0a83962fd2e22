"""Programmatic dependent launch (``HopperConfig.pdl``) on the GPU: a launch that reads what the
launch before it on the stream wrote.

A ``pdl`` build lets the next launch's CTAs start while this one's last CTAs run; its
``griddepcontrol.wait`` must hold every global access of the next launch until the previous
grid is complete and its writes visible. The provocation: launch 1 is long and narrow (a few
CTAs, a long K, so most SMs are free for launch 2 at once); launch 2, queued right behind it on
the same stream without a synchronization, takes launch 1's output C as the packed FP4 bytes of
its own A. Launch 2's result must be bit-identical to the twin build without ``pdl`` run on a
copy of those bytes after a synchronization: an early read sees C's NaN fill instead. Repeated,
with launch 1's output poisoned again each time. Skipped where no sm_90 GPU runs.
"""

from __future__ import annotations

import dataclasses

import pytest

from kernel.hopper.variants import DECLARED_VARIANTS, SPLIT_WARP_CONFIG

# every declared build that launches with the programmatic-serialization attribute, and the
# prepass build with pdl (undeclared: its code path is the declared builds')
PDL_CONFIGS = [c for c in DECLARED_VARIANTS if c.pdl] + [dataclasses.replace(SPLIT_WARP_CONFIG, pdl=True)]
# launch 1: 8 tiles of 128 x 128 over K = 16384 (a few CTAs busy for a long time); its C holds
# 128 x 1024 fp16 = 256 KB. Launch 2: two groups whose A rows (K / 2 bytes each) are 192 KB of
# those bytes (the second group's from an offset inside C)
FIRST = [(128, 1024, 16384, 1)]
SECOND = [(128, 2048, 1024, 1), (256, 512, 1024, 1)]
# ... or whose B rows are 192 KB of them (case "b")
SECOND_B = [(128, 256, 1024, 1), (256, 128, 1024, 1)]
REPEATS = 4


def sequential_twin(config):
    """The same results without any launch overlap: no pdl."""
    return dataclasses.replace(config, pdl=False)


def _skip_reason():
    from properties.subjects import gpu_skip_reason

    return gpu_skip_reason("hopper")


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("operand", ["a", "b"])
@pytest.mark.parametrize("config", PDL_CONFIGS, ids=[c.label for c in PDL_CONFIGS])
def test_pdl_launch_reads_the_previous_launchs_output(config, operand):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    import torch

    from kernel import hopper
    from oracle.inputs import make_inputs

    twin = sequential_twin(config)
    first = make_inputs(FIRST, 11, device="cuda")
    second = make_inputs(SECOND if operand == "a" else SECOND_B, 12, device="cuda")
    (abc1, _sf1, _sfr1, _sizes1) = first
    c1 = abc1[0][2]
    c1_bytes = c1.view(-1).view(torch.uint8)
    abc2, sf2, sfr2, sizes2 = second
    aliased, at = [], 0
    for (a, b, c) in abc2:
        x = a if operand == "a" else b
        n = x.numel() * x.element_size()
        assert at + n <= c1_bytes.numel()
        x = c1_bytes[at:at + n].view(x.dtype).view(x.shape)
        aliased.append((x, b, c) if operand == "a" else (a, x, c))
        at += n
    chained = (aliased, sf2, sfr2, sizes2)
    # both problems prepared (compiled, tables uploaded) first: between the two launches there is
    # no host work and no copy on the stream, which would order them in full by itself
    prep1 = hopper.prepare(first, config)
    prep2 = hopper.prepare(chained, config)
    for rep in range(REPEATS):
        c1.fill_(float("nan"))
        for _a, _b, c in aliased:
            c.fill_(float("nan"))
        torch.cuda.synchronize()
        hopper.launch(prep1)
        got = [c.clone() for c in hopper.launch(prep2)]
        torch.cuda.synchronize()
        # the same bytes, copied after the synchronization, through the twin without pdl
        settled = ([(a.clone(), b.clone(), torch.full_like(c, float("nan"))) for a, b, c in aliased], sf2, sfr2,
                   sizes2)
        want = hopper.custom_kernel(settled, config=twin)
        torch.cuda.synchronize()
        assert not torch.isnan(c1).any(), "launch 1 left NaN in its output"
        for g, (x, y) in enumerate(zip(got, want)):
            diff = x.view(torch.int16) != y.view(torch.int16)
            assert not diff.any(), (f"{config.label} repeat {rep}: group {g} of the launch that reads the previous "
                                    f"launch's output differs from the settled run ({int(diff.sum())} of {x.numel()} "
                                    f"values): it read {operand.upper()} before the previous grid's writes were "
                                    f"visible")
