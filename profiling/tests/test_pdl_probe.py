"""profiling.pdl_probe compiles for sm_90a on the CPU in each of its forms, and says so when no
GPU runs it."""

import pytest

pytestmark = pytest.mark.compile


@pytest.mark.parametrize("secondary_smem, carveout, primary_smem", [(0, None, 0), (200000, 100, 4096)])
def test_the_probe_compiles(secondary_smem, carveout, primary_smem):
    from profiling.pdl_probe import build

    assert callable(build(132, 128, 288, secondary_smem, carveout, primary_smem))


def test_without_a_gpu_it_says_so(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the probe would run")
    from profiling.pdl_probe import main

    assert main(["--secondary-smem", "0"]) == 2
    assert "no CUDA device" in capsys.readouterr().err
