"""Configuration of the Hopper (sm_90a) NVFP4 grouped GEMM: one frozen, hashable dataclass, its
validity rules (``config_problems``) and its shared-memory and register budgets.

Pure Python (no CuTe DSL import): the rules and the byte arithmetic are testable on any machine.
The declared variants are in kernel/hopper/variants.py.

Geometry vocabulary:

* the *tile* is over C: ``tile_m`` rows of M by ``tile_n`` columns of N (what the plan counts);
* wgmma sees an ``mma_m x mma_n`` tile: unswapped ``(tile_m, tile_n)``; swapped (C^T = B A^T,
  for small per-group M) ``(tile_n, tile_m)``, so the large N fills wgmma's M side;
* operand X (wgmma's A, ``mma_m`` rows) and operand Y (wgmma's B, ``mma_n`` rows) are the
  problem's A and B, or B and A when swapped;
* one pipeline stage holds ``tile_k`` K elements of packed FP4 rows and their scale blocks; it
  is dequantized in sub-blocks of 64 K (one 128-byte swizzle atom of fp16) into ``fp16_buffers``
  operand buffers that wgmma reads from shared memory, except X when ``x_operand="regs"`` (each
  consumer thread decodes its wgmma A fragment into registers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kernel.errors import UnsupportedConfigError

DequantDtype = Literal["fp16"]
# "balanced": with y_tail64 only (kernel.plan: full tiles and light 64-row tiles split by cost)
Schedule = Literal["contiguous", "strided", "balanced", "split_last"]
# How the producer warp moves packed FP4 rows and scale blocks into a stage:
#   "cp_async":  16-byte cp.async per lane (LDGSTS), completion through cp.async.mbarrier.arrive;
#   (one cp.async.bulk per operand row was measured slower on every shape: docs/results.md, rows 10, D16)
#   "tma":       one 2-D TMA box per operand (per-group tensor maps, kernel.tensor_maps) and one
#                cp.async.bulk per scale block, from one thread; rows land 128-byte swizzled.
Loader = Literal["cp_async", "tma"]
# How the consumers turn packed FP4 + E4M3 scales into fp16 operands (kernel/hopper/ptx.py):
#   "shift": one inline-asm block per 32-K unit, per fp16 pair two shifts + two masks + mul;
#   "prmt":  byte-permute decode (sign/magnitude spread once per word, one prmt per pair) and
#            one inline-asm block per sub-block that issues all its shared loads first.
Dequant = Literal["shift", "prmt"]
# Who dequantizes and who multiplies:
#   "cooperative": the consumer warpgroups do both, in turn, per 64-K sub-block (two named
#                  barriers per sub-block, two fp16 buffers);
#   "split":       ``dequant_warpgroups`` warpgroups only dequantize Y, into a ring of
#                  ``fp16_buffers`` fp16 sub-block buffers with full/empty mbarriers, and the
#                  ``consumer_warpgroups`` decode X into registers, issue wgmma and store C.
Roles = Literal["cooperative", "split"]
# Where wgmma's A operand (X) comes from: "smem" (dequantized into a swizzled fp16 buffer like Y)
# or "regs": each consumer thread decodes its own wgmma A fragment from the raw stage straight
# into registers (no fp16 store or wgmma read of X in shared memory); the K order inside each
# 64-K sub-block follows the fragment (kernel/hopper/ptx.py, rs_physical_k), for both operands.
XOperand = Literal["smem", "regs"]
# Where wgmma's B operand (Y) comes from:
#   "smem_decode": the raw FP4 rows and scales are loaded per stage and decoded into the fp16
#                  ring in shared memory;
#   "prepass":     the same persistent launch first decodes every group's Y rows ONCE into a
#                  global fp16 workspace (phase 1: grid-stride chunks sized at run time, each
#                  thread's item loads issued together, the decoded items staged in shared
#                  memory and stored as whole 128-byte runs, then a grid-wide completion
#                  barrier), and the tile loop TMA-loads Y as fp16 64-K boxes into a ring of
#                  ``fp16_buffers`` buffers (its own full/empty mbarriers); the raw stage holds X
#                  and its scales only, and the producer issues its first tile's X stages before
#                  it waits at the barrier. Swapped tiles with X in registers only.
YSource = Literal["smem_decode", "prepass"]
# How the consumer warpgroups write C:
#   "direct": predicated scalar 2-byte fp16 stores straight from the wgmma accumulators
#             (swapped, a warp's store touches ~32 rows of C);
#   "smem":   staged through shared memory (kernel/hopper/staging.py states the layout): each
#             consumer warpgroup converts its accumulators (its 64 columns of C, swapped) to fp16
#             and writes them with ``stmatrix.trans`` into its own staging buffer laid out as C
#             (rows of 64 fp16, 16-byte chunks XOR-swizzled by row), syncs its 128 threads on its
#             own named barrier, then stores C with one coalesced 16-byte store per thread and
#             row chunk (8 fp16; 2-byte stores where n is not a multiple of 8). The buffer holds
#             ``epilogue_stage_rows`` rows of C (the whole tile where shared memory allows, else
#             half of it, in two passes; a pass past the tile's last row of C is skipped)
Epilogue = Literal["direct", "smem"]

SMEM_CAPACITY_BYTES = 232448  # sm_90: 227 KiB of dynamic shared memory per block
SMEM_ALIGN = 1024  # swizzle-128 operand buffers need 1024-byte alignment
DEQUANT_SUB_K = 64  # K elements per dequantized sub-block (one SW128 atom of fp16)
NUM_DEQUANT_BUFFERS = 2  # the cooperative roles' ping-pong pair
RAW_ROW_PAD_BYTES = 16  # pad each packed FP4 row in smem so 8 rows hit 8 different bank groups
SF_BLOCK_ROWS = 128  # the blocked scale layout packs 128 rows x 4 scale columns per 512 bytes
MAX_ACC_REGS_PER_THREAD = 128
REGISTER_FILE = 65536  # 32-bit registers per SM (one CTA per SM)
MAX_REGS_PER_THREAD = 255
SM_SUBPARTITION_REGISTERS = 16384
# registers the wgmma warps need besides their accumulators (descriptors, tile geometry,
# epilogue addressing); the compile of every declared variant checks 0 spills
MMA_OVERHEAD_REGS = 24
# x_operand="regs": one decoded wgmma A fragment (64 x 64 fp16 over a warpgroup's 128 threads);
# one is live per wgmma group in flight, and the next sub-block's is decoded beside them. (The
# prepass pipeline's 256-row Y tile at 288 threads: 128 accumulators + 24 + 2 x 16 = 184 against
# 168; ptxas spilled 32 instructions in its K loop, docs/results.md row D9)
X_FRAGMENT_REGS = 16
# y_source="prepass": phase 1's items per thread per chunk at most (all loaded before any is
# decoded), the smallest chunk (items) the run-time choice may take, and the choices of
# ``prepass_chunk``
PREPASS_BATCH = 4
# y_source="prepass" only: Y tile heights (tile_m, swapped: wgmma N) besides 64, 128 and 256. A
# group of M rows runs ceil(M / tile_m) Y blocks, so a height that splits M evenly wastes fewer
# wgmma columns on its last block (M = 2320: ten blocks of 240 rows pad 80 rows, ten of 256 pad
# 240). Multiples of 16: the staged epilogue's step, two 8-row swizzle atoms of the Y box
WIDE_Y_HEIGHTS = (192, 208, 224, 240)
PREPASS_BATCHES = (1, 2, 4, 8)  # the choices of HopperConfig.prepass_batch
PREPASS_STAGED_WARP_BYTES = 32 * 128  # phase 1's staged stores: one 128-byte item slot per lane
PREPASS_MIN_CHUNK = 32
PREPASS_CHUNK_SPLITS = (1, 2, 4)
# X stages of the first tile the producer warp issues before phase 1's completion barrier (while
# the consumer warps decode): one; each more one's loads queue ahead of phase 1's own
# (docs/results.md, row D8: 2 and 4 measured slower)
PREPASS_EARLY_X_STAGES = 1
MBARRIER_BYTES = 8  # one mbarrier object in shared memory
# epilogue="smem": named barrier 4 + w syncs consumer warpgroup w's 128 threads around its staging
# buffer (0: the CTA-wide barrier, 1: the consumers' Y barrier)
EPILOGUE_BARRIER_ID0 = 4
# y_source="prepass": named barrier 2 syncs phase 1's decoding threads (the consumer warps; the
# producer warp issues its first tile's X stages meanwhile) around each chunk
PHASE1_BARRIER_ID = 2
# schedule="split_last": named barrier 3 syncs the consumer threads around a cut tile's partial
# sums (kernel/hopper/split.py)
SPLIT_BARRIER_ID = 3
# epilogue="smem": columns of C per consumer warpgroup (its 64-row wgmma M slice, swapped), so a
# staging row is 128 bytes: eight 16-byte chunks
EPILOGUE_WG_COLS = 64
# producer_warpgroup: the registers per thread setmaxnreg leaves the producer warpgroup and gives
# the two consumer warpgroups (4 x 32 x 40 + 8 x 32 x 232 = 64512 of the SM's 65536)
PRODUCER_WARPGROUP_REGS = 40
CONSUMER_WARPGROUP_REGS = 232
# ... with phase1_beside, whose three helper warps decode phase 1 beside the tiles under the
# producer warpgroup's registers, by prepass_batch (items per helper thread in flight): (producer
# warpgroup, consumer) registers, each pair the same 64512 in all (4 x 32 x 72 + 8 x 32 x 216).
# One item decodes without spills at 56, two at 72; four spill at 72 (96 bytes) and not at 88
BESIDE_WARPGROUP_REGS = {1: (56, 224), 2: (72, 216), 4: (88, 208)}
# phase1_beside: the helper warps' staged stores get a shared region of their own (the Y ring is
# in use by the tiles meanwhile): PREPASS_STAGED_WARP_BYTES per helper warp
PHASE1_HELPER_WARPS = 3


@dataclass(frozen=True)
class HopperConfig:
    tile_m: int = 128
    tile_n: int = 128
    tile_k: int = 256
    num_ab_stages: int = 3
    consumer_warpgroups: int = 1  # 1: one consumer warpgroup; 2: cooperative on one tile
    producer_warps: int = 1  # warps issuing the cp.async loads (1, 2 or 4; rows split among them)
    load_unroll: int = 1  # unroll factor of each producer warp's row-copy loop
    swapped: bool = False
    dequant_dtype: DequantDtype = "fp16"
    # 0: operands hold the exact dequantized values (two fp16 multiplies per pair);
    # -14: operands hold value * 2^-14 (one multiply), the epilogue multiplies by 2^28. Both exact.
    operand_exp_shift: int = -14
    # kernel.plan: which CTA runs which tiles; "split_last" (y_source="prepass", label suffix
    # "_sk"): contiguous full rounds, the last round's tiles cut in two K halves when they fill at
    # most half the grid (one CTA publishes its fp32 sums through the workspace, the other adds them)
    schedule: Schedule = "contiguous"
    loader: Loader = "cp_async"
    dequant: Dequant = "shift"
    roles: Roles = "cooperative"
    dequant_warpgroups: int = 0  # "split" only: warpgroups that dequantize (1 or 2)
    # fp16 sub-block buffers. "cooperative": 2 (ping-pong, two barriers per sub-block), or 4 with
    # ``wgmma_in_flight=2``; "split": a ring of 2..6; "prepass": the Y ring of 64-K fp16 TMA boxes
    # (2..16), independent of ``num_ab_stages`` (the X ring)
    fp16_buffers: int = NUM_DEQUANT_BUFFERS
    x_operand: XOperand = "smem"
    y_source: YSource = "smem_decode"
    # y_source="prepass" only: phase 1's chunk size, chunk = clamp(ceil(items / (F x grid)),
    # PREPASS_MIN_CHUNK, threads x PREPASS_BATCH) items for F = prepass_chunk, chosen at run time
    # (so a small problem still gives every CTA work), the next chunk claimed while the current
    # one is decoded (one CTA barrier per chunk)
    prepass_chunk: int = 0
    # y_source="prepass" only (label letters "b<n>" after the prepass letters when not
    # PREPASS_BATCH): items each decoding thread loads at once in phase 1 (all loaded before any
    # is decoded), so a chunk holds at most phase1_threads x prepass_batch items
    prepass_batch: int = PREPASS_BATCH
    # producer_warpgroup only (label letter "h" after the prepass letters): the producer
    # warpgroup's three other warps decode phase 1's chunks beside the consumer warps (phase 1 is
    # latency-bound: more warps, more loads in flight); after it they only pass the barriers
    phase1_helpers: bool = False
    # phase1_helpers only (label letter "o" after "h"): phase 1 runs beside the tiles. Only the
    # producer warpgroup's three other warps decode its chunks (their staged stores through a
    # shared region of their own), each chunk published by a release of its own flag in the
    # workspace (kernel.hopper.workspace; items sub-block-major); the consumer warps start their
    # tiles at once, and the producer warp, before each K stage's Y boxes, waits (acquire) for the
    # flags of the chunks that hold them. No completion barrier: a tile waits only for its own
    # boxes' chunks, and the rest of phase 1 overlaps the MMA
    phase1_beside: bool = False
    # phase1_beside only (label letter "d" after "o"): the lead helper also counts each
    # published chunk in the workspace's DONE word (a release add), and the producer warp, which
    # reads that count (relaxed) beside each stage's flag acquires, stops waiting for flags once
    # it reads every chunk counted (then one fence.acq_rel: an acquire of every publish); the last
    # party through resets the count with the flags
    chunk_done_skip: bool = False
    # y_source="prepass" only (label suffix "_t64"): a group's last Y block of at most 64 rows
    # runs as a 64-row tile (wgmma N = 64, the first half of the accumulators; the Y box is still
    # 128 rows: the rows past the group reach only columns never stored), chosen per tile at run
    # time (m - m0 <= 64); with schedule="balanced" (kernel.plan): each CTA runs a cost-balanced
    # share, heavy tiles first
    y_tail64: bool = False
    # y_tail64 only (label letter "w" after the prepass letters): the balanced split is searched
    # by the producer warp's 32 lanes together (kernel.device_schedule.balanced_share_warp:
    # ~150 instructions instead of ~1200 on one lane's path before phase 1's completion barrier;
    # the same split)
    prepass_split_warp: bool = False
    # see Epilogue; label suffix "_es" for "smem"
    epilogue: Epilogue = "direct"
    # label suffix "_pdl": programmatic dependent launch. The grid is launched with the
    # programmatic-stream-serialization attribute, so on a stream where it follows another kernel
    # its CTAs may start while that kernel's last CTAs run; every thread executes
    # griddepcontrol.wait (the previous grid complete, its memory visible) first, before any
    # global access, then griddepcontrol.launch_dependents, so the next launch's dispatch
    # overlaps this one's tail
    pdl: bool = False
    # label suffix "_w2": wgmma groups each consumer warp leaves in flight after issuing a
    # sub-block's group (its wait_group), in the cooperative build that decodes Y into shared
    # memory (y_source="smem_decode", X in registers). 1: the decode of sub-block g + 1 runs while
    # only group g is queued. 2 (with 4 fp16 buffers, one barrier per sub-block): groups g - 1 and
    # g are both queued, so the tensor pipe has two sub-blocks of work while the warps decode the
    # next one; the buffer sub-block g + 1 overwrites was read by group g - 3, which every warp
    # retired before the barrier of sub-block g. X's fragments of three sub-blocks are live at once
    # (SPILL_ALLOWANCE in kernel/hopper/variants.py)
    wgmma_in_flight: int = 1
    # label suffix "_pwg" (y_source="prepass" with 2 consumer warpgroups only): the producer warp
    # sits in a warpgroup of its own (three more warps that only pass the CTA-wide barriers) that
    # hands its registers to the consumers with setmaxnreg: PRODUCER_WARPGROUP_REGS for it,
    # CONSUMER_WARPGROUP_REGS for each consumer thread (a 256-row Y tile's 128 accumulators fit)
    producer_warpgroup: bool = False
    arch: str = "sm_90a"

    # ---- derived geometry -------------------------------------------------------------
    @property
    def mma_m(self) -> int:
        return self.tile_n if self.swapped else self.tile_m

    @property
    def mma_n(self) -> int:
        return self.tile_m if self.swapped else self.tile_n

    @property
    def consumer_threads(self) -> int:
        """Threads of the warpgroups that issue wgmma and hold the accumulators."""
        return 128 * self.consumer_warpgroups

    @property
    def phase1_threads(self) -> int:
        """``y_source="prepass"``: the threads that decode phase 1's chunks, the consumer
        warpgroups (the producer warp issues the first tile's X stages meanwhile), and with
        ``phase1_helpers`` the producer warpgroup's three other warps (with ``phase1_beside``
        those three only)."""
        if self.phase1_beside:
            return 32 * PHASE1_HELPER_WARPS
        return self.consumer_threads + (96 if self.phase1_helpers else 0)

    @property
    def phase1_warps(self) -> tuple[int, ...]:
        """The warps that decode phase 1's chunks (their index in the CTA): the consumer warps,
        and with ``phase1_helpers`` the three after the producer warp."""
        consumers = tuple(range(self.consumer_threads // 32))
        if self.phase1_beside:
            return tuple(range(len(consumers) + 1, len(consumers) + 1 + PHASE1_HELPER_WARPS))
        if self.phase1_helpers:
            return consumers + tuple(range(len(consumers) + 1, len(consumers) + 4))
        return consumers

    @property
    def dequant_threads(self) -> int:
        """Threads that dequantize: the consumers themselves, or the dequant warpgroups."""
        if self.roles == "split":
            return 128 * self.dequant_warpgroups
        return self.consumer_threads

    @property
    def producer_threads(self) -> int:
        """The producer warps' threads (with ``producer_warpgroup``: their whole warpgroup)."""
        return 128 if self.producer_warpgroup else 32 * self.producer_warps

    @property
    def threads(self) -> int:
        dq = self.dequant_threads if self.roles == "split" else 0
        return self.consumer_threads + dq + self.producer_threads

    @property
    def launch_register_cap(self) -> int:
        """Registers per thread ptxas allows one CTA of ``threads`` at launch: the warps spread
        over the SM's four sub-partitions of 16384 registers, and it allocates whole units of 8
        registers. Measured with ptxas for sm_90a: 288 threads -> 168, 416 -> 128
        ("Insufficient registers (128)")."""
        warps = -(-self.threads // 32)
        per_subpartition = -(-warps // 4)
        return min(MAX_REGS_PER_THREAD, SM_SUBPARTITION_REGISTERS // (32 * per_subpartition) // 8 * 8)

    @property
    def y_pairs_sub_blocks(self) -> bool:
        """``roles="split"`` with X in registers: the dequant warpgroups decode two Y sub-blocks
        (two ring buffers) per inline-asm block when one sub-block gives each of their threads
        two or more units (one dequant warpgroup), one at a time otherwise."""
        return (self.roles == "split" and self.x_operand == "regs" and self.dequant_warpgroups > 0
                and 2 * self.mma_n // self.dequant_threads >= 2)

    @property
    def register_cap(self) -> int:
        """Registers per thread the wgmma (consumer) warps may use."""
        if self.producer_warpgroup:
            return self.warpgroup_regs[1]
        return self.launch_register_cap

    @property
    def warpgroup_regs(self) -> tuple[int, int]:
        """``producer_warpgroup``: the registers per thread setmaxnreg leaves the producer warpgroup
        and gives each consumer thread (``BESIDE_WARPGROUP_REGS`` by prepass_batch with
        phase1_beside)."""
        if self.phase1_beside and self.prepass_batch in BESIDE_WARPGROUP_REGS:
            return BESIDE_WARPGROUP_REGS[self.prepass_batch]
        return PRODUCER_WARPGROUP_REGS, CONSUMER_WARPGROUP_REGS

    @property
    def narrow_widths(self) -> tuple[int, ...]:
        """y_tail64: the wgmma N below mma_n a tile may issue (64, the first half of the 128-row
        tile; rounding a tile's rows to 16 instead measured slower: results row D31); every
        other build: none."""
        return (self.mma_n // 2,) if self.y_tail64 else ()

    @property
    def acc_regs_per_thread(self) -> int:
        return self.mma_m * self.mma_n // self.consumer_threads

    @property
    def x_fragment_regs(self) -> int:
        """With X in registers: X_FRAGMENT_REGS per fragment live (wgmma_in_flight + 1); else 0."""
        return X_FRAGMENT_REGS * (self.wgmma_in_flight + 1) if self.x_operand == "regs" else 0

    @property
    def mma_regs_per_thread(self) -> int:
        """Registers a wgmma warp needs: its accumulators, MMA_OVERHEAD_REGS and its X fragments."""
        return self.acc_regs_per_thread + MMA_OVERHEAD_REGS + self.x_fragment_regs

    @property
    def label(self) -> str:
        role = f"wg{self.consumer_warpgroups}"
        if self.roles == "split":
            role += f"_dq{self.dequant_warpgroups}b{self.fp16_buffers}"
        elif self.fp16_buffers != NUM_DEQUANT_BUFFERS:
            role += f"_b{self.fp16_buffers}"
        swap = "_swap" if self.swapped else ""
        shift = "" if self.operand_exp_shift == -14 else f"_x{self.operand_exp_shift}"
        # schedule="balanced" goes with y_tail64 (its "_t64" suffix says both)
        # schedule="split_last" is the "_sk" suffix (last)
        sched = "" if self.schedule in ("contiguous", "balanced", "split_last") else f"_{self.schedule}"
        sched += "" if self.loader == "cp_async" else f"_{self.loader}"
        sched += "" if self.dequant == "shift" else f"_{self.dequant}"
        sched += "" if self.producer_warps == 1 else f"_p{self.producer_warps}"
        sched += "" if self.load_unroll == 1 else f"_u{self.load_unroll}"
        sched += "" if self.x_operand == "smem" else "_rs"
        sched += "" if self.wgmma_in_flight == 1 else f"_w{self.wgmma_in_flight}"
        # the prepass letters: chunked phase 1 ("c<F>"), early X stages ("x"), staged stores ("s")
        sched += f"_prec{self.prepass_chunk}xs" if self.y_source == "prepass" else ""
        sched += "w" if self.prepass_split_warp else ""
        sched += f"b{self.prepass_batch}" if self.y_source == "prepass" and self.prepass_batch != PREPASS_BATCH else ""
        sched += "h" if self.phase1_helpers else ""
        sched += "o" if self.phase1_beside else ""
        sched += "d" if self.chunk_done_skip else ""
        sched += "_t64" if self.y_tail64 else ""
        sched += "_es" if self.epilogue == "smem" else ""
        sched += "_pdl" if self.pdl else ""
        sched += "_pwg" if self.producer_warpgroup else ""
        sched += "_sk" if self.schedule == "split_last" else ""
        return (
            f"h90_m{self.tile_m}n{self.tile_n}k{self.tile_k}_s{self.num_ab_stages}_{role}"
            f"{swap}_{self.dequant_dtype}{shift}{sched}"
        )


# ---- shared-memory byte arithmetic (all plain ints) --------------------------------------
def raw_row_pitch(config: HopperConfig) -> int:
    if config.loader == "tma":
        return config.tile_k // 2  # dense 128-byte rows, conflict-free through the swizzle
    return config.tile_k // 2 + RAW_ROW_PAD_BYTES


def sf_blocks(rows: int) -> int:
    """128-row scale blocks one stage loads for an operand of ``rows`` tile rows. A tile starts
    at a multiple of ``rows``, so 64 rows sit in one block and 192 rows (starting at 0 or 64
    mod 128) span two."""
    return max(1, -(-rows // SF_BLOCK_ROWS))


def sf_block_bytes(config: HopperConfig) -> int:
    """Bytes of one 128-row block of blocked scales covering ``tile_k`` K elements."""
    return config.tile_k // 64 * 512


def raw_y_rows(config: HopperConfig) -> int:
    """Rows of raw (packed FP4) Y a stage holds: none with ``y_source="prepass"`` (Y arrives
    as fp16 from the workspace, in its own ring)."""
    return 0 if config.y_source == "prepass" else config.mma_n


def raw_stage_layout(config: HopperConfig) -> dict[str, int]:
    """Byte offsets inside one raw stage: X rows, Y rows, X scales, Y scales (16-aligned)."""
    pitch = raw_row_pitch(config)
    x_rows = config.mma_m * pitch
    y_rows = raw_y_rows(config) * pitch
    x_sf = sf_blocks(config.mma_m) * sf_block_bytes(config)
    y_sf = sf_blocks(config.mma_n) * sf_block_bytes(config) if raw_y_rows(config) else 0
    off_x = 0
    off_y = off_x + x_rows
    off_sfx = off_y + y_rows
    off_sfy = off_sfx + x_sf
    total = off_sfy + y_sf
    align = SMEM_ALIGN if config.loader == "tma" else 128  # the 128-byte swizzle needs 1024
    total = (total + align - 1) // align * align
    return {"x": off_x, "y": off_y, "sfx": off_sfx, "sfy": off_sfy, "bytes": total}


def stage_tx_bytes(config: HopperConfig) -> int:
    """Bytes the copy engine writes per stage (what the full barrier expects); with
    ``y_source="prepass"`` X and its scales only (:func:`y_box_tx_bytes` per Y buffer)."""
    rows = (config.mma_m + raw_y_rows(config)) * (config.tile_k // 2)
    y_blocks = sf_blocks(config.mma_n) if raw_y_rows(config) else 0
    sf = (sf_blocks(config.mma_m) + y_blocks) * sf_block_bytes(config)
    return rows + sf



def y_box_tx_bytes(config: HopperConfig) -> int:
    """``y_source="prepass"``: bytes one fp16 Y box (mma_n rows x 64 K x 2 B) writes."""
    return config.mma_n * DEQUANT_SUB_K * 2


# ``y_source="prepass"``: the phase-1 claim word's broadcast slots (two int32) in shared memory
PREPASS_SMEM_SLOT_BYTES = 8
# ``y_tail64``: four int32 (the CTA's balanced share, computed by the producer warp, read by the
# consumers after phase 1's completion barrier)
TAIL64_SHARE_BYTES = 16


def dequant_buffer_bytes(config: HopperConfig) -> int:
    """fp16 operand buffers (X and Y): ``fp16_buffers`` x (X rows + Y rows) x 64 K x 2 B. The
    fastest tile (swapped 128x128, X in registers, 2 buffers): 2 x 128 x 64 x 2 = 32768 B.
    ``y_source="prepass"``: the Y ring of 64-K fp16 TMA boxes, 16384 B a buffer; with 4 X stages
    of 18432 B (128 rows x 128 B + one 2048 B scale block) and 8 Y buffers: 73728 + 131072 +
    200 B barriers and claim slots + 3072 B alignment = 208072 B (9 buffers: 224456 B)."""
    x_rows = 0 if config.x_operand == "regs" else config.mma_m
    return config.fp16_buffers * (x_rows + config.mma_n) * DEQUANT_SUB_K * 2


def _smem_bytes_before_staging(config: HopperConfig) -> dict[str, int]:
    barriers = 2 * config.num_ab_stages * 8
    if config.roles == "split" or config.y_source == "prepass":
        barriers += 2 * config.fp16_buffers * 8
    if config.y_source == "prepass":
        barriers += PREPASS_SMEM_SLOT_BYTES
    if config.y_tail64:
        barriers += TAIL64_SHARE_BYTES
    raw = config.num_ab_stages * raw_stage_layout(config)["bytes"]
    dq = dequant_buffer_bytes(config)
    # barriers first, then three 1024-aligned regions (worst-case padding counted)
    total = barriers + 3 * SMEM_ALIGN + raw + dq
    out = {"barriers": barriers, "raw_stages": raw, "dequant_buffers": dq, "total": total}
    if config.phase1_beside:
        # the helper warps' staged stores, a fourth 1024-aligned region
        out["phase1_staging"] = PHASE1_HELPER_WARPS * PREPASS_STAGED_WARP_BYTES
        out["total"] += SMEM_ALIGN + out["phase1_staging"]
    return out


def epilogue_stage_bytes_for(config: HopperConfig, rows: int) -> int:
    """``epilogue="smem"``: bytes of the staging buffers for ``rows`` rows of C per pass: one
    buffer per consumer warpgroup of ``rows`` x 64 fp16 (128-byte rows)."""
    return config.consumer_warpgroups * rows * EPILOGUE_WG_COLS * 2


def epilogue_stage_rows(config: HopperConfig) -> int:
    """``epilogue="smem"``: rows of C one staging pass holds (0 with ``epilogue="direct"``): the
    tile's ``mma_n`` rows (one pass) when that fits shared memory beside everything else, else
    ``mma_n / 2`` (two passes; the second skipped for a tile of at most that many rows), else
    ``mma_n / 4`` (for a height that is no power of two, the next even split into whole 16-row
    steps, e.g. 240: 240, 80, 48, 16); at least 16 (one ``stmatrix.x4`` per warp covers 16 rows). The fastest tile
    (183360 B before staging): 128 rows, 2 x 16384 B. The mixed-tail prepass tile (208088 B):
    64 rows, 2 x 8192 B (128 rows would need 241880 B > 232448)."""
    if config.epilogue != "smem":
        return 0
    before = _smem_bytes_before_staging(config)["total"]
    # the passes split mma_n evenly in whole 16-row steps: mma_n / d for d = 1, 2, 3, .. (for a
    # power of two, the halvings)
    fits = [config.mma_n // d for d in range(1, config.mma_n // 16 + 1)
            if config.mma_n % d == 0 and (config.mma_n // d) % 16 == 0]
    for rows in fits:
        if before + SMEM_ALIGN + epilogue_stage_bytes_for(config, rows) <= SMEM_CAPACITY_BYTES:
            return rows
    return fits[-1]


def smem_bytes(config: HopperConfig) -> dict[str, int]:
    """Shared memory of one CTA, by region; ``epilogue="smem"`` adds the key
    ``"epilogue_staging"`` (its staging buffers, in a fourth 1024-aligned region)."""
    out = _smem_bytes_before_staging(config)
    if config.epilogue == "smem":
        staging = epilogue_stage_bytes_for(config, epilogue_stage_rows(config))
        out["epilogue_staging"] = staging
        out["total"] += SMEM_ALIGN + staging
    return out


def _built_with(what: str, config: "HopperConfig", **want) -> list[str]:
    """The problems of ``config`` for an option built only with these field values: one line per
    field that differs ("WHAT is built with FIELD=WANT, got GOT")."""
    return [f"{what} is built with {field}={value!r}, got {getattr(config, field)!r}"
            for field, value in want.items() if getattr(config, field) != value]


def _is_bool(value) -> bool:
    return isinstance(value, bool)


def config_problems(config: HopperConfig) -> list[str]:
    """Every rule ``config`` breaks (empty when it can be built). The kernel holds code paths for
    the declared variants' combinations of options only; every rule below keeps a config inside
    them."""
    p: list[str] = []
    if config.arch != "sm_90a":
        p.append(f"arch must be 'sm_90a', got {config.arch!r}")
    if config.tile_m not in (64, 128, 256) and not (config.y_source == "prepass" and config.tile_m in WIDE_Y_HEIGHTS):
        p.append(f"tile_m must be 64, 128 or 256 (or one of {WIDE_Y_HEIGHTS} with y_source='prepass'), "
                 f"got {config.tile_m}")
    if config.tile_n not in (64, 128, 256):
        p.append(f"tile_n must be 64, 128 or 256, got {config.tile_n}")
    if config.tile_k not in (128, 256):
        p.append(f"tile_k must be 128 or 256, got {config.tile_k}")
    if config.consumer_warpgroups not in (1, 2):
        p.append(f"consumer_warpgroups must be 1 or 2, got {config.consumer_warpgroups}")
    if config.producer_warps not in (1, 2, 4):
        p.append(f"producer_warps must be 1, 2 or 4, got {config.producer_warps}")
    elif config.producer_warps != 1 and config.loader != "cp_async":
        p.append(f"producer_warps > 1 needs loader='cp_async', got {config.loader!r}")
    if config.load_unroll not in (1, 2, 4, 8):
        p.append(f"load_unroll must be 1, 2, 4 or 8, got {config.load_unroll}")
    if config.dequant_dtype != "fp16":
        p.append(f"dequant_dtype must be 'fp16', got {config.dequant_dtype!r}")
    if config.operand_exp_shift not in (0, -14):
        p.append(f"operand_exp_shift must be 0 or -14, got {config.operand_exp_shift}")
    if config.schedule not in ("contiguous", "strided", "balanced", "split_last"):
        p.append(f"schedule must be 'contiguous', 'strided', 'balanced' or 'split_last', got {config.schedule!r}")
    if config.schedule == "split_last" and (config.y_source != "prepass" or config.y_tail64 is not False):
        p.append("schedule='split_last' (the last round's tiles cut in K halves) needs y_source='prepass' "
                 "without y_tail64")
    if config.loader not in ("cp_async", "tma"):
        p.append(f"loader must be 'cp_async' or 'tma', got {config.loader!r}")
    if config.loader == "tma" and config.tile_k != 256:
        p.append(f"loader='tma' needs tile_k 256 (128-byte rows for the 128-byte swizzle), got {config.tile_k}")
    if config.dequant not in ("shift", "prmt"):
        p.append(f"dequant must be 'shift' or 'prmt', got {config.dequant!r}")
    if config.x_operand not in ("smem", "regs"):
        p.append(f"x_operand must be 'smem' or 'regs', got {config.x_operand!r}")
    if config.y_source not in ("smem_decode", "prepass"):
        p.append(f"y_source must be 'smem_decode' or 'prepass', got {config.y_source!r}")
    if config.roles not in ("cooperative", "split"):
        p.append(f"roles must be 'cooperative' or 'split', got {config.roles!r}")
    elif config.roles == "cooperative" and config.y_source != "prepass":
        if config.dequant_warpgroups != 0:
            p.append(f"dequant_warpgroups is for roles='split' only, got {config.dequant_warpgroups}")
        if config.wgmma_in_flight == 2:
            if config.fp16_buffers != 4:
                # group g + 1's buffer was last read by group g - 3: in_flight + 2 buffers
                p.append(f"wgmma_in_flight=2 takes 4 fp16 buffers (group g + 1's buffer last read by group g - 3), "
                         f"got {config.fp16_buffers}")
        elif config.fp16_buffers != NUM_DEQUANT_BUFFERS:
            p.append(f"roles='cooperative' takes {NUM_DEQUANT_BUFFERS} fp16 buffers, got {config.fp16_buffers}")
    elif config.y_source == "prepass":
        if config.dequant_warpgroups != 0:
            p.append(f"dequant_warpgroups is for roles='split' only, got {config.dequant_warpgroups}")
        if not 2 <= config.fp16_buffers <= 16:
            p.append(f"y_source='prepass' takes a Y ring of 2..16 fp16 buffers, got {config.fp16_buffers}")
    else:
        if config.dequant_warpgroups not in (1, 2):
            p.append(f"roles='split' needs dequant_warpgroups 1 or 2, got {config.dequant_warpgroups}")
        if not 2 <= config.fp16_buffers <= 6:
            p.append(f"roles='split' needs 2..6 fp16_buffers, got {config.fp16_buffers}")
        if config.x_operand != "regs":
            p.append("roles='split' is built with x_operand='regs' (the consumers decode X, the dequant "
                     "warpgroups Y)")
    if config.x_operand == "regs":
        if config.loader != "tma" or config.dequant != "prmt":
            p.append("x_operand='regs' needs loader='tma' and dequant='prmt'")
        if config.mma_m != 64 * config.consumer_warpgroups:
            p.append(f"x_operand='regs' needs one 64-row wgmma A fragment per warpgroup (mma_m {config.mma_m})")
        if raw_y_rows(config) and (2 * config.mma_n) % config.consumer_threads:
            p.append(
                f"x_operand='regs' splits Y's {2 * config.mma_n} half-row units evenly over "
                f"{config.consumer_threads} consumer threads (mma_n {config.mma_n})"
            )
        if config.roles == "split" and config.dequant_warpgroups in (1, 2):
            if (2 * config.mma_n) % config.dequant_threads:
                p.append(
                    f"x_operand='regs' with roles='split' splits Y's {2 * config.mma_n} half-row units evenly "
                    f"over {config.dequant_threads} dequant threads"
                )
            elif config.y_pairs_sub_blocks and config.fp16_buffers < 3:
                # the dequant warps acquire two buffers before publishing either, while a consumer
                # holds its last buffer until the next one is published: with 2 they wait on each
                # other forever (measured: a 2-buffer variant hung on the H200)
                p.append(
                    f"x_operand='regs' with roles='split' and {2 * config.mma_n // config.dequant_threads} Y units "
                    f"per dequant thread decodes sub-blocks in pairs: it needs >= 3 fp16_buffers, got {config.fp16_buffers}"
                )
    if config.y_source == "prepass":
        if not config.swapped:
            p.append("y_source='prepass' needs swapped tiles (Y = A, the per-group M side, decoded once)")
        if config.roles != "cooperative" or config.x_operand != "regs":
            p.append("y_source='prepass' needs roles='cooperative' and x_operand='regs' (the consumers decode X only)")
        if config.loader != "tma" or config.dequant != "prmt":
            p.append("y_source='prepass' needs loader='tma' and dequant='prmt'")
        if config.schedule not in ("contiguous", "balanced", "split_last"):
            p.append("y_source='prepass' takes schedule='contiguous', 'split_last' or 'balanced' (with y_tail64)")
        if config.prepass_chunk not in PREPASS_CHUNK_SPLITS:
            p.append(f"y_source='prepass' needs prepass_chunk in {PREPASS_CHUNK_SPLITS}, got {config.prepass_chunk!r}")
        # each decoding warp stages at its own index's slot of the Y ring (phase1_beside: in a
        # region of the helper warps' own)
        staged = (max(config.phase1_warps) + 1) * PREPASS_STAGED_WARP_BYTES
        if not config.phase1_beside and staged > config.fp16_buffers * y_box_tx_bytes(config):
            p.append(f"phase 1 stages {PREPASS_STAGED_WARP_BYTES} bytes per warp in the Y ring: "
                     f"{max(config.phase1_warps) + 1} warps need more than its {config.fp16_buffers} buffers")
        if config.prepass_batch not in PREPASS_BATCHES or _is_bool(config.prepass_batch):
            p.append(f"y_source='prepass' needs prepass_batch in {PREPASS_BATCHES}, got {config.prepass_batch!r}")
    elif config.prepass_chunk:
        p.append("prepass_chunk is for y_source='prepass' only")
    elif config.prepass_batch != PREPASS_BATCH:
        p.append("prepass_batch is for y_source='prepass' only")
    if not _is_bool(config.phase1_helpers):
        p.append(f"phase1_helpers must be a bool, got {config.phase1_helpers!r}")
    elif config.phase1_helpers and not config.producer_warpgroup:
        p.append("phase1_helpers needs producer_warpgroup (its three warps besides the producer decode)")
    if not _is_bool(config.chunk_done_skip):
        p.append(f"chunk_done_skip must be a bool, got {config.chunk_done_skip!r}")
    if not _is_bool(config.phase1_beside):
        p.append(f"phase1_beside must be a bool, got {config.phase1_beside!r}")
    elif config.phase1_beside and (config.phase1_helpers is not True or config.y_tail64 is not False):
        p.append("phase1_beside needs phase1_helpers (its three warps decode phase 1 beside the tiles) and no "
                 "y_tail64 (the balanced split reaches the consumers through phase 1's completion barrier)")
    elif config.chunk_done_skip and not config.phase1_beside:
        p.append("chunk_done_skip needs phase1_beside (it ends the chunk-flag waits of phase 1 beside the tiles)")
    elif config.phase1_beside and config.prepass_batch not in BESIDE_WARPGROUP_REGS:
        p.append(f"phase1_beside takes prepass_batch in {tuple(BESIDE_WARPGROUP_REGS)} (the helpers' registers "
                 f"are set for those), got {config.prepass_batch!r}")
    if not _is_bool(config.producer_warpgroup):
        p.append(f"producer_warpgroup must be a bool, got {config.producer_warpgroup!r}")
    elif config.producer_warpgroup and (config.y_source != "prepass" or config.consumer_warpgroups != 2
                                        or config.producer_warps != 1):
        p.append("producer_warpgroup needs y_source='prepass', 2 consumer warpgroups and 1 producer warp")
    if not _is_bool(config.y_tail64):
        p.append(f"y_tail64 must be a bool, got {config.y_tail64!r}")
    elif config.y_tail64:
        if config.y_source != "prepass":
            p.append("y_tail64 needs y_source='prepass'")
        if config.mma_n != 128 or config.mma_m not in (64, 128) or not config.swapped:
            p.append("y_tail64 halves a 128-row Y tile: swapped tiles with tile_m 128 and tile_n 128 "
                     "(or 64 with one consumer warpgroup)")
    if (config.schedule == "balanced") != (config.y_tail64 is True):
        p.append("schedule='balanced' and y_tail64 go together (the balanced split costs the 64-row tiles)")
    if not _is_bool(config.prepass_split_warp):
        p.append(f"prepass_split_warp must be a bool, got {config.prepass_split_warp!r}")
    elif config.prepass_split_warp and not config.y_tail64:
        p.append("prepass_split_warp is the balanced split's warp search: y_tail64 only")
    if config.epilogue not in ("direct", "smem"):
        p.append(f"epilogue must be 'direct' or 'smem', got {config.epilogue!r}")
    elif config.epilogue == "smem" and (not config.swapped or config.x_operand != "regs"):
        # swapped: a thread's accumulator pairs are adjacent rows of C, one stmatrix.trans row
        # each; x_operand="regs": one 64-row wgmma M slice (64 columns of C) per warpgroup
        p.append("epilogue='smem' is built for swapped tiles with x_operand='regs' (64 columns of C per consumer warpgroup)")
    if not _is_bool(config.pdl):
        p.append(f"pdl must be a bool, got {config.pdl!r}")
    n_sub = config.tile_k // 64
    if config.wgmma_in_flight not in (1, 2) or _is_bool(config.wgmma_in_flight):
        p.append(f"wgmma_in_flight must be 1 or 2, got {config.wgmma_in_flight!r}")
    elif config.wgmma_in_flight == 2:
        p += _built_with("wgmma_in_flight=2", config, roles="cooperative", y_source="smem_decode", x_operand="regs")
        if config.fp16_buffers > 0 and n_sub % config.fp16_buffers:
            p.append(f"wgmma_in_flight=2 indexes its {config.fp16_buffers} fp16 buffers by the sub-block (tile_k "
                     f"256), got tile_k {config.tile_k}")
    if config.num_ab_stages < 2:
        p.append(f"num_ab_stages must be >= 2, got {config.num_ab_stages}")
    if p:
        return p
    # wgmma: M is 64 per warpgroup instruction, N <= 256
    if config.mma_m not in (64, 128):
        p.append(f"wgmma M side (mma_m={config.mma_m}) must be 64 or 128")
    if config.mma_n > 256:
        p.append(f"wgmma N side (mma_n={config.mma_n}) must be <= 256")
    if config.consumer_warpgroups == 2 and config.mma_m != 128:
        p.append("2 cooperative consumer warpgroups need mma_m == 128 (64 rows each)")
    if config.acc_regs_per_thread > MAX_ACC_REGS_PER_THREAD:
        p.append(
            f"accumulator needs {config.acc_regs_per_thread} fp32 registers per thread "
            f"({config.mma_m}x{config.mma_n} over {config.consumer_threads} threads), "
            f"limit {MAX_ACC_REGS_PER_THREAD}"
        )
    need = config.mma_regs_per_thread
    if need > config.register_cap:
        x_regs = config.x_fragment_regs
        p.append(
            f"{config.threads} threads leave {config.register_cap} registers per thread; the wgmma "
            f"warps need {config.acc_regs_per_thread} accumulators + {MMA_OVERHEAD_REGS}"
            + (f" + {x_regs} for the X fragments in flight" if x_regs else "") + f" = {need}"
        )
    sm = smem_bytes(config)
    if sm["total"] > SMEM_CAPACITY_BYTES:
        raw_stage = raw_stage_layout(config)["bytes"]
        p.append(
            f"shared memory {sm['total']} B > {SMEM_CAPACITY_BYTES} B: {config.num_ab_stages} stages x "
            f"{raw_stage} B raw FP4+scales = {sm['raw_stages']} B, + {sm['dequant_buffers']} B fp16 "
            f"operand buffers ({config.fp16_buffers} x ({config.mma_m}+{config.mma_n}) rows x "
            f"{DEQUANT_SUB_K} x 2 B), + {sm['barriers']} B barriers + {3 * SMEM_ALIGN} B alignment"
            + (f" + {sm['epilogue_staging']} B epilogue staging (16 rows of C, the least) + {SMEM_ALIGN} B alignment"
               if "epilogue_staging" in sm else "")
        )
    return p


def check_config(config: HopperConfig) -> None:
    problems = config_problems(config)
    if problems:
        raise UnsupportedConfigError(config.label, problems)
