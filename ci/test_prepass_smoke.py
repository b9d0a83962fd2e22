"""ci.prepass_smoke's verdict, on the CPU: bit-identity for a build that sums every tile in one
chain, the oracle's bound for one that declares a K split (schedule="split_last"), whose cut
tiles add their halves in another order than the uncut reference."""

import torch

import oracle
from ci.prepass_smoke import _mismatch
from kernel.hopper.launch import constraints
from kernel.hopper.variants import SPLIT_WARP_CONFIG, WIDE_Y_CONFIG

SIZES = [(40, 256, 512, 1), (7, 128, 1024, 1)]


def _outputs():
    data = oracle.make_inputs(SIZES, 5, device="cpu")
    return data, [c.clone() for c in oracle.reference(data)]


def test_a_build_without_a_k_split_must_be_bit_identical():
    contract = constraints(SPLIT_WARP_CONFIG, device_type="cpu")
    assert contract.k_split is None
    data, want = _outputs()
    assert _mismatch(torch, oracle, "same", [w.clone() for w in want], want, [data], contract) == 0
    off = [w.clone() for w in want]
    off[0].view(torch.int16)[0, 0, 0] += 1  # one fp16 ulp: within any bound, not bit-identical
    assert _mismatch(torch, oracle, "one ulp", off, want, [data], contract) == 1


def test_a_split_build_is_held_to_the_bound_of_its_k_split():
    contract = constraints(WIDE_Y_CONFIG, device_type="cpu")
    assert contract.k_split == WIDE_Y_CONFIG.tile_k
    data, want = _outputs()
    other, other_want = oracle.make_inputs(SIZES, 6, device="cpu"), None
    other_want = [c.clone() for c in oracle.reference(other)]
    # the reference itself, for two problems at once (sliced per problem): within the bound
    assert _mismatch(torch, oracle, "two problems", want + other_want, want + other_want, [data, other], contract) == 0
    # a value moved by half its allowed error (a different summation order may do that): accepted
    bound = oracle.expected_outputs(data, contract.accumulation_chunk, contract.k_split)[0].bound
    g = (bound[..., 0] > 0).nonzero()[0]
    moved = [w.clone() for w in want]
    moved[0][g[0], g[1], 0] += (bound[g[0], g[1], 0] / 2).to(moved[0].dtype)
    assert not torch.equal(moved[0], want[0])
    assert _mismatch(torch, oracle, "moved", moved + other_want, want + other_want, [data, other], contract) == 0
    wrong = [w.clone() for w in other_want]
    wrong[1][3, 5, 0] = wrong[1][3, 5, 0] + 100.0 * (1 + wrong[1][3, 5, 0].abs())
    assert _mismatch(torch, oracle, "off", want + wrong, want + other_want, [data, other], contract) == 1
