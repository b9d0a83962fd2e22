"""One test per class of bad input: a typed error naming the group, the tensor and the rule."""

from __future__ import annotations

import pytest
import torch

import oracle
from kernel.errors import InvalidProblemError
from kernel.validation import KernelConstraints, validate_problem

CPU = KernelConstraints(k_granularity=64, max_groups=4, device_type="cpu")
SIZES = [(100, 70, 128, 1), (33, 129, 256, 1)]


def _data(sizes=SIZES, seed=0):
    return oracle.make_inputs(sizes, seed, device="cpu")


def _with(data, group, **tensors):
    abc, sfs, sfs_r, sizes = data
    abc, sfs, sfs_r = list(abc), list(sfs), list(sfs_r)
    a, b, c = abc[group]
    sfa, sfb = sfs[group]
    abc[group] = (tensors.get("a", a), tensors.get("b", b), tensors.get("c", c))
    sfs[group] = (tensors.get("sfa", sfa), tensors.get("sfb", sfb))
    return abc, sfs, sfs_r, sizes


def _raises(data, rule, group=None, tensor=None, constraints=CPU):
    with pytest.raises(InvalidProblemError) as info:
        validate_problem(data, constraints)
    err = info.value
    assert err.rule == rule, str(err)
    assert err.group == group, str(err)
    assert err.tensor == tensor, str(err)
    if group is not None:
        assert f"group {group}" in str(err)
    if tensor is not None:
        assert f"tensor {tensor}" in str(err)
    return err


def test_valid_problem_passes():
    groups = validate_problem(_data(), CPU)
    assert [g.size for g in groups] == SIZES


def test_wrong_dtype():
    data = _data()
    err = _raises(_with(data, 1, b=data[0][1][1].view(torch.uint8)), "dtype", 1, "b")
    assert "float4_e2m1fn_x2" in str(err)


def test_wrong_shape():
    data = _data()
    sfa = torch.zeros(100, 7, 1, dtype=torch.float8_e4m3fn)
    err = _raises(_with(data, 0, sfa=sfa), "shape", 0, "sfa")
    assert "[100, 8, 1]" in str(err)


def test_wrong_rank():
    data = _data()
    err = _raises(_with(data, 0, c=data[0][0][2][:, :, 0]), "shape", 0, "c")
    assert "expected shape [100, 70, 1], got [100, 70]" in str(err)


def test_l_not_one():
    abc, sfs, sfs_r, sizes = _data()
    err = _raises((abc, sfs, sfs_r, [sizes[0], (33, 129, 256, 2)]), "l_is_one", 1, "problem_sizes")
    assert "l must be 1, got 2" in str(err)


def test_k_not_multiple_of_granularity():
    data = _data([(16, 16, 96, 1)])
    err = _raises(data, "k_granularity", 0, "problem_sizes")
    assert "multiple of 64" in str(err)


def test_misaligned_pointer():
    data = _data()
    a = data[0][0][0]
    raw = torch.zeros(a.numel() + 16, dtype=torch.uint8)[8 : 8 + a.numel()]
    err = _raises(_with(data, 0, a=raw.view(a.shape).view(torch.float4_e2m1fn_x2)), "alignment", 0, "a")
    assert "16-byte" in str(err)


def test_non_contiguous_view():
    data = _data()
    c = torch.empty(70, 100, 1, dtype=torch.float16).permute(1, 0, 2)
    err = _raises(_with(data, 0, c=c), "strides", 0, "c")
    assert "K-major" in str(err) or "strides" in str(err)


def test_wrong_device():
    data = _data()
    err = _raises(_with(data, 1, a=data[0][1][0].to("meta")), "device", 1, "a")
    assert "expected a cpu tensor, got meta" in str(err)


def test_empty_group_list():
    err = _raises(([], [], [], []), "no_groups", None, "problem_sizes")
    assert "no groups" in str(err)


def test_empty_groups_are_accepted():
    groups = validate_problem(_data([(0, 64, 64, 1), (64, 0, 64, 1), (1, 1, 64, 1)]), CPU)
    assert [g.c.numel() for g in groups] == [0, 0, 1]


