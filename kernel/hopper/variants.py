"""The declared Hopper variants: what the main job runs (``PRODUCTION_VARIANTS``) and the
experimental ones a kernel engineer compares against them (``EXPERIMENTAL_VARIANTS``).

Each experimental variant is production or the simplest tile moved along one or two axes (stages,
consumer warpgroups, tile shape, loader, dequant, warp roles, epilogue, wgmma groups
in flight, phase 1's split search), so a comparison measures one lever. Every declared variant is
compiled by the CPU tests (kernel/tests/test_hopper_compile.py) and the static report.
"""

from __future__ import annotations

import json
from dataclasses import fields, replace

from kernel.hopper.config import HopperConfig, check_config

# The simplest pipeline (cp.async loads, shift decode, one consumer warpgroup; the mutant
# catalog's "default variant"). ``custom_kernel(data)`` without a config does not run it: it runs
# the per-shape choice of kernel.hopper.dispatch, every one of which is a production variant.
DEFAULT_CONFIG = HopperConfig()

# The 2-warpgroup swapped tile with TMA loads and wgmma's A operand decoded into registers
FASTEST_CONFIG = HopperConfig(
    tile_m=128, tile_n=128, tile_k=256, num_ab_stages=4, consumer_warpgroups=2, swapped=True,
    dequant="prmt", loader="tma", x_operand="regs",
)
# ... with C staged through shared memory (epilogue="smem", label "_es"), and with programmatic
# dependent launch (label "_pdl")
FASTEST_STAGED_CONFIG = replace(FASTEST_CONFIG, epilogue="smem")
FASTEST_STAGED_PDL_CONFIG = replace(FASTEST_STAGED_CONFIG, pdl=True)
# bench4's production build: two wgmma groups in flight while the warps decode the next sub-block
# (wgmma_in_flight=2, 4 fp16 Y buffers, one barrier per sub-block; 3 raw stages: 4 with the 4
# buffers leave 16-row epilogue passes)
IN_FLIGHT_CONFIG = replace(FASTEST_STAGED_PDL_CONFIG, fp16_buffers=4, wgmma_in_flight=2, num_ab_stages=3)
# The prepass build: Y decoded once per call into a global fp16 workspace (phase 1, staged
# stores), then TMA-loaded as fp16 64-K boxes into an 8-buffer ring; mixed 128/64-row Y tiles on
# the cost-balanced schedule, C staged through shared memory. The balanced split searched by one
# lane of the producer warp ...
PHASE1_STAGED_CONFIG = HopperConfig(
    tile_m=128, tile_n=128, tile_k=256, num_ab_stages=4, consumer_warpgroups=2, swapped=True,
    dequant="prmt", loader="tma", x_operand="regs", y_source="prepass", fp16_buffers=8, prepass_chunk=1,
    y_tail64=True, schedule="balanced", epilogue="smem",
)
# ... and by its 32 lanes together (production on bench1-3)
SPLIT_WARP_CONFIG = replace(PHASE1_STAGED_CONFIG, prepass_split_warp=True)
# IN_FLIGHT_CONFIG on 64-row X tiles with one consumer warpgroup: twice the tiles, each with half
# the MMA and half the X decode (Y's decode per tile is the same), for problems of less than half
# a round of 128 x 128 tiles, where SMs would otherwise idle (the leaderboard's test shapes)
FEW_TILES_CONFIG = replace(IN_FLIGHT_CONFIG, tile_n=64, consumer_warpgroups=1)
# The prepass pipeline with a 256-row Y tile (wgmma 64x256: each decoded X fragment feeds twice the
# rows), its 128 accumulators per thread from a producer warpgroup's registers (setmaxnreg), whole
# rounds of contiguous tiles, then the last round's tiles cut in two K halves when they fill at
# most half the grid (schedule="split_last": a dense group of 2320 rows runs 2.5 tile times per CTA
# instead of 3; no 64-row tail tiles, which halve 128-row ones only): half the X decode per FLOP,
# for groups of thousands of rows (dense GEMMs); phase 1 decoded by the consumers and the producer
# warpgroup's three other warps, eight items per thread in flight (one chunk per CTA on a dense group)
WIDE_Y_CONFIG = HopperConfig(
    tile_m=256, tile_n=128, tile_k=256, num_ab_stages=3, consumer_warpgroups=2, swapped=True,
    dequant="prmt", loader="tma", x_operand="regs", y_source="prepass", fp16_buffers=4, prepass_chunk=1,
    epilogue="smem", producer_warpgroup=True, phase1_helpers=True, prepass_batch=8, schedule="split_last",
)

# ... with phase 1 run beside the tiles: the producer warpgroup's three helper warps alone decode
# it (two items per thread in flight, 72 registers for them and 216 for each consumer thread)
# while the consumers run their tiles, each K stage waiting for its own chunks, no completion
# barrier. The dense groups' build
WIDE_BESIDE_CONFIG = replace(WIDE_Y_CONFIG, phase1_beside=True, prepass_batch=2)

# ... on Y tiles of 240 rows (wgmma 64x240), for groups whose M splits into as many 240-row blocks
# as 256-row ones (dispatch.y_fit): a group of 2320 rows runs ten blocks with 80 padded rows
# instead of ten with 240
WIDE_BESIDE_240_CONFIG = replace(WIDE_BESIDE_CONFIG, tile_m=240)

