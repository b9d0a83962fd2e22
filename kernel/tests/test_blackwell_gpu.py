"""The Blackwell kernel against the exact oracle, on a B200 (sm_100). Skipped anywhere else.

Each case: outputs poisoned with NaN before the launch (make_inputs does it), C packed into one
buffer with 0xFF gaps (``packed_c``) whose bytes must survive (no write outside any C), checked
against the oracle's per-element bound, then rerun for bitwise determinism.
Reproduce one case: ``pytest kernel/tests/test_blackwell_gpu.py -k '<test id>'``.
"""

import pytest
import torch

import kernel.blackwell as bw

_REASON = bw.unavailable_reason()
pytestmark = [
    pytest.mark.sm100,
    pytest.mark.gpu,
    pytest.mark.skipif(_REASON is not None, reason=_REASON or ""),
]

CASES = {
    # name: problem sizes (m, n, k, 1)
    "bench3": [(192, 3072, 4096, 1), (320, 3072, 4096, 1)],
    "bench4": [(128, 4096, 1536, 1), (384, 4096, 1536, 1)],
    "ragged": [(40, 136, 256, 1), (129, 255, 512, 1), (1, 1, 256, 1)],
    "n_not_8": [(200, 130, 768, 1), (64, 7, 256, 1)],  # rows not 16-byte aligned: scalar stores
    "many_groups": [(8 * g + 1, 64 + 24 * g, 256 * (1 + g % 3), 1) for g in range(11)],
    "one_tile": [(128, 128, 256, 1)],
}


def _c_gap_bytes(data):
    """(buffer, mask of bytes no C covers) for the packed C buffer."""
    cs = [c for _, _, c in data[0]]
    storage = cs[0].untyped_storage()
    whole = torch.empty(0, dtype=torch.uint8, device=cs[0].device).set_(storage)
    covered = torch.zeros(whole.numel(), dtype=torch.bool, device=whole.device)
    for c in cs:
        start = c.storage_offset() * c.element_size()
        covered[start : start + c.numel() * c.element_size()] = True
    return whole, ~covered


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("config", bw.DECLARED_VARIANTS, ids=lambda c: c.label)
def test_kernel_matches_oracle(config, case, seed):
    from oracle.compare import check_outputs
    from oracle.inputs import make_inputs

    data = make_inputs(CASES[case], seed=seed, device="cuda", layout="packed_c")
    whole, gaps = _c_gap_bytes(data)
    gap_before = whole[gaps].clone()
    outputs = bw.custom_kernel(data, config)
    torch.cuda.synchronize()
    assert all(o is c for o, (_, _, c) in zip(outputs, data[0])), "outputs must be the callers' c, in order"
    report = check_outputs(data, outputs)
    assert report.ok, f"{config.label} {case} seed={seed}: {report}"
    assert torch.equal(whole[gaps], gap_before), f"{config.label} {case} seed={seed}: wrote outside C"
    first = [o.clone() for o in outputs]
    for o in outputs:
        o.fill_(float("nan"))
    bw.custom_kernel(data, config)
    torch.cuda.synchronize()
    for g, (a, b) in enumerate(zip(first, outputs)):
        assert torch.equal(a.view(torch.int16), b.view(torch.int16)), f"group {g} differs between runs"
