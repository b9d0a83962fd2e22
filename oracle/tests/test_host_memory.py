"""Host-only plain scales: what works on the leaderboard works, what fails there raises."""

from __future__ import annotations

import pytest
import torch

from oracle.host_memory import HostMemoryRead, HostOnlyTensor, host_only, plain


@pytest.fixture
def scales():
    return host_only(torch.arange(1, 25, dtype=torch.float32).view(4, 6, 1))


def test_metadata_views_and_host_arithmetic_stay_host_memory(scales):
    assert scales.shape == (4, 6, 1) and scales.dtype == torch.float32 and scales.stride() == (6, 1, 1)
    assert scales.device.type == "cpu" and scales.data_ptr() != 0
    for derived in (scales.reshape(4, 6), scales[:, :3], scales.to(torch.float16), scales * 2, scales.cpu()):
        assert isinstance(derived, HostOnlyTensor)
    assert scales.tolist()[0][0] == [1.0] and scales.numpy().shape == (4, 6, 1)


@pytest.mark.parametrize("op", [
    lambda s, d: d * s.reshape(4, 6),
    lambda s, d: torch.matmul(d, s.reshape(4, 6).T),
    lambda s, d: torch.cat([d, s.reshape(4, 6)]),
    lambda s, d: s.reshape(4, 6) + d,
])
def test_combining_with_a_device_tensor_raises(scales, op):
    with pytest.raises(HostMemoryRead, match="host memory"):
        op(scales, torch.ones(4, 6))


def test_copies_to_a_device_give_ordinary_tensors(scales):
    device_tensor = torch.ones(4, 6)
    for moved in (scales.to(device_tensor.device), scales.to(device_tensor), scales.to("cpu", torch.float16)):
        assert type(moved) is torch.Tensor
        assert float((moved.reshape(4, 6).float() * device_tensor).sum()) == 300.0
    target = torch.zeros(4, 6, 1)
    target.copy_(scales)
    target[0] = scales[1]
    assert type(target) is torch.Tensor and float(target[0, 0, 0]) == 7.0


def test_plain_views_the_same_memory(scales):
    view = plain(scales)
    assert type(view) is torch.Tensor and view.data_ptr() == scales.data_ptr()
    with pytest.raises(ValueError):
        host_only(torch.ones(1, device="meta"))
