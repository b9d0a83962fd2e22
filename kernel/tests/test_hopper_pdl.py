"""Programmatic dependent launch (``HopperConfig.pdl``) in the compiled sm_90a code.

A ``pdl`` build may start while the previous kernel on its stream still runs, so nothing may
touch global memory before ``griddepcontrol.wait`` (SASS ``ACQBULK``): not the group tables, not
the operands, not C, not the workspace and its counters. The CPU compile checks that order for
every declared ``pdl`` build against its twin without ``pdl`` (which must have neither
instruction). The GPU side (a launch that reads the previous launch's output) is
``test_gpu_pdl.py``.
"""

from __future__ import annotations

import dataclasses

import pytest

from kernel.hopper import STATIC_MATRIX
from kernel.hopper.variants import SPLIT_WARP_CONFIG

pytestmark = pytest.mark.compile

# every declared pdl build, and the prepass build with pdl (undeclared)
PDL_CONFIGS = [c for c in STATIC_MATRIX if c.pdl] + [dataclasses.replace(SPLIT_WARP_CONFIG, pdl=True)]
# every instruction that reads or writes global memory, or starts a copy that does
GLOBAL = ("LDG", "STG", "ATOMG", "ATOM.", "REDG", "RED.", "LDGSTS", "UTMALDG", "UTMASTG", "UTMAPF", "UBLKCP", "UBLKRED", "CCTL")


def _ops(config, static_builds):
    return [i.opcode for i in static_builds.code(config, 8)]


def test_there_are_pdl_builds_to_check():
    assert len(PDL_CONFIGS) >= 2 and any(c.y_source == "prepass" for c in PDL_CONFIGS)


@pytest.mark.parametrize("config", PDL_CONFIGS, ids=[c.label for c in PDL_CONFIGS])
def test_pdl_sass_wait_first(config, static_builds):
    ops = _ops(config, static_builds)
    waits = [n for n, o in enumerate(ops) if o.startswith("ACQBULK")]
    triggers = [n for n, o in enumerate(ops) if o.startswith("PREEXIT")]
    assert len(waits) == 1 and len(triggers) == 1, (waits, triggers)
    early = [o for o in ops[:waits[0]] if o.startswith(GLOBAL)]
    assert not early, f"global accesses before griddepcontrol.wait: {early}"
    assert any(o.startswith(GLOBAL) for o in ops[waits[0]:])
    twin = dataclasses.replace(config, pdl=False)
    plain = _ops(twin, static_builds)
    assert not any(o.startswith(("ACQBULK", "PREEXIT")) for o in plain)
