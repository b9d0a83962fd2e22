"""A Hopper variant with its accumulation order declared, as a file subject (``--subject=PATH``).

The Hopper kernel updates each fp32 accumulator once per wgmma of K = 16 (its order inside one
instruction is unspecified), so it may declare ``accumulation_chunk=16`` and be held to the
tight bound of oracle/bounds.py. Until kernel/hopper declares it in its own ``constraints()``,
this wrapper does, for the H200 checks (ci/bound_check.py, and the property suite)::

    python3 -m pytest properties/test_subject_vs_oracle.py --subject=properties/hopper_declared_order.py \\
        -k "test_subject_matches_oracle and not per_distribution" --hypothesis-profile=ci

``NVFP4_HOPPER_VARIANT=LABEL`` picks the variant (default: the family's DEFAULT_CONFIG).
"""

from __future__ import annotations

import dataclasses
import functools
import os

import kernel.hopper as hopper
from properties.subjects import GPU_LIMITS

WGMMA_K = 16
_LABEL = os.environ.get("NVFP4_HOPPER_VARIANT", hopper.DEFAULT_CONFIG.label)
CONFIG = next((c for c in hopper.DECLARED_VARIANTS if c.label == _LABEL), None)
if CONFIG is None:
    raise ValueError(f"NVFP4_HOPPER_VARIANT={_LABEL!r} is not a declared Hopper variant")
CONSTRAINTS = dataclasses.replace(hopper.constraints(CONFIG), accumulation_chunk=WGMMA_K)
LIMITS = GPU_LIMITS
custom_kernel = functools.partial(hopper.custom_kernel, config=CONFIG)
