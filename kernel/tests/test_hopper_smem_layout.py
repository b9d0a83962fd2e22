"""The shared memory the Hopper kernel allocates is what its config accounts for.

``config.smem_bytes`` decides which configs are valid (227 KiB per block); the kernel allocates
its own ``cute.struct``. If the two drift apart, a config that passes ``check_config`` fails at
launch ("launch shared memory exceeds ...": it happened once, when ``x_operand="regs"`` stopped
counting the fp16 X buffers the kernel still allocated). No GPU needed: the struct's size is
known when the kernel object is built.
"""

import os

import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from kernel.hopper.config import SMEM_ALIGN, SMEM_CAPACITY_BYTES, HopperConfig, smem_bytes
from kernel.hopper.variants import DECLARED_VARIANTS

EXTRA = (
    HopperConfig(swapped=True, consumer_warpgroups=2, num_ab_stages=5, dequant="prmt", loader="tma", x_operand="regs"),
    HopperConfig(swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma", x_operand="regs",
                 roles="split", dequant_warpgroups=1, fp16_buffers=3),
)


@pytest.mark.parametrize("config", DECLARED_VARIANTS + EXTRA, ids=lambda c: c.label)
def test_allocation_matches_the_accounting(config):
    from kernel.hopper.kernel import HopperNvfp4GroupedGemm

    regions = smem_bytes(config)
    accounted = regions["total"]
    allocated = HopperNvfp4GroupedGemm(config, 8).shared_storage.size_in_bytes()
    assert allocated <= accounted <= SMEM_CAPACITY_BYTES
    # the accounting adds worst-case alignment padding, nothing more (one SMEM_ALIGN more with the
    # phase-1 helpers' staging region)
    slack = 3 + ("phase1_staging" in regions)
    assert accounted - allocated < slack * SMEM_ALIGN, (allocated, accounted)