# ... whose producer stops acquiring chunk flags once it reads every chunk counted in the
# workspace's DONE word (chunk_done_skip: one fence.acq_rel, then no L2 round trip per K stage)
WIDE_BESIDE_240_DONE_CONFIG = replace(WIDE_BESIDE_240_CONFIG, chunk_done_skip=True)

# What the main job runs by default (kernel.hopper.dispatch picks among them per shape).
PRODUCTION_VARIANTS: tuple[HopperConfig, ...] = (
    DEFAULT_CONFIG,
    IN_FLIGHT_CONFIG,
    SPLIT_WARP_CONFIG,
    FEW_TILES_CONFIG,
    WIDE_BESIDE_CONFIG,
    WIDE_BESIDE_240_CONFIG,
)

# Local memory a declared variant may use (bytes of spill stores, why); every other variant uses
# none. kernel/tests/test_hopper_compile.py holds each to its figure and checks that no spill
# store or load sits between the kernel's first and last wgmma (none in the K loop).
SPILL_ALLOWANCE: dict[str, tuple[int, str]] = {
    IN_FLIGHT_CONFIG.label: (12, "three epilogue values held across the tile's K loop at the 168-register cap with "
                                 "three X fragments live: stored before the K loop, loaded after its last wgmma"),
}

EXPERIMENTAL_VARIANTS: tuple[HopperConfig, ...] = (
    # the 64-row swapped tile (small per-group M)
    HopperConfig(tile_m=64, tile_n=128, swapped=True, num_ab_stages=4),
    # DEFAULT_CONFIG swapped with 2 consumer warpgroups
    HopperConfig(tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=3),
    # dequant: DEFAULT_CONFIG with the byte-permute decode
    HopperConfig(dequant="prmt"),
    # loader: the prmt tile with TMA loads (X still dequantized into shared memory)
    HopperConfig(num_ab_stages=4, dequant="prmt", loader="tma"),
    # X in registers, C stored straight from the accumulators
    FASTEST_CONFIG,
    # epilogue: the same with C staged through shared memory
    FASTEST_STAGED_CONFIG,
    # wgmma groups in flight: IN_FLIGHT_CONFIG with one group (2 fp16 buffers, 4 stages)
    FASTEST_STAGED_PDL_CONFIG,
    # warp roles: Y decoded by a dequant warpgroup of its own into a 4-buffer ring
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", roles="split", dequant_warpgroups=1, fp16_buffers=4,
    ),
    # phase 1: SPLIT_WARP_CONFIG with the balanced split searched by one lane
    PHASE1_STAGED_CONFIG,
    # phase 1 before the tiles: WIDE_BESIDE_CONFIG's twin with phase 1 decoded by every warp
    # behind a grid-wide completion barrier (eight items per thread in flight)
    WIDE_Y_CONFIG,
    # the chunk-flag acquires: WIDE_BESIDE_240_CONFIG with the done-count skip
    WIDE_BESIDE_240_DONE_CONFIG,
)
DECLARED_VARIANTS: tuple[HopperConfig, ...] = PRODUCTION_VARIANTS + EXPERIMENTAL_VARIANTS

STATIC_MATRIX: tuple[HopperConfig, ...] = DECLARED_VARIANTS


def named_configs() -> dict[str, HopperConfig]:
    """Label -> config of every declared variant."""
    return {c.label: c for c in DECLARED_VARIANTS}


def _field_value(base: HopperConfig, name: str, text: str, spec: str):
    """``text`` as the type of ``base``'s field ``name`` (int, bool or str)."""
    current = getattr(base, name)
    if isinstance(current, bool):
        if text.lower() in ("true", "1"):
            return True
        if text.lower() in ("false", "0"):
            return False
        raise ValueError(f"{spec!r}: {name} takes true or false, got {text!r}")
    if isinstance(current, int):
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{spec!r}: {name} takes an integer, got {text!r}") from None
    return text


def resolve_config(spec: str) -> HopperConfig:
    """The config a command line names: a declared label; ``LABEL:field=value[,field=value...]``,
    that variant with some fields changed (``h90_m256n128k256_s3_..._pwg:num_ab_stages=4,fp16_buffers=3``:
    a pipeline-stage variant to time beside it without declaring it); or every field as JSON
    (``{"tile_m": 128, ...}``). The result is checked (config_problems): an unknown label or field,
    a value of the wrong type, or a config the kernel cannot build raises ValueError naming it."""
    if spec.startswith("{"):
        try:
            config = HopperConfig(**json.loads(spec))
        except TypeError as exc:  # a key that is not a field
            raise ValueError(f"{spec!r}: {exc}") from None
    else:
        label, _, changes = spec.partition(":")
        declared = named_configs()
        if label not in declared:
            raise ValueError(f"unknown variant {label!r}; declared Hopper variants: {', '.join(declared)}")
        config = declared[label]
        names = {f.name for f in fields(HopperConfig)}
        edits = {}
        for item in filter(None, changes.split(",")):
            name, eq, text = item.partition("=")
            name = name.strip()
            if not eq or name not in names:
                raise ValueError(f"{spec!r}: {item!r} is not FIELD=VALUE with a HopperConfig field "
                                 f"({', '.join(sorted(names))})")
            edits[name] = _field_value(config, name, text.strip(), spec)
        config = replace(config, **edits)
    check_config(config)
    return config