def test_output_overlapping_an_input():
    data = _data()
    a = data[0][0][0]
    c_bytes = 100 * 70 * 2
    buf = torch.zeros(max(a.numel(), c_bytes), dtype=torch.uint8)
    new_a = buf[: a.numel()].view(a.shape).view(torch.float4_e2m1fn_x2)
    new_c = buf[:c_bytes].view(torch.float16).view(100, 70, 1)
    err = _raises(_with(data, 0, a=new_a, c=new_c), "aliasing", 0, "c")
    assert "input a of group 0" in str(err)


def test_outputs_overlapping_each_other():
    data = _data([(40, 40, 64, 1), (40, 40, 64, 1)])
    err = _raises(_with(data, 1, c=data[0][0][2]), "aliasing", 1, "c")
    assert "overlaps the output of group 0" in str(err)


def test_inputs_may_alias_each_other():
    data = oracle.make_inputs([(40, 40, 64, 1), (40, 50, 64, 1)], 0, device="cpu", layout="shared_a")
    assert data[0][0][0].data_ptr() == data[0][1][0].data_ptr()
    validate_problem(data, CPU)


def test_too_many_groups():
    data = _data([(1, 1, 64, 1)] * 5)
    err = _raises(data, "too_many_groups", None, "problem_sizes")
    assert "at most 4" in str(err)


def test_sizes_must_be_ints():
    abc, sfs, sfs_r, sizes = _data()
    err = _raises((abc, sfs, sfs_r, [sizes[0], (33.0, 129, 256, 1)]), "size_format", 1, "problem_sizes")
    assert "4 ints (m, n, k, l)" in str(err)


def test_negative_size():
    abc, sfs, sfs_r, sizes = _data()
    err = _raises((abc, sfs, sfs_r, [sizes[0], (33, -1, 256, 1)]), "negative_size", 1, "problem_sizes")
    assert "m and n must be >= 0, got m=33 n=-1" in str(err)


def test_k_zero():
    abc, sfs, sfs_r, sizes = _data()
    err = _raises((abc, sfs, sfs_r, [(100, 70, 0, 1), sizes[1]]), "k_granularity", 0, "problem_sizes")
    assert "k=0 must be a positive multiple of 64" in str(err)


def test_dimension_too_large():
    small = KernelConstraints(k_granularity=64, max_groups=4, device_type="cpu", max_dim=64)
    err = _raises(_data(), "too_large", 0, "problem_sizes", constraints=small)
    assert "must be <= 64, got (100, 70, 128)" in str(err)


def test_not_a_four_tuple():
    abc, sfs, sfs_r, sizes = _data()
    err = _raises((abc, sfs, sizes), "structure", None, None)
    assert "data must be (abc_tensors" in str(err)


def test_list_lengths_disagree():
    abc, sfs, sfs_r, sizes = _data()
    err = _raises((abc[:1], sfs, sfs_r, sizes), "structure", None, None)
    assert "abc_tensors has 1 entries for 2 problem sizes" in str(err)


def test_not_a_tensor():
    data = _data()
    err = _raises(_with(data, 0, sfb=data[1][0][1].tolist()), "type", 0, "sfb")
    assert "expected a torch.Tensor, got list" in str(err)


def test_cpu_tensors_for_a_cuda_kernel():
    cuda_kernel = KernelConstraints(k_granularity=64, max_groups=4, device_type="cuda")
    err = _raises(_data(), "device", 0, "a", constraints=cuda_kernel)
    assert "expected a cuda tensor, got cpu" in str(err)


def test_blocked_scales_not_in_the_blocked_layout():
    abc, sfs, sfs_r, sizes = _data()
    sfa_r = sfs_r[1][0]
    contiguous = torch.empty(sfa_r.shape, dtype=sfa_r.dtype)  # right shape, row-major strides
    sfs_r = [sfs_r[0], (contiguous, sfs_r[1][1])]
    err = _raises((abc, sfs, sfs_r, sizes), "strides", 1, "sfa_blocked")
    assert "expected strides" in str(err)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_tensors_on_two_devices():
    cuda_kernel = KernelConstraints(k_granularity=64, max_groups=4, device_type="cuda")
    data = oracle.make_inputs(SIZES, 0, device="cuda:0")
    err = _raises(_with(data, 1, b=data[0][1][1].to("cuda:1")), "same_device", 1, "b", constraints=cuda_kernel)
    assert "on cuda:1, other tensors are on cuda:0" in str(err)
