"""Configuration of the Hopper (sm_90a) NVFP4 grouped GEMM: one frozen, hashable dataclass.

Pure Python (no CuTe DSL import): the validity rules, the shared-memory byte arithmetic and
the declared variants are testable on any machine.

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

Which axis does what, and what each measured on the H200: kernel/hopper/NOTES.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from kernel.errors import UnsupportedConfigError

DequantDtype = Literal["fp16"]
# "balanced": y_tail64 only (kernel.plan: full tiles and light 64-row tiles split by cost)
# "snake": y_tail16 only (kernel.plan: tiles by class, dealt in rounds of alternating direction)
Schedule = Literal["contiguous", "strided", "balanced", "snake"]
# How the producer warp moves packed FP4 rows and scale blocks into a stage:
#   "cp_async":  16-byte cp.async per lane (LDGSTS), completion through cp.async.mbarrier.arrive;
#   "bulk_rows": one cp.async.bulk (copy engine) per operand row, completion by transaction bytes.
#   "tma":       one 2-D TMA box per operand (per-group tensor maps, kernel.tensor_maps) and one
#                cp.async.bulk per scale block, from one thread; rows land 128-byte swizzled.
Loader = Literal["cp_async", "bulk_rows", "tma"]
# How the consumers turn packed FP4 + E4M3 scales into fp16 operands (kernel/hopper/ptx.py):
#   "shift": one inline-asm block per 32-K unit, per fp16 pair two shifts + two masks + mul;
#   "prmt":  byte-permute decode (sign/magnitude spread once per word, one prmt per pair) and
#            one inline-asm block per sub-block that issues all its shared loads first.
Dequant = Literal["shift", "prmt"]
# Who dequantizes and who multiplies:
#   "cooperative": the consumer warpgroups do both, in turn, per 64-K sub-block (two named
#                  barriers per sub-block, two fp16 buffers);
#   "split":       ``dequant_warpgroups`` warpgroups only dequantize, into a ring of
#                  ``fp16_buffers`` fp16 sub-block buffers with full/empty mbarriers, and the
#                  ``consumer_warpgroups`` only issue wgmma and store C; the two run decoupled.
Roles = Literal["cooperative", "split"]
# Where wgmma's A operand (X) comes from: "smem" (dequantized into a swizzled fp16 buffer like Y)
# or "regs": each consumer thread decodes its own wgmma A fragment from the raw stage straight
# into registers (no fp16 store or wgmma read of X in shared memory); the K order inside each
# 64-K sub-block follows the fragment (kernel/hopper/ptx.py, rs_physical_k), for both operands.
XOperand = Literal["smem", "regs"]
# Where wgmma's B operand (Y) comes from (issue 14p):
#   "smem_decode": the raw FP4 rows and scales are loaded per stage and decoded into the fp16
#                  ring in shared memory (every variant before issue 14p);
#   "prepass":     the same persistent launch first decodes every group's Y rows ONCE into a
#                  global fp16 workspace (grid-stride, dynamic chunks, then a grid-wide
#                  completion barrier), and the tile loop TMA-loads Y as fp16 64-K boxes into a
#                  ring of ``fp16_buffers`` buffers (its own full/empty mbarriers); the raw
#                  stage holds X and its scales only. Swapped tiles with X in registers only.
YSource = Literal["smem_decode", "prepass"]
# How the tile loop learns that phase 1 wrote the fp16 Y it is about to TMA-load (issue 14,
# ``y_source="prepass"`` with ``prepass_chunk`` > 0):
#   "barrier": one grid-wide completion barrier after phase 1 (every CTA waits for ALL of Y);
#   "flags":   phase 1 runs K-chunk-major (every Y block's first ``tile_k`` K first) and
#              publishes one flag per (Y block of ``mma_n`` rows, ``tile_k`` K chunk) with a
#              release; the producer acquire-waits on a box's flag before its TMA load, so a CTA
#              waits only for the Y its next stages read (kernel.hopper.workspace: the flags)
PrepassSync = Literal["barrier", "flags"]
# How the consumer warpgroups write C (issue 14, session 6):
#   "direct": predicated scalar 2-byte fp16 stores straight from the wgmma accumulators (every
#             variant before session 6; swapped, a warp's store touches ~32 rows of C);
#   "smem":   staged through shared memory (kernel/hopper/staging.py states the layout): each
#             consumer warpgroup converts its accumulators (its 64 columns of C, swapped) to fp16
#             and writes them with ``stmatrix.trans`` into its own staging buffer laid out as C
#             (rows of 64 fp16, 16-byte chunks XOR-swizzled by row), syncs its 128 threads on its
#             own named barrier, then stores C with one coalesced 16-byte store per thread and
#             row chunk (8 fp16; 2-byte stores where n is not a multiple of 8). The buffer holds
#             ``epilogue_stage_rows`` rows of C (the whole tile where shared memory allows, else
#             half of it, in two passes; a pass past the tile's last row of C is skipped)
Epilogue = Literal["direct", "smem"]
PrepassStore = Literal["direct", "staged"]  # see HopperConfig.prepass_store

SMEM_CAPACITY_BYTES = 232448  # sm_90: 227 KiB of dynamic shared memory per block
SMEM_ALIGN = 1024  # swizzle-128 operand buffers need 1024-byte alignment
DEQUANT_SUB_K = 64  # K elements per dequantized sub-block (one SW128 atom of fp16)
NUM_DEQUANT_BUFFERS = 2  # the cooperative roles' ping-pong pair
RAW_ROW_PAD_BYTES = 16  # pad each packed FP4 row in smem so 8 rows hit 8 different bank groups
SF_BLOCK_ROWS = 128  # the blocked scale layout packs 128 rows x 4 scale columns per 512 bytes
MAX_ACC_REGS_PER_THREAD = 128
REGISTER_FILE = 65536  # 32-bit registers per SM (one CTA per SM)
MAX_REGS_PER_THREAD = 255
# registers the wgmma warps need besides their accumulators (descriptors, tile geometry,
# epilogue addressing); the compile of every declared variant checks 0 spills
MMA_OVERHEAD_REGS = 24
# setmaxnreg (issue 14): registers per thread the producer warpgroup keeps when the consumers
# take more (``HopperConfig.consumer_regs``); PTX allows 24..256 in steps of 8
SETMAXNREG_MIN = 24
SETMAXNREG_MAX = 256
PRODUCER_REGS_MAX = 40  # what CUTLASS's warp-specialized Hopper kernels give their producer
# issue 14q, ``prepass_chunk`` > 0: phase 1's items per thread per chunk at most (all loaded
# before any is decoded), and the smallest chunk (items) the run-time choice may take
PREPASS_BATCH = 4
PREPASS_STAGED_WARP_BYTES = 32 * 128  # prepass_store="staged": one 128-byte item slot per lane
# prepass_decoders > 0: warps of phase 1 in the background, at most (the CTA stays at 384 threads)
PREPASS_DECODERS_MAX = 3
# prepass_kernel_warps: the phase-1 launch's warps per CTA (at most one per SM sub-partition) and
# its default register cap. The GEMM's 9 warps put 3 on one sub-partition (16384 registers each):
# 3 x 152 + 56 registers per thread fill it, so a 4-warp phase-1 CTA at 56 registers fits beside
# a GEMM CTA of up to 152 registers (the budget test: kernel/tests/test_hopper_phase1_kernel.py)
PHASE1_KERNEL_WARPS_MAX = 4
PHASE1_KERNEL_REGS = 56
PHASE1_KERNEL_BATCH = 2  # items each thread loads at once (4 spill at 56 registers)
SM_SUBPARTITION_REGISTERS = 16384
# prepass_decoders > 0: named barrier ids of the decoder warps' chunk barrier and of the hand-off
# (producer warp -> decoder warps) that orders the producer's generation read before the CTA
# counts through phase 1 (see EPILOGUE_BARRIER_ID0 for the others)
DECODER_BARRIER_ID = 8
DECODER_HANDOFF_BARRIER_ID = 9
# prepass_decoders with y_tail64: the producer warp's balanced share handed to the consumers
# (named barrier: the producer arrives after storing it, the consumers sync), at this byte offset
# from the claim slots (after the two claim slots and the generation cell)
SHARE_BARRIER_ID = 10
# prepass_first_local on the background phase 1: the consumers' local decode -> the producer
# (named barrier: the consumers arrive after their proxy fence, the producer warp syncs before it
# completes the local ring slots)
LOCAL_BARRIER_ID = 11
BACKGROUND_SHARE_OFFSET = 16
PREPASS_MIN_CHUNK = 32
PREPASS_CHUNK_SPLITS = (0, 1, 2, 4)
# HopperConfig.ctas_per_sm: CTAs the persistent grid puts on each SM (2: each takes at most half
# of the SM's shared memory and registers; the compile asks ptxas for that many blocks per SM)
CTAS_PER_SM = (1, 2)
# HopperConfig.cluster_x: CTAs per cluster along X (N); 2 multicasts each fp16 Y box (prepass)
CLUSTER_SIZES = (1, 2)
# HopperConfig.y_cluster_decode: the Y ring's buffers (a sub-block decoded two ahead of its wgmma
# goes into the buffer whose last wgmma retired one sub-block earlier in both CTAs), and its
# mbarriers (landed and free per buffer)
Y_CLUSTER_BUFFERS = 4
Y_CLUSTER_AHEAD = 2
MBARRIER_BYTES = 8  # one mbarrier object in shared memory
Y_CLUSTER_BARRIER_BYTES = 2 * Y_CLUSTER_BUFFERS * MBARRIER_BYTES
# HopperConfig.y_cluster_copy: how the decoder's copy reaches the peer CTA
Y_CLUSTER_COPIES = ("st_async", "bulk")


# y_cluster_decode's schedule arithmetic, on a CTA's running sub-block count g (plain ints or the
# kernel's Int32 values alike): the one place the kernel (consume_cluster_y) and the protocol's
# model (kernel/tests/test_hopper_cluster_y.py, which also runs it with other ring sizes) take it from
def y_cluster_filler(g):
    """The cluster rank that decodes sub-block g into both CTAs."""
    return g % 2


def y_cluster_buffer(g, buffers: int = Y_CLUSTER_BUFFERS):
    """The Y buffer sub-block g is read from, in each CTA."""
    return g % buffers


def y_cluster_landed_parity(g, buffers: int = Y_CLUSTER_BUFFERS):
    """The parity of the landed[buffer] phase that completes when sub-block g has landed (its
    buffer's use number g // buffers)."""
    return (g // buffers) % 2


def y_cluster_free_parity(g, buffers: int = Y_CLUSTER_BUFFERS):
    """The parity the filler of sub-block g waits for on free[buffer]: the phase of the buffer's
    previous use, retired by the peer (the phase before the first counts as done)."""
    return y_cluster_landed_parity(g, buffers) ^ 1


# epilogue="smem": named barrier 4 + w syncs consumer warpgroup w's 128 threads around its staging
# buffer (0: the CTA-wide barrier, 1: the consumers' Y barrier, 1 + w (w < 3): y_per_warpgroup's)
EPILOGUE_BARRIER_ID0 = 4
# consumer_stagger > 0: named barriers STAGGER_BARRIER_ID0 and + 1, by the parity of the tile's
# place in the CTA's tile list (warpgroup 0 arrives after its L-th sub-block, warpgroup 1 syncs
# before its first). Two ids, because warpgroup 0 may arrive for the next tile before warpgroup 1
# has synced for this one; it cannot arrive for the tile after that first (the Y ring of at most
# two tiles' sub-blocks would need warpgroup 1's release of this tile's first box)
STAGGER_BARRIER_ID0 = 12
# epilogue="smem": columns of C per consumer warpgroup (its 64-row wgmma M slice, swapped), so a
# staging row is 128 bytes: eight 16-byte chunks
EPILOGUE_WG_COLS = 64


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
    schedule: Schedule = "contiguous"
    loader: Loader = "cp_async"
    dequant: Dequant = "shift"
    roles: Roles = "cooperative"
    dequant_warpgroups: int = 0  # "split" only: warpgroups that dequantize (1 or 2)
    # fp16 sub-block buffers. "cooperative": 2 (ping-pong, two barriers per sub-block) or 3 (a
    # running index, one barrier per sub-block); "split": a ring of 2..6
    fp16_buffers: int = NUM_DEQUANT_BUFFERS
    x_operand: XOperand = "smem"
    # issue 14 (experimental, label "_cta2"): 2 puts two CTAs of one consumer warpgroup each (an
    # X 64 x Y 128 tile) on every SM, the grid twice the SM count: each CTA takes at most half of
    # the SM's shared memory (smem_capacity) and of its registers (launch_register_cap), so one
    # CTA's prologue, epilogue and waits can overlap the other's wgmma
    ctas_per_sm: int = 1
    # issue 14: 0 = off. Otherwise the producer is a whole warpgroup (its first
    # ``producer_warps`` warps load, the others exit) that lowers its registers with
    # ``setmaxnreg.dec`` to ``producer_regs``, and the consumer warpgroups raise theirs with
    # ``setmaxnreg.inc`` to this count: what lets 3 consumer warpgroups (mma_m 192) fit.
    consumer_regs: int = 0
    # issue 14b (experimental): cooperative roles with x_operand="regs" only. False: the consumer
    # warpgroups share one fp16 Y ring (each decodes half of Y; two consumer-wide named barriers
    # per sub-block keep them in lock-step). True: each consumer warpgroup decodes the whole Y
    # into its own 2-buffer ring and both barriers are 128-thread, one barrier id per warpgroup,
    # so the warpgroups drift apart and their wgmmas interleave on the tensor pipe; costs twice
    # the Y decode per warpgroup and ``consumer_warpgroups`` copies of the Y ring.
    y_per_warpgroup: bool = False
    # issue 14p (experimental): see YSource. "prepass" takes ``fp16_buffers`` as the depth of
    # the Y ring (64-K fp16 TMA boxes), independent of ``num_ab_stages`` (the X ring)
    y_source: YSource = "smem_decode"
    # issue 14q (experimental, y_source="prepass" only): phase 1's chunk size. 0: fixed chunks of
    # threads x 2 items, each thread's two items loaded, decoded and stored one after the other
    # (the measured 14p build). F > 0: chunk = clamp(ceil(items / (F x grid)), PREPASS_MIN_CHUNK,
    # threads x PREPASS_BATCH) items, chosen at run time (so a small problem still gives every
    # CTA work), each thread's loads of all its items of a chunk issued before any decode, and
    # the next chunk claimed while the current one is decoded (one CTA barrier per chunk)
    prepass_chunk: int = 0
    # issue 14q (experimental, y_source="prepass" only): the producer issues its first tile's X
    # stages (raw X by TMA, X scales by bulk copy: neither depends on phase 1) before it waits
    # at phase 1's completion barrier, so the X ring is full when Y becomes readable
    prepass_x_early: bool = False
    # issue 14 (experimental, y_source="prepass" with prepass_chunk > 0): see PrepassSync
    prepass_sync: PrepassSync = "barrier"
    # issue 14 (experimental, y_source="prepass" with prepass_chunk > 0 only): CTAs per cluster
    # along X (N). 2: the launch is a grid of 2-CTA clusters; a cluster takes tile pairs (N blocks
    # 2j and 2j+1 of one group and one M block, so both CTAs read the same fp16 Y boxes) and each
    # CTA's producer TMA-loads half of every Y box, multicast into both CTAs' Y rings (Y's L2
    # traffic halved). A group with an odd number of N blocks gives its last pair a "ghost"
    # member (N block past N: X zero-filled by TMA, every store predicated off). 1: no cluster
    cluster_x: int = 1
    # issue 14, session 13 (experimental; cluster_x=2 on the cooperative register-X tile with Y
    # decoded in shared memory, label "_c2d"): the two CTAs of a cluster run N blocks 2j, 2j+1 of
    # the same M block, so they need the same fp16 Y. Rank r decodes the sub-blocks g with
    # g % 2 == r (g counts the CTA's sub-blocks over all its tiles) into its own Y buffer and the
    # peer's (st.async), two sub-blocks ahead of the wgmma, in a ring of Y_CLUSTER_BUFFERS
    # buffers: half of Y's decode per CTA. Per buffer an mbarrier "landed" (one expect_tx arrive
    # of the reading CTA per use; the peer's st.async bytes complete it) and "free" (the peer's
    # consumer warps' arrivals after the wgmma that read the buffer retired). Both CTAs walk the
    # same tiles (a ghost rank past N decodes its share like a real one)
    y_cluster_decode: bool = False
    # issue 14, session 14 (with y_cluster_decode): how the decoded sub-block reaches the peer.
    # "st_async": every thread stores each of its 16-byte chunks into the peer too (st.async, its
    # bytes counted on the peer's landed mbarrier), and the reader fences the async proxy after
    # its wait; measured on the H200: each fence waits for the thread's remote stores, 1.9x slower
    # per K than the build without the cluster. "bulk" (label letter "b"): the decoder stores its
    # copy locally, fences and syncs, then one thread copies the 16-KB buffer into the peer's with
    # cp.async.bulk (the copy engine, in the async proxy, bytes counted on the peer's landed
    # mbarrier as a TMA load's are; the reader needs no fence). Measured: 2.14 us per 256 K on
    # bench4 against 1.91 without the cluster; with no decode at all 1.68 against 1.32: the 16-KB
    # exchange per two sub-blocks bounds it (kernel/hopper/NOTES.md, session 14)
    y_cluster_copy: str = "st_async"
    # issue 14, session 5 (experimental, y_source="prepass" with prepass_chunk > 0, the 128-row Y
    # tile): a group's last Y block of at most 64 rows runs as a 64-row tile (wgmma N = 64, the
    # first half of the accumulators; the Y box is still 128 rows: the rows past the group reach
    # only columns never stored), chosen per tile at run time (m - m0 <= 64); with
    # schedule="balanced" (kernel.plan): each CTA runs a cost-balanced share, heavy tiles first
    y_tail64: bool = False
    # issue 14, session 10 (experimental; the same prerequisites as y_tail64, which it replaces;
    # label suffix "_t16"): every tile runs with wgmma N = its Y rows rounded up to 16 (16 .. 128,
    # chosen per tile at run time: a group's last Y block of 72 rows costs an N = 80 wgmma instead
    # of N = 128), on the first N rows of the same 128-row Y buffer and the first N / 2
    # accumulators of each thread; with schedule="snake" (kernel.plan): the tiles by class (the
    # N), dealt to CTAs in rounds of alternating direction
    y_tail16: bool = False
    # y_tail16 only (experimental, session 10; label "_t16s<step>" when not 16): the wgmma N step:
    # N = the tile's Y rows rounded up to it, one branch per multiple (16: eight, 32: four, 64:
    # two, 128: one, every tile at N = 128). The snake schedule's classes stay 16 rows apart
    y_tail16_step: int = 16
    # issue 14, session 6 (experimental): see Epilogue. "direct" (every earlier variant) or
    # "smem" (label suffix "_es"): staged through shared memory, coalesced 16-byte stores
    epilogue: Epilogue = "direct"
    # issue 14, session 7 (experimental, y_source="prepass"; label suffix "_xp"): the consumers
    # read the next sub-block's raw X bytes and scales into registers of their own, and wait for
    # its Y box, right after issuing this sub-block's wgmmas and before waiting for the previous
    # group to retire; the decode (ALU only) follows that wait. Production order: the shared
    # loads after the wait (their destinations are the retiring group's fragment registers)
    x_prefetch: bool = False
    # issue 14, session 7 (experimental, y_source="prepass" with prepass_chunk > 0; label suffix
    # "s" after the prepass letters): how phase 1 writes its fp16 items. "direct": each thread
    # stores its item's 128 bytes as 8 scattered 16-byte stores (a warp store touches 32 runs).
    # "staged": each thread writes its decoded item to a 128-byte slot in shared memory (the Y
    # ring, unused until phase 1 ends), then the warp stores 4 whole runs per instruction (an
    # ncu run put phase 1 alone at 20 us on bench1 with the SM -> L2 crossbar 54 % busy, DRAM 5 %)
    prepass_store: PrepassStore = "direct"
    # issue 14, session 8 (experimental, y_source="prepass" with prepass_chunk > 0 and the
    # completion barrier; label letter "l" after the prepass letters): phase 1's exit trimmed of
    # what does not need to precede the completion barrier. Thread 0 counts its CTA through the
    # barrier (the atomic add and, last CTA, the counters' reset) after the CTA barrier instead of
    # before it; the producer warp acquires the workspace's tensor map (written before the launch)
    # before the barrier, and does not acquire the first tile's X map twice; with y_tail64 its
    # 32 lanes search the balanced split's candidates together (kernel.device_schedule
    # balanced_split_warp: ~150 instructions instead of ~1200 on one lane's path between the
    # warp's last phase-1 chunk and the barrier; the same split); thread 0's first claim goes out
    # before anything else and, while it is in flight, the other threads prefetch their first item
    # of chunk blockIdx into L2
    prepass_lean_exit: bool = False
    # issue 14, session 8 (experimental, with prepass_lean_exit; label letter "b" after "l"): the
    # producer warp computes the split and issues its first tile's X stages before phase 1
    # instead of after its phase-1 chunks (X then loads while Y is decoded; the warp reaches
    # phase 1's first barrier later)
    prepass_x_before: bool = False
    # issue 14, session 9 (experimental; y_tail64 with prepass_chunk > 0, without
    # prepass_lean_exit, which does it already; label letter "w" after the prepass letters): only
    # the balanced split's search by the producer warp's 32 lanes together
    # (kernel.device_schedule.balanced_split_warp), the rest of phase 1's exit as in production.
    # The uniform_split ablation put the one-lane search at 1.2 us of bench4's 18.2
    prepass_split_warp: bool = False
    # issue 14, session 9 (experimental; the same prerequisites as prepass_lean_exit, without it;
    # label letters "t", "m", "q" after "w"): the lean exit's three other changes one at a time,
    # to find which one cost bench1/bench2 3-6 %: thread 0 counts its CTA through after the
    # completion barrier (prepass_count_after); the producer acquires the workspace's map before
    # the barrier and the first tile's X map once (prepass_map_early); thread 0's first claim
    # before the chunking arithmetic, chunk blockIdx's first items prefetched into L2 meanwhile
    # (prepass_claim_first)
    prepass_count_after: bool = False
    prepass_map_early: bool = False
    prepass_claim_first: bool = False
    # issue 14, session 10 (experimental; prepass_sync="flags"; label "g<n>" after the prepass
    # letters): phase 1 runs in the background on ``prepass_decoders`` warps of their own (after
    # the producer warp), K-chunk-major with readiness flags, while the consumers and the producer
    # start phase 2 at once: the producer waits per K chunk on the flag of its Y block, so phase
    # 1's decode is off the critical path but for the first K chunk. With y_tail64 the producer
    # warp searches the balanced split at the start (balanced_split_warp) and hands it to the
    # consumers with a named barrier (SHARE_BARRIER_ID; a warp search in the consumer warps
    # themselves made ptxas serialize every wgmma: C7520). prepass_store="staged": the decoder
    # warps' item slots in a region of their own (the Y ring is in use). 0: phase 1 on every
    # thread before phase 2
    prepass_decoders: int = 0
    # issue 14, session 16 (experimental; label "k<W>" after the prepass letters): phase 1 in a
    # launch of its own, on the same stream right before the GEMM's. The phase-1 grid (W warps per
    # CTA, prepass_kernel_regs registers, shared memory only for staged stores) waits for the stream's previous kernel
    # (griddepcontrol.wait), then lets the GEMM's grid launch at once (launch_dependents) and
    # decodes Y into the workspace. The GEMM's CTAs fit beside its CTAs on each SM, so they were
    # to run their prologue, the balanced split and the first tile's X stages while phase 1
    # decodes (on the H200 they start only once phase 1's CTA on their SM has left: a dependent
    # launch of 100 KB of shared memory or more is not co-scheduled, profiling.pdl_probe);
    # only the producer waits (griddepcontrol.wait: phase 1's grid complete, its stores
    # visible) before its first Y box. In place of the in-kernel phase 1 and its grid barrier.
    # What the GEMM reads before that wait (the group tables, the tensor maps, B and its scales)
    # is safe: its grid launches only after every phase-1 CTA passed its own wait for the
    # stream's previous kernel. With prepass_sync="flags" (session 17, label letters "f...k"):
    # every phase-1 warp claims and decodes chunks of its own, K-chunk-major, and adds each
    # chunk's items to the counters of the flag cells it touched (counters that only grow);
    # the GEMM's producer waits per K chunk on its Y block's counters instead of for phase 1's
    # whole grid, so the K loop starts once the first K chunk is decoded; the GEMM reads the
    # generation, waits for phase 1's grid only at its end (every claim made) and counts its
    # CTAs through (the last one resets the claims and advances the generation:
    # kernel.hopper.workspace).
    # 0: phase 1 inside the GEMM's launch
    prepass_kernel_warps: int = 0
    # with prepass_kernel_warps: when the GEMM's grid lets the next launch (the next call's phase
    # 1) start its CTAs beside its own: "start" (at its start), "late" (each CTA once its producer
    # has issued its last load), "exit" (never: at its completion). A waiting CTA beside the
    # GEMM's holds one warp per sub-partition in griddepcontrol.wait during the K loop
    prepass_kernel_trigger: str = "late"
    # with prepass_kernel_warps: the phase-1 launch's register cap per thread (label "r<R>" when
    # not PHASE1_KERNEL_REGS): with fewer, the GEMM's CTA fits beside it with room to spare
    prepass_kernel_regs: int = PHASE1_KERNEL_REGS
    # issue 14, session 11 (experimental; y_source="prepass" with prepass_chunk > 0 and the
    # completion barrier; label letter "z" after the prepass letters): each group's workspace rows
    # start at a multiple of the smallest Y tile (64 rows with y_tail64, else mma_n), and the rows
    # between a group's M and that multiple are zero (the workspace is zeroed when it is made, one
    # per row layout, and phase 1 never writes them). A tile's Y box then reads zeros past its
    # group's M instead of the next group's rows: the same results (those accumulator columns are
    # never stored), but the tensor cores multiply zeros there, which draws less power: bench1
    # runs at the H200's 700 W cap, where the time is the energy
    y_row_pad: bool = False
    # issue 14, session 11 (experimental; the barrier prepass with prepass_chunk > 0 and the
    # staged phase 1, cluster_x 1, none of the lean exit's changes but the split's warp search;
    # label letter "h" after the prepass letters): phase 1 behind the first K tile. Each CTA
    # decodes its first tile's first K tile of Y itself, straight into the Y ring's first
    # buffers in shared memory (phase 1's item loads and staged stores, the slot at the buffer
    # row with the TMA box's 128-byte swizzle), after its phase-1 chunks and without waiting for
    # anyone else's; the producer completes those ring slots without a copy and waits for phase
    # 1's completion only before its first workspace Y box (it counts the CTA through then). The
    # balanced split is computed by the producer warp before phase 1 (so every thread knows the
    # first tile). k_slope on bench4: the prepass build's 3.4 us of fixed cost over _rs_es is
    # phase 1's decode chain, which this takes off the first K tile's path
    prepass_first_local: bool = False
    # issue 14, session 12 (experimental): K tiles of the first tile that prepass_first_local
    # decodes in the CTA (1 or 2; label "h2" for 2). Also: prepass_first_local on the background
    # phase 1 (prepass_decoders > 0, flags): the consumer warps decode the local K tiles at once,
    # while the decoder warps run phase 1, and the producer skips the flag wait for them
    first_local_tiles: int = 1
    # issue 14, session 12 (label suffix "_pdl"): programmatic dependent launch. The grid is
    # launched with the programmatic-stream-serialization attribute, so on a stream where it
    # follows another kernel its CTAs may start while that kernel's last CTAs run; every thread
    # executes griddepcontrol.wait (the previous grid complete, its memory visible) first,
    # before any global access, then griddepcontrol.launch_dependents, so the next launch's
    # dispatch overlaps this one's tail
    pdl: bool = False
    # issue 14, session 13 (label suffix "_st"): the device tables (sizes, tile prefix, pointers)
    # copied into shared memory at the kernel's start, every thread one word or so, in one round
    # trip, with SMEM_TABLE_GUARD_ROWS guard rows around each table holding kernel.tables' guard
    # fills (what a strict table's guard rows hold, so a read past a table shows the same way);
    # every later table read (the group search, the tile's sizes and pointers, phase 1's item
    # addresses, the balanced split) is a shared load instead of a dependent global round trip.
    # The profiling timeline put 1.3-1.5 us of every launch before the producer's first load,
    # most of it that chain of global reads
    smem_tables: bool = False
    # issue 14, session 15 (experimental; label suffix "_lag<L>"): the two consumer warpgroups of
    # the prepass build kept out of step. Nothing else ties them together (each waits for the
    # same X stages and Y boxes, releases them per warp and stages its own 64 columns of C), so
    # they run in lockstep and both leave the tensor cores idle for the epilogue at once. With L >
    # 0, warpgroup 1 starts each tile's K loop only after warpgroup 0 has issued that tile's first
    # L sub-blocks (named barrier STAGGER_BARRIER_ID0 + the tile's parity: warpgroup 0 arrives,
    # warpgroup 1 syncs), so one warpgroup's epilogue runs while the other one still multiplies
    consumer_stagger: int = 0
    # issue 14, session 18 (label suffix "_sk"): stream-K over the balanced lists (kernel.plan,
    # ``streamk_*``). The K tiles of every tile (full list, then light list, weighted FULL_COST /
    # LIGHT_COST) are cut into one contiguous range per CTA of equal weight; a range that ends
    # inside a tile runs that tile's K prefix first and hands its fp32 accumulators on through the
    # workspace (kernel.hopper.workspace: a state word and a partial per boundary), and the CTA
    # after it continues the same chain of 16-K updates from them as its last piece, so the
    # accumulation order is the oracle's. What it is for: bench1's balanced split leaves 44 CTAs
    # at 8 of the makespan's 11 quarter units (stream-K: within one K tile of the 9.94 average)
    stream_k: bool = False
    # issue 14, session 15 (label suffix "_w2"): wgmma groups each consumer warp leaves in flight
    # after issuing a sub-block's group (its wait_group), in the cooperative build that decodes Y
    # into shared memory (y_source="smem_decode", X in registers). 1: the decode of sub-block
    # g + 1 runs while only group g is queued. 2 (with 4 fp16 buffers, one barrier per
    # sub-block): groups g - 1 and g are both queued, so the tensor pipe has two sub-blocks of
    # work while the warps decode the next one; the buffer sub-block g + 1 overwrites was read
    # by group g - 3, which every warp retired before the barrier of sub-block g. X's fragments
    # of three sub-blocks are live at once (bench4's build: 168 registers and 12 bytes of spills
    # outside the K loop, against 163 and none with one group)
    wgmma_in_flight: int = 1
    arch: str = "sm_90a"

    @property
    def y_row_align(self) -> int:
        """Rows each group's workspace rows are padded to (``y_row_pad``; 1: none)."""
        if not self.y_row_pad:
            return 1
        return 64 if self.y_tail64 else self.mma_n

    # ---- phase 1's exit: the lean exit is all four changes ----------------------------------
    @property
    def exit_split_warp(self) -> bool:
        return self.prepass_lean_exit or self.prepass_split_warp

    @property
    def exit_count_after(self) -> bool:
        return self.prepass_lean_exit or self.prepass_count_after

    @property
    def exit_map_early(self) -> bool:
        return self.prepass_lean_exit or self.prepass_map_early

    @property
    def exit_claim_first(self) -> bool:
        return self.prepass_lean_exit or self.prepass_claim_first

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
    def dequant_threads(self) -> int:
        """Threads that dequantize: the consumers themselves, or the dequant warpgroups."""
        if self.roles == "split":
            return 128 * self.dequant_warpgroups
        return self.consumer_threads

    @property
    def producer_threads(self) -> int:
        """The producer warps, or (``consumer_regs``) the whole producer warpgroup."""
        return 128 if self.consumer_regs else 32 * self.producer_warps

    @property
    def threads(self) -> int:
        dq = self.dequant_threads if self.roles == "split" else 0
        return self.consumer_threads + dq + self.producer_threads + 32 * self.prepass_decoders

    @property
    def launch_register_cap(self) -> int:
        """Registers per thread ptxas allows ``ctas_per_sm`` CTAs of ``threads`` at launch: the
        warps of all of them spread over the SM's four sub-partitions of 16384 registers, and it
        allocates whole units of 8 registers. Measured with ptxas for sm_90a: 288 threads -> 168,
        416 -> 128 ("Insufficient registers (128)"); two CTAs of 160 threads (.minnctapersm 2)
        compile at 161."""
        warps = -(-self.threads // 32) * self.ctas_per_sm
        per_subpartition = -(-warps // 4)
        return min(MAX_REGS_PER_THREAD, SM_SUBPARTITION_REGISTERS // (32 * per_subpartition) // 8 * 8)

    @property
    def producer_regs(self) -> int:
        """``consumer_regs`` only: what the producer warpgroup keeps (setmaxnreg.dec): what the
        consumers leave of the register file, at most PRODUCER_REGS_MAX, in steps of 8."""
        if not self.consumer_regs:
            return self.launch_register_cap
        left = (self.launch_allocation - self.consumer_threads * self.consumer_regs) // 128 // 8 * 8
        return min(PRODUCER_REGS_MAX, left)

    @property
    def y_pairs_sub_blocks(self) -> bool:
        """``roles="split"`` with X in registers: the dequant warpgroups decode two Y sub-blocks
        (two ring buffers) per inline-asm block when one sub-block gives each of their threads
        two or more units (one dequant warpgroup), one at a time otherwise. Measured on the H200
        (bench1, 128x128 tile): one dequant warpgroup 182.6 us one at a time, 169.5 paired; two
        dequant warpgroups 162.2 one at a time, 172.7 paired (profiling/PERF_LOG.md)."""
        return (self.roles == "split" and self.x_operand == "regs" and self.dequant_warpgroups > 0
                and 2 * self.mma_n // self.dequant_threads >= 2)

    @property
    def launch_allocation(self) -> int:
        """Registers the CTA holds from its launch: setmaxnreg.inc can only take registers that
        another warpgroup of the same CTA gave back with setmaxnreg.dec, never the rest of the
        register file (measured on the H200: a split variant of 640 threads x 96 whose consumers
        asked for more than the other warpgroups released hung in setmaxnreg.inc)."""
        return -(-self.threads // 128) * 128 * self.launch_register_cap

    @property
    def dequant_regs(self) -> int:
        """``roles="split"`` only: registers per thread of the dequant warpgroups. Without
        ``consumer_regs`` the launch cap; with it, what the consumers and the producer
        warpgroup leave (setmaxnreg.dec when below the launch cap, never above it)."""
        if self.roles != "split":
            return 0
        if not self.consumer_regs:
            return self.launch_register_cap
        left = self.launch_allocation - self.consumer_threads * self.consumer_regs - 128 * self.producer_regs
        return min(self.launch_register_cap, left // self.dequant_threads // 8 * 8)

    @property
    def register_cap(self) -> int:
        """Registers per thread the wgmma (consumer) warps may use: the launch cap, or
        ``consumer_regs`` after setmaxnreg.inc."""
        return self.consumer_regs or self.launch_register_cap

    @property
    def y_copies(self) -> int:
        """Copies of the fp16 Y ring: one per consumer warpgroup with ``y_per_warpgroup``."""
        return self.consumer_warpgroups if self.y_per_warpgroup else 1

    @property
    def acc_regs_per_thread(self) -> int:
        return self.mma_m * self.mma_n // self.consumer_threads

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
        sched = "" if self.schedule in ("contiguous", "balanced", "snake") else f"_{self.schedule}"
        sched += "" if self.loader == "cp_async" else f"_{self.loader}"
        sched += "" if self.dequant == "shift" else f"_{self.dequant}"
        sched += "" if self.producer_warps == 1 else f"_p{self.producer_warps}"
        sched += "" if self.load_unroll == 1 else f"_u{self.load_unroll}"
        sched += "" if self.x_operand == "smem" else "_rs"
        sched += "" if self.wgmma_in_flight == 1 else f"_w{self.wgmma_in_flight}"
        sched += "_ywg" if self.y_per_warpgroup else ""
        sched += "_pre" if self.y_source == "prepass" else ""
        sched += f"c{self.prepass_chunk}" if self.prepass_chunk else ""
        sched += "x" if self.prepass_x_early else ""
        sched += "f" if self.prepass_sync == "flags" else ""
        sched += "s" if self.prepass_store == "staged" else ""
        sched += "l" if self.prepass_lean_exit else ""
        sched += "b" if self.prepass_x_before else ""
        sched += "w" if self.prepass_split_warp else ""
        sched += "t" if self.prepass_count_after else ""
        sched += "m" if self.prepass_map_early else ""
        sched += "q" if self.prepass_claim_first else ""
        sched += f"g{self.prepass_decoders}" if self.prepass_decoders else ""
        sched += f"k{self.prepass_kernel_warps}{self.prepass_kernel_trigger[0]}" if self.prepass_kernel_warps else ""
        sched += f"r{self.prepass_kernel_regs}" if self.prepass_kernel_regs != PHASE1_KERNEL_REGS else ""
        sched += "z" if self.y_row_pad else ""
        sched += "h" if self.prepass_first_local else ""
        sched += f"{self.first_local_tiles}" if self.prepass_first_local and self.first_local_tiles != 1 else ""
        sched += "" if self.cluster_x == 1 else f"_c{self.cluster_x}"
        sched += "d" if self.y_cluster_decode else ""
        sched += "b" if self.y_cluster_copy == "bulk" else ""
        sched += "" if self.consumer_regs == 0 else f"_r{self.consumer_regs}"
        sched += "_t64" if self.y_tail64 else ""
        sched += "_t16" if self.y_tail16 else ""  # with schedule="snake"
        sched += f"s{self.y_tail16_step}" if self.y_tail16 and self.y_tail16_step != 16 else ""
        sched += "_sk" if self.stream_k else ""
        sched += "_es" if self.epilogue == "smem" else ""
        sched += "_xp" if self.x_prefetch else ""
        sched += "_pdl" if self.pdl else ""
        sched += "_st" if self.smem_tables else ""
        sched += f"_lag{self.consumer_stagger}" if self.consumer_stagger else ""
        sched += f"_cta{self.ctas_per_sm}" if self.ctas_per_sm != 1 else ""
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
    """``y_source="prepass"``: bytes one fp16 Y box (mma_n rows x 64 K x 2 B) writes; with
    ``cluster_x`` = 2 what each CTA's full barrier expects (its own half and its peer's half,
    both multicast)."""
    return config.mma_n * DEQUANT_SUB_K * 2


def y_box_rows_per_cta(config: HopperConfig) -> int:
    """Rows of each Y box one CTA's producer loads (the workspace tensor map's box rows):
    ``mma_n`` alone, half of it in a 2-CTA cluster (rank r loads rows r * mma_n / 2 ...)."""
    return config.mma_n // config.cluster_x


# ``y_source="prepass"``: the phase-1 claim word's broadcast slots (two int32) in shared memory
PREPASS_SMEM_SLOT_BYTES = 8
# ``prepass_sync="flags"``: one more 8-byte cell (the launch's generation, broadcast by thread 0)
PREPASS_FLAGS_SLOT_BYTES = 8
# ``y_tail64``: four int32 (the CTA's balanced share, computed by the producer warp, read by the
# consumers after phase 1's completion barrier)
TAIL64_SHARE_BYTES = 16
# stream_k: the share grows to eight int32 (kernel.hopper.kernel, streamk_setup: the range's two
# boundaries, the full list's length, the claim of the boundary the range ends in, the last
# piece's first K tile as the producer decided it)
STREAMK_SHARE_BYTES = 16
# stream_k: named barrier of the consumer warpgroups around a piece's partial (stored, then
# published by one thread; awaited by one thread, then loaded)
STREAMK_BARRIER_ID = 14
# ``smem_tables``: guard rows before and after each table in shared memory, and the most groups a
# build is sized for (kernel.validation.KernelConstraints.max_groups: the launch path refuses more)
SMEM_TABLE_GUARD_ROWS = 4
SMEM_TABLE_MAX_GROUPS = 64


def smem_table_words(num_groups: int) -> dict[str, int]:
    """``smem_tables``: elements of each shared table, guard rows included: the pointers (int64,
    5 a slot), the sizes (int32, 4 a slot) and the tile prefix (int32, G + 1 entries)."""
    g = SMEM_TABLE_GUARD_ROWS
    return {"pointers": 5 * (num_groups + 2 * g), "sizes": 4 * (num_groups + 2 * g), "prefix": num_groups + 1 + 2 * g}


def smem_table_bytes(config: HopperConfig, num_groups: int = SMEM_TABLE_MAX_GROUPS) -> int:
    """Shared bytes of the tables (``smem_tables``; 0 without), for ``num_groups`` groups: what
    the budget counts at the most groups a build takes (a build for fewer allocates less)."""
    if not config.smem_tables:
        return 0
    w = smem_table_words(num_groups)
    return (8 * w["pointers"] + 4 * (w["sizes"] + w["prefix"]) + 7) // 8 * 8


def dequant_buffer_bytes(config: HopperConfig) -> int:
    """fp16 operand buffers (X and Y), all copies: ``fp16_buffers`` x (X rows + Y rows x
    ``y_copies``) x 64 K x 2 B. The fastest tile (swapped 128x128, X in registers, 2 buffers):
    2 x 128 x 64 x 2 = 32768 B; with ``y_per_warpgroup`` (2 warpgroups) 65536 B, and with its 4
    raw stages of 36864 B (128 + 128 rows x 128 B + 2 x 2048 B scales) 147456 + 65536 + 64 B
    barriers + 3072 B alignment = 216128 B <= 232448: still 4 stages (5 would need 253008).
    ``y_source="prepass"``: the Y ring of 64-K fp16 TMA boxes, 16384 B a buffer; with 4 X stages
    of 18432 B (128 rows x 128 B + one 2048 B scale block) and 8 Y buffers: 73728 + 131072 +
    200 B barriers and claim slots + 3072 B alignment = 208072 B (9 buffers: 224456 B)."""
    x_rows = 0 if config.x_operand == "regs" else config.mma_m
    return config.fp16_buffers * (x_rows + config.mma_n * config.y_copies) * DEQUANT_SUB_K * 2


def _smem_bytes_before_staging(config: HopperConfig) -> dict[str, int]:
    barriers = 2 * config.num_ab_stages * 8
    if config.roles == "split" or config.y_source == "prepass":
        barriers += 2 * config.fp16_buffers * 8
    if config.y_source == "prepass":
        barriers += PREPASS_SMEM_SLOT_BYTES
    if config.prepass_sync == "flags":
        barriers += PREPASS_FLAGS_SLOT_BYTES
    if config.y_tail64:
        barriers += TAIL64_SHARE_BYTES
    if config.stream_k:
        barriers += STREAMK_SHARE_BYTES
    if config.y_cluster_decode:
        barriers += Y_CLUSTER_BARRIER_BYTES
    barriers += smem_table_bytes(config)
    raw = config.num_ab_stages * raw_stage_layout(config)["bytes"]
    dq = dequant_buffer_bytes(config)
    # barriers first, then three 1024-aligned regions (worst-case padding counted)
    total = barriers + 3 * SMEM_ALIGN + raw + dq
    out = {"barriers": barriers, "raw_stages": raw, "dequant_buffers": dq, "total": total}
    decoder = decoder_staging_bytes(config)
    if decoder:
        # prepass_decoders with prepass_store="staged": the decoder warps' item slots, a fourth
        # 1024-aligned region (the Y ring is in use while they decode)
        out["decoder_staging"] = decoder
        out["total"] += SMEM_ALIGN + decoder
    return out


def decoder_staging_bytes(config: HopperConfig) -> int:
    """``prepass_decoders`` > 0 with ``prepass_store="staged"``: one 32-slot item area per
    decoder warp (PREPASS_STAGED_WARP_BYTES); 0 otherwise."""
    if config.prepass_decoders and config.prepass_store == "staged":
        return config.prepass_decoders * PREPASS_STAGED_WARP_BYTES
    return 0


def epilogue_stage_bytes_for(config: HopperConfig, rows: int) -> int:
    """``epilogue="smem"``: bytes of the staging buffers for ``rows`` rows of C per pass: one
    buffer per consumer warpgroup of ``rows`` x 64 fp16 (128-byte rows)."""
    return config.consumer_warpgroups * rows * EPILOGUE_WG_COLS * 2


SMEM_PER_SM_BYTES = 233472  # sm_90: 228 KiB of shared memory per SM
SMEM_PER_CTA_OVERHEAD = 2048  # a CuTe DSL CTA: 1 KiB of static shared memory + 1 KiB the driver reserves


def phase1_launch_smem(config: HopperConfig) -> int:
    """``prepass_kernel_warps``: dynamic shared memory of one phase-1 CTA (the staged stores'
    32 item slots per warp, or none)."""
    if not config.prepass_kernel_warps or config.prepass_store != "staged":
        return 0
    return config.prepass_kernel_warps * PREPASS_STAGED_WARP_BYTES


def smem_capacity(config: HopperConfig) -> int:
    """Dynamic shared memory the GEMM's CTA may take: the per-block limit; with ``ctas_per_sm``
    > 1 that share of the SM (each CTA with its 2 KB), in whole KB; with ``prepass_kernel_warps``
    what leaves room for one phase-1 CTA on the same SM."""
    if config.ctas_per_sm > 1:
        return min(SMEM_CAPACITY_BYTES, (SMEM_PER_SM_BYTES - config.ctas_per_sm * SMEM_PER_CTA_OVERHEAD)
                   // config.ctas_per_sm // SMEM_ALIGN * SMEM_ALIGN)
    if not config.prepass_kernel_warps:
        return SMEM_CAPACITY_BYTES
    return min(SMEM_CAPACITY_BYTES, SMEM_PER_SM_BYTES - 2 * SMEM_PER_CTA_OVERHEAD - phase1_launch_smem(config))


def epilogue_stage_rows(config: HopperConfig) -> int:
    """``epilogue="smem"``: rows of C one staging pass holds (0 with ``epilogue="direct"``): the
    tile's ``mma_n`` rows (one pass) when that fits shared memory beside everything else, else
    ``mma_n / 2`` (two passes; the second skipped for a tile of at most that many rows), else
    ``mma_n / 4``; at least 16 (one ``stmatrix.x4`` per warp covers 16 rows). The fastest tile
    (183360 B before staging): 128 rows, 2 x 16384 B. The mixed-tail prepass tile (208088 B):
    64 rows, 2 x 8192 B (128 rows would need 241880 B > 232448)."""
    if config.epilogue != "smem":
        return 0
    before = _smem_bytes_before_staging(config)["total"]
    rows = config.mma_n
    while rows > 16 and before + SMEM_ALIGN + epilogue_stage_bytes_for(config, rows) > smem_capacity(config):
        rows //= 2
    return rows


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


def config_problems(config: HopperConfig) -> list[str]:
    """Every rule ``config`` breaks (empty when it can be built)."""
    p: list[str] = []
    if config.arch != "sm_90a":
        p.append(f"arch must be 'sm_90a', got {config.arch!r}")
    if config.tile_m not in (64, 128, 256):
        p.append(f"tile_m must be 64, 128 or 256, got {config.tile_m}")
    if config.tile_n not in (64, 128, 192, 256):
        p.append(f"tile_n must be 64, 128, 192 or 256, got {config.tile_n}")
    elif config.tile_n == 192 and not (config.swapped and config.consumer_warpgroups == 3):
        p.append("tile_n 192 is for swapped tiles with 3 consumer warpgroups (wgmma M side 3 x 64)")
    if config.tile_k not in (128, 256):
        p.append(f"tile_k must be 128 or 256, got {config.tile_k}")
    if config.consumer_warpgroups not in (1, 2, 3):
        p.append(f"consumer_warpgroups must be 1, 2 or 3, got {config.consumer_warpgroups}")
    elif config.consumer_warpgroups == 3 and (
        config.x_operand != "regs" or not (config.consumer_regs or config.y_source == "prepass")
    ):
        # y_source="prepass": the consumers decode X only (no Y decode), 416 threads at 128 registers
        p.append("3 consumer warpgroups need x_operand='regs' and consumer_regs (setmaxnreg) or y_source='prepass'")
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
    if config.schedule not in ("contiguous", "strided", "balanced", "snake"):
        p.append(f"schedule must be 'contiguous', 'strided', 'balanced' or 'snake', got {config.schedule!r}")
    if config.loader not in ("cp_async", "bulk_rows", "tma"):
        p.append(f"loader must be 'cp_async', 'bulk_rows' or 'tma', got {config.loader!r}")
    if config.loader == "tma" and config.tile_k != 256:
        p.append(f"loader='tma' needs tile_k 256 (128-byte rows for the 128-byte swizzle), got {config.tile_k}")
    if config.dequant not in ("shift", "prmt"):
        p.append(f"dequant must be 'shift' or 'prmt', got {config.dequant!r}")
    if config.roles not in ("cooperative", "split"):
        p.append(f"roles must be 'cooperative' or 'split', got {config.roles!r}")
    elif config.roles == "cooperative" and config.y_source != "prepass":
        if config.dequant_warpgroups != 0:
            p.append(f"dequant_warpgroups is for roles='split' only, got {config.dequant_warpgroups}")
        if config.y_cluster_decode is True:
            if config.fp16_buffers != Y_CLUSTER_BUFFERS:
                p.append(f"y_cluster_decode takes a ring of {Y_CLUSTER_BUFFERS} fp16 Y buffers, got {config.fp16_buffers}")
        elif config.wgmma_in_flight == 2:
            if config.fp16_buffers != 4:
                # group g + 1's buffer was last read by group g - 3: in_flight + 2 buffers
                p.append(f"wgmma_in_flight=2 takes 4 fp16 buffers (group g + 1's buffer last read by group g - 3), "
                         f"got {config.fp16_buffers}")
        elif config.fp16_buffers not in (2, 3):
            p.append(f"roles='cooperative' takes 2 or 3 fp16 buffers, got {config.fp16_buffers}")
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
        if config.loader == "bulk_rows":
            p.append("roles='split' does not take loader='bulk_rows'")
    if config.x_operand not in ("smem", "regs"):
        p.append(f"x_operand must be 'smem' or 'regs', got {config.x_operand!r}")
    elif config.x_operand == "regs":
        if config.loader != "tma" or config.dequant != "prmt":
            p.append("x_operand='regs' needs loader='tma' and dequant='prmt'")
        if config.mma_m != 64 * config.consumer_warpgroups:
            p.append(f"x_operand='regs' needs one 64-row wgmma A fragment per warpgroup (mma_m {config.mma_m})")
        if config.roles == "split":
            if config.dequant_warpgroups and (2 * config.mma_n) % config.dequant_threads:
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
        elif (2 * config.mma_n) % config.consumer_threads and not config.consumer_regs and config.y_source != "prepass":
            p.append(
                f"x_operand='regs' splits Y's {2 * config.mma_n} half-row units evenly over "
                f"{config.consumer_threads} consumer threads (mma_n {config.mma_n})"
            )
    if config.consumer_regs:
        if config.consumer_regs % 8 or not SETMAXNREG_MIN <= config.consumer_regs <= SETMAXNREG_MAX:
            p.append(f"consumer_regs must be a multiple of 8 in {SETMAXNREG_MIN}..{SETMAXNREG_MAX}, got {config.consumer_regs}")
        elif config.loader != "tma" or config.producer_warps != 1:
            p.append("consumer_regs (setmaxnreg) needs loader='tma' and producer_warps=1")
        elif config.roles == "split" and config.x_operand != "regs":
            p.append("consumer_regs with roles='split' needs x_operand='regs'")
        elif config.consumer_regs < config.launch_register_cap:
            p.append(
                f"consumer_regs {config.consumer_regs} below the launch cap {config.launch_register_cap} "
                "(setmaxnreg.inc cannot lower)"
            )
        elif config.roles == "split" and config.dequant_regs < SETMAXNREG_MIN:
            p.append(
                f"{config.consumer_threads} consumer threads x {config.consumer_regs} registers and the producer "
                f"warpgroup's {config.producer_regs} leave the dequant warpgroups {config.dequant_regs} per thread"
            )
        elif config.producer_regs < SETMAXNREG_MIN:
            p.append(
                f"{config.consumer_threads} consumer threads x {config.consumer_regs} registers leave the "
                f"producer warpgroup {config.producer_regs} per thread (< {SETMAXNREG_MIN})"
            )
    if not isinstance(config.y_per_warpgroup, bool):
        p.append(f"y_per_warpgroup must be a bool, got {config.y_per_warpgroup!r}")
    elif config.y_per_warpgroup:
        if config.roles != "cooperative" or config.x_operand != "regs" or config.fp16_buffers != NUM_DEQUANT_BUFFERS:
            p.append("y_per_warpgroup needs roles='cooperative', x_operand='regs' and 2 fp16 buffers")
        if config.consumer_warpgroups < 2:
            p.append("y_per_warpgroup needs 2 or 3 consumer warpgroups (one warpgroup already owns its Y)")
        if (2 * config.mma_n) % 128:
            p.append(f"y_per_warpgroup splits Y's {2 * config.mma_n} half-row units over 128 threads")
    if config.y_source not in ("smem_decode", "prepass"):
        p.append(f"y_source must be 'smem_decode' or 'prepass', got {config.y_source!r}")
    elif config.y_source == "prepass":
        if not config.swapped:
            p.append("y_source='prepass' needs swapped tiles (Y = A, the per-group M side, decoded once)")
        if config.roles != "cooperative" or config.x_operand != "regs":
            p.append("y_source='prepass' needs roles='cooperative' and x_operand='regs' (the consumers decode X only)")
        if config.loader != "tma" or config.dequant != "prmt":
            p.append("y_source='prepass' needs loader='tma' and dequant='prmt'")
        if config.y_per_warpgroup or config.consumer_regs:
            p.append("y_source='prepass' takes neither y_per_warpgroup nor consumer_regs")
        if config.schedule != "contiguous" and not (config.schedule == "balanced" and config.y_tail64) \
                and not (config.schedule == "snake" and config.y_tail16):
            p.append("y_source='prepass' is declared for schedule='contiguous' only (or 'balanced' with y_tail64, "
                     "'snake' with y_tail16)")
    if config.prepass_chunk not in PREPASS_CHUNK_SPLITS:
        p.append(f"prepass_chunk must be one of {PREPASS_CHUNK_SPLITS}, got {config.prepass_chunk!r}")
    if not isinstance(config.prepass_x_early, bool):
        p.append(f"prepass_x_early must be a bool, got {config.prepass_x_early!r}")
    if (config.prepass_chunk or config.prepass_x_early) and config.y_source != "prepass":
        p.append("prepass_chunk and prepass_x_early are for y_source='prepass' only")
    elif config.prepass_x_early and not config.prepass_chunk:
        p.append("prepass_x_early is built on the prepass_chunk phase 1 (prepass_chunk > 0)")
    if config.prepass_sync not in ("barrier", "flags"):
        p.append(f"prepass_sync must be 'barrier' or 'flags', got {config.prepass_sync!r}")
    elif config.prepass_sync == "flags" and (config.y_source != "prepass" or not config.prepass_chunk):
        p.append("prepass_sync='flags' is for y_source='prepass' with the prepass_chunk phase 1 (prepass_chunk > 0)")
    if config.cluster_x not in CLUSTER_SIZES or isinstance(config.cluster_x, bool):
        p.append(f"cluster_x must be one of {CLUSTER_SIZES}, got {config.cluster_x!r}")
    elif config.cluster_x != 1:
        if config.y_cluster_decode is True:
            pass  # its own rules below
        elif config.y_source != "prepass" or not config.prepass_chunk:
            # the multicast Y ring is built into the 14q producer (produce_prepass_q) only
            p.append("cluster_x > 1 needs y_source='prepass' and prepass_chunk > 0 (Y boxes multicast in a cluster)")
        if config.mma_n % (8 * config.cluster_x):
            p.append(f"cluster_x {config.cluster_x} splits each Y box's {config.mma_n} rows into whole 8-row swizzle atoms")
    if not isinstance(config.y_cluster_decode, bool):
        p.append(f"y_cluster_decode must be a bool, got {config.y_cluster_decode!r}")
    elif config.y_cluster_decode:
        p += _built_with("y_cluster_decode", config, cluster_x=2, y_source="smem_decode", x_operand="regs",
                         roles="cooperative", swapped=True, consumer_warpgroups=2, loader="tma", dequant="prmt",
                         y_per_warpgroup=False, consumer_regs=0)
        if config.mma_n * 2 != 128 * config.consumer_warpgroups:
            p.append(f"y_cluster_decode needs one Y unit per consumer thread a sub-block (mma_n 128), got mma_n "
                     f"{config.mma_n}")
    if config.y_cluster_copy not in Y_CLUSTER_COPIES:
        p.append(f"y_cluster_copy must be one of {Y_CLUSTER_COPIES}, got {config.y_cluster_copy!r}")
    elif config.y_cluster_copy != "st_async" and config.y_cluster_decode is not True:
        p.append(f"y_cluster_copy={config.y_cluster_copy!r} is for y_cluster_decode=True")
    if config.cluster_x != 1 and config.prepass_sync != "barrier":
        p.append("cluster_x > 1 is built with prepass_sync='barrier' only (flags and clusters not combined yet)")
    if not isinstance(config.y_tail64, bool):
        p.append(f"y_tail64 must be a bool, got {config.y_tail64!r}")
    elif config.y_tail64:
        if config.y_source != "prepass" or not config.prepass_chunk or (config.prepass_sync != "barrier"
                                                                        and not config.prepass_decoders
                                                                        and not config.prepass_kernel_warps):
            p.append("y_tail64 needs y_source='prepass', prepass_chunk > 0 and prepass_sync='barrier' "
                     "(or phase 1 beside phase 2: prepass_decoders > 0 or prepass_kernel_warps > 0)")
        if config.cluster_x != 1:
            p.append("y_tail64 is built without clusters (cluster_x=1)")
        if config.mma_n != 128 or config.mma_m not in (64, 128) or not config.swapped:
            p.append("y_tail64 halves a 128-row Y tile: swapped tiles with tile_m 128 and tile_n 128 "
                     "(or 64 with one consumer warpgroup)")
    if config.prepass_store not in ("direct", "staged"):
        p.append(f"prepass_store must be 'direct' or 'staged', got {config.prepass_store!r}")
    elif config.prepass_store == "staged":
        if config.y_source != "prepass" or not config.prepass_chunk or (config.prepass_sync != "barrier"
                                                                        and not config.prepass_decoders
                                                                        and not config.prepass_kernel_warps):
            p.append("prepass_store='staged' is built for y_source='prepass' with prepass_chunk > 0 and "
                     "prepass_sync='barrier' (or phase 1 beside phase 2: prepass_decoders > 0 or "
                     "prepass_kernel_warps > 0)")
        elif not config.prepass_decoders and not config.prepass_kernel_warps and (  # (their own region)
                (config.threads // 32) * PREPASS_STAGED_WARP_BYTES > config.fp16_buffers * y_box_tx_bytes(config)):
            p.append(f"prepass_store='staged' stages {PREPASS_STAGED_WARP_BYTES} bytes per warp in the Y ring: "
                     f"{config.threads // 32} warps need more than its {config.fp16_buffers} buffers")
    if not isinstance(config.prepass_lean_exit, bool):
        p.append(f"prepass_lean_exit must be a bool, got {config.prepass_lean_exit!r}")
    elif config.prepass_lean_exit and (config.y_source != "prepass" or not config.prepass_chunk
                                       or config.prepass_sync != "barrier" or config.cluster_x != 1):
        p.append("prepass_lean_exit trims phase 1's completion barrier: y_source='prepass', prepass_chunk > 0, "
                 "prepass_sync='barrier', cluster_x=1")
    if not isinstance(config.prepass_x_before, bool):
        p.append(f"prepass_x_before must be a bool, got {config.prepass_x_before!r}")
    elif config.prepass_x_before and not config.prepass_lean_exit:
        p.append("prepass_x_before is built on prepass_lean_exit")
    if not isinstance(config.prepass_decoders, int) or isinstance(config.prepass_decoders, bool) \
            or not 0 <= config.prepass_decoders <= PREPASS_DECODERS_MAX:
        p.append(f"prepass_decoders must be an int in 0..{PREPASS_DECODERS_MAX}, got {config.prepass_decoders!r}")
    elif config.prepass_decoders:
        if config.y_source != "prepass" or not config.prepass_chunk or config.prepass_sync != "flags":
            p.append("prepass_decoders (phase 1 in the background) needs y_source='prepass', prepass_chunk > 0 "
                     "and prepass_sync='flags' (the producer waits on readiness flags, not a barrier)")
        if config.cluster_x != 1 or config.exit_count_after or config.exit_map_early or config.exit_claim_first \
                or config.prepass_x_before:
            p.append("prepass_decoders is built without clusters and without the barrier exit's options "
                     "(prepass_lean_exit, prepass_x_before, prepass_count_after, prepass_map_early, "
                     "prepass_claim_first)")
        if config.y_tail64 and not config.prepass_split_warp:
            p.append("prepass_decoders with y_tail64 needs prepass_split_warp (the consumers wait for the "
                     "producer warp's split at the start: the warp search keeps that short)")
    if not isinstance(config.prepass_kernel_warps, int) or isinstance(config.prepass_kernel_warps, bool) \
            or not 0 <= config.prepass_kernel_warps <= PHASE1_KERNEL_WARPS_MAX:
        p.append(f"prepass_kernel_warps must be an int in 0..{PHASE1_KERNEL_WARPS_MAX}, got "
                 f"{config.prepass_kernel_warps!r}")
    elif config.prepass_kernel_warps:
        p += _built_with("prepass_kernel_warps (phase 1 in a launch of its own)", config, y_source="prepass",
                         cluster_x=1, prepass_lean_exit=False,
                         prepass_x_before=False, prepass_count_after=False, prepass_first_local=False,
                         prepass_decoders=0, pdl=False, smem_tables=False)
        if not config.prepass_chunk:
            p.append("prepass_kernel_warps is built on the chunked phase 1 (prepass_chunk > 0)")
        if config.prepass_kernel_trigger not in ("start", "late", "exit"):
            p.append(f"prepass_kernel_trigger must be 'start', 'late' or 'exit', got {config.prepass_kernel_trigger!r}")
    elif config.prepass_kernel_trigger != "late":
        p.append("prepass_kernel_trigger is prepass_kernel_warps's (phase 1 in a launch of its own)")
    if not isinstance(config.prepass_kernel_regs, int) or isinstance(config.prepass_kernel_regs, bool) \
            or config.prepass_kernel_regs not in range(24, PHASE1_KERNEL_REGS + 1, 8):
        p.append(f"prepass_kernel_regs must be a multiple of 8 in 24..{PHASE1_KERNEL_REGS}, got "
                 f"{config.prepass_kernel_regs!r}")
    elif config.prepass_kernel_regs != PHASE1_KERNEL_REGS and not config.prepass_kernel_warps:
        p.append("prepass_kernel_regs is prepass_kernel_warps's (phase 1 in a launch of its own)")
    if not isinstance(config.prepass_split_warp, bool):
        p.append(f"prepass_split_warp must be a bool, got {config.prepass_split_warp!r}")
    elif config.prepass_split_warp and (not config.y_tail64 or not config.prepass_chunk or config.prepass_lean_exit):
        p.append("prepass_split_warp is the balanced split's warp search alone: y_tail64 with prepass_chunk > 0, "
                 "without prepass_lean_exit (which searches with the warp already)")
    for name in ("prepass_count_after", "prepass_map_early", "prepass_claim_first"):
        value = getattr(config, name)
        if not isinstance(value, bool):
            p.append(f"{name} must be a bool, got {value!r}")
        elif value and (config.prepass_lean_exit or config.y_source != "prepass" or not config.prepass_chunk
                        or config.prepass_sync != "barrier" or config.cluster_x != 1):
            p.append(f"{name} is one change of the lean exit alone: y_source='prepass', prepass_chunk > 0, "
                     "prepass_sync='barrier', cluster_x=1, without prepass_lean_exit (which has it already)")
    if not isinstance(config.x_prefetch, bool):
        p.append(f"x_prefetch must be a bool, got {config.x_prefetch!r}")
    elif config.x_prefetch and (config.y_source != "prepass" or config.x_operand != "regs"
                                or config.roles != "cooperative"):
        p.append("x_prefetch is built for the prepass consumers (y_source='prepass', x_operand='regs', "
                 "roles='cooperative')")
    if config.epilogue not in ("direct", "smem"):
        p.append(f"epilogue must be 'direct' or 'smem', got {config.epilogue!r}")
    elif config.epilogue == "smem" and (not config.swapped or config.x_operand != "regs"):
        # swapped: a thread's accumulator pairs are adjacent rows of C, one stmatrix.trans row
        # each; x_operand="regs": one 64-row wgmma M slice (64 columns of C) per warpgroup
        p.append("epilogue='smem' is built for swapped tiles with x_operand='regs' (64 columns of C per consumer warpgroup)")
    if not isinstance(config.y_tail16, bool):
        p.append(f"y_tail16 must be a bool, got {config.y_tail16!r}")
    elif config.y_tail16:
        if config.y_source != "prepass" or not config.prepass_chunk or config.prepass_sync != "barrier":
            p.append("y_tail16 needs y_source='prepass', prepass_chunk > 0 and prepass_sync='barrier'")
        if config.cluster_x != 1 or config.y_tail64:
            p.append("y_tail16 is built without clusters and in place of y_tail64")
        if config.mma_n != 128 or config.mma_m != 128 or not config.swapped:
            p.append("y_tail16 cuts a 128-row Y tile: swapped tiles with tile_m 128 and tile_n 128")
    if not isinstance(config.y_row_pad, bool):
        p.append(f"y_row_pad must be a bool, got {config.y_row_pad!r}")
    elif config.y_row_pad and (config.y_source != "prepass" or not config.prepass_chunk
                               or config.prepass_sync != "barrier" or config.cluster_x != 1 or config.y_tail16):
        p.append("y_row_pad pads the workspace rows of the barrier prepass (prepass_chunk > 0, prepass_sync="
                 "'barrier', cluster_x 1, not y_tail16)")
    if not isinstance(config.prepass_first_local, bool):
        p.append(f"prepass_first_local must be a bool, got {config.prepass_first_local!r}")
    elif config.prepass_first_local and (
            config.y_source != "prepass" or not config.prepass_chunk
            or (config.prepass_sync != "barrier" and not config.prepass_decoders)
            or config.prepass_store != "staged" or config.cluster_x != 1 or config.y_tail16
            or config.prepass_lean_exit or config.prepass_x_before or config.prepass_count_after
            or config.prepass_map_early or config.prepass_claim_first):
        p.append("prepass_first_local is built on the barrier prepass with the staged phase 1 (prepass_chunk > 0, "
                 "prepass_sync='barrier', prepass_store='staged', cluster_x 1, not y_tail16) and none of the lean "
                 "exit's changes but prepass_split_warp, or on the background phase 1 (prepass_decoders > 0)")
    if config.first_local_tiles not in (1, 2) or isinstance(config.first_local_tiles, bool):
        p.append(f"first_local_tiles must be 1 or 2, got {config.first_local_tiles!r}")
    elif config.first_local_tiles != 1 and not config.prepass_first_local:
        p.append("first_local_tiles is prepass_first_local's count of K tiles")
    elif config.prepass_first_local and config.first_local_tiles * (config.tile_k // 64) > config.fp16_buffers:
        p.append(f"prepass_first_local decodes {config.first_local_tiles} K tiles into the Y ring: "
                 f"{config.first_local_tiles * (config.tile_k // 64)} buffers, the ring has {config.fp16_buffers}")
    if not isinstance(config.pdl, bool):
        p.append(f"pdl must be a bool, got {config.pdl!r}")
    if not isinstance(config.smem_tables, bool):
        p.append(f"smem_tables must be a bool, got {config.smem_tables!r}")
    n_sub = config.tile_k // 64
    if config.wgmma_in_flight not in (1, 2) or isinstance(config.wgmma_in_flight, bool):
        p.append(f"wgmma_in_flight must be 1 or 2, got {config.wgmma_in_flight!r}")
    elif config.wgmma_in_flight == 2 and config.y_source == "prepass":
        # the prepass consumers (consume_x_regs_y_ring): a Y box is released once the group two
        # sub-blocks later has been issued and the one that read it retired
        p += _built_with("wgmma_in_flight=2 with y_source='prepass'", config, roles="cooperative", x_operand="regs",
                         x_prefetch=False, cluster_x=1, y_tail16=False)
        if config.fp16_buffers < 4:
            p.append(f"wgmma_in_flight=2 with y_source='prepass' needs a Y ring of 4 or more buffers (two in flight, "
                     f"one waited for, one filling), got {config.fp16_buffers}")
    elif config.wgmma_in_flight == 2:
        p += _built_with("wgmma_in_flight=2", config, roles="cooperative", y_source="smem_decode", x_operand="regs",
                         y_per_warpgroup=False, y_cluster_decode=False)
        if config.fp16_buffers > 0 and n_sub % config.fp16_buffers:
            p.append(f"wgmma_in_flight=2 indexes its {config.fp16_buffers} fp16 buffers by the sub-block (tile_k "
                     f"256), got tile_k {config.tile_k}")
    if not isinstance(config.consumer_stagger, int) or isinstance(config.consumer_stagger, bool) \
            or not 0 <= config.consumer_stagger <= n_sub:
        p.append(f"consumer_stagger must be an int in 0..{n_sub} (sub-blocks of one K tile), got "
                 f"{config.consumer_stagger!r}")
    elif config.consumer_stagger:
        p += _built_with("consumer_stagger", config, y_source="prepass", x_operand="regs", roles="cooperative",
                         consumer_warpgroups=2, cluster_x=1, prepass_decoders=0, prepass_first_local=False,
                         x_prefetch=False)
        if not config.prepass_chunk:
            p.append("consumer_stagger is built on the chunked prepass (prepass_chunk > 0)")
        if not n_sub <= config.fp16_buffers <= 2 * n_sub:
            # at least one K tile's boxes (warpgroup 0 reaches its L-th sub-block before warpgroup
            # 1 releases any), at most two (the two barrier ids suffice)
            p.append(f"consumer_stagger needs {n_sub}..{2 * n_sub} Y buffers (one to two K tiles' sub-blocks), "
                     f"got {config.fp16_buffers}")
    if config.y_tail16_step not in (16, 32, 64, 128) or isinstance(config.y_tail16_step, bool):
        p.append(f"y_tail16_step must be 16, 32, 64 or 128, got {config.y_tail16_step!r}")
    elif config.y_tail16_step != 16 and not config.y_tail16:
        p.append("y_tail16_step is y_tail16's wgmma N step")
    if (config.schedule == "snake") != (config.y_tail16 is True):
        p.append("schedule='snake' and y_tail16 go together (the snake deals the tiles by their wgmma N)")
    if (config.schedule == "balanced") != (config.y_tail64 is True):
        p.append("schedule='balanced' and y_tail64 go together (the balanced split costs the 64-row tiles)")
    if config.ctas_per_sm not in CTAS_PER_SM or isinstance(config.ctas_per_sm, bool):
        p.append(f"ctas_per_sm must be one of {CTAS_PER_SM}, got {config.ctas_per_sm!r}")
    elif config.ctas_per_sm == 2:
        p += _built_with("ctas_per_sm=2", config, consumer_warpgroups=1, y_source="prepass", cluster_x=1,
                         prepass_kernel_warps=0, prepass_decoders=0, consumer_regs=0)
    if not isinstance(config.stream_k, bool):
        p.append(f"stream_k must be a bool, got {config.stream_k!r}")
    elif config.stream_k and (not config.y_tail64 or config.prepass_sync != "barrier" or config.prepass_kernel_warps
                              or config.prepass_decoders or config.prepass_first_local or config.y_tail16
                              or config.consumer_stagger or config.x_prefetch
                              or config.consumer_warpgroups != 2 or config.smem_tables):
        p.append("stream_k is built on the balanced prepass build (y_tail64, prepass_sync='barrier' inside the "
                 "launch, 2 consumer warpgroups) without prepass_kernel_warps, prepass_decoders, "
                 "prepass_first_local, consumer_stagger, x_prefetch or smem_tables")
    if config.num_ab_stages < 2:
        p.append(f"num_ab_stages must be >= 2, got {config.num_ab_stages}")
    if p:
        return p
    # wgmma: M is 64 per warpgroup instruction, N <= 256
    if config.mma_m not in (64, 128, 192):
        p.append(f"wgmma M side (mma_m={config.mma_m}) must be 64, 128 or 192")
    if config.mma_n > 256:
        p.append(f"wgmma N side (mma_n={config.mma_n}) must be <= 256")
    if config.consumer_warpgroups == 2 and config.mma_m != 128:
        p.append("2 cooperative consumer warpgroups need mma_m == 128 (64 rows each)")
    if config.consumer_warpgroups == 3 and config.mma_m != 192:
        p.append("3 cooperative consumer warpgroups need mma_m == 192 (64 rows each)")
    if config.acc_regs_per_thread > MAX_ACC_REGS_PER_THREAD:
        p.append(
            f"accumulator needs {config.acc_regs_per_thread} fp32 registers per thread "
            f"({config.mma_m}x{config.mma_n} over {config.consumer_threads} threads), "
            f"limit {MAX_ACC_REGS_PER_THREAD}"
        )
    need = config.acc_regs_per_thread + MMA_OVERHEAD_REGS
    if need > config.register_cap:
        p.append(
            f"{config.threads} threads leave {config.register_cap} registers per thread; the wgmma "
            f"warps need {config.acc_regs_per_thread} accumulators + {MMA_OVERHEAD_REGS} = {need}"
        )
    sm = smem_bytes(config)
    if sm["total"] > smem_capacity(config):
        raw_stage = raw_stage_layout(config)["bytes"]
        beside = (f" (the room beside a phase-1 CTA of {phase1_launch_smem(config)} B)"
                  if config.prepass_kernel_warps else "")
        p.append(
            f"shared memory {sm['total']} B > {smem_capacity(config)} B{beside}: {config.num_ab_stages} stages x "
            f"{raw_stage} B raw FP4+scales = {sm['raw_stages']} B, + {sm['dequant_buffers']} B fp16 "
            f"operand buffers ({config.fp16_buffers} x ({config.mma_m}+{config.mma_n}x{config.y_copies}) rows x "
            f"{DEQUANT_SUB_K} x 2 B), + {sm['barriers']} B barriers + {3 * SMEM_ALIGN} B alignment"
            + (f" + {sm['epilogue_staging']} B epilogue staging (16 rows of C, the least) + {SMEM_ALIGN} B alignment"
               if "epilogue_staging" in sm else "")
        )
    return p


def check_config(config: HopperConfig) -> None:
    problems = config_problems(config)
    if problems:
        raise UnsupportedConfigError(config.label, problems)


DEFAULT_CONFIG = HopperConfig()

# The fastest variant measured on the H200 (TMA loads, wgmma's A operand decoded into registers).
FASTEST_CONFIG = HopperConfig(
    tile_m=128, tile_n=128, tile_k=256, num_ab_stages=4, consumer_warpgroups=2, swapped=True,
    dequant="prmt", loader="tma", x_operand="regs",
)

# What the main job runs by default (at most three, PRODUCTION_VARIANTS below): DEFAULT_CONFIG
# (the simplest pipeline: the historical name of the mutant catalog's "default variant"), the
# fastest 2-warpgroup tile and the mixed 128/64-row prepass tile (MIXED_TAIL_CONFIG, below), both
# with C staged through shared memory, the prepass tile also with phase 1's runs staged (session
# 7) and its balanced split searched by the producer warp's 32 lanes (SPLIT_WARP_CONFIG, session
# 10). ``custom_kernel(data)`` without a config does not run DEFAULT_CONFIG: it runs the measured
# per-shape choice (kernel.hopper.dispatch.DEFAULT_TABLE), every one of which is a production
# variant; FASTEST_CONFIG, MIXED_TAIL_CONFIG, MIXED_TAIL_STAGED_CONFIG and PHASE1_STAGED_CONFIG
# are experimental now.
MIXED_TAIL_CONFIG = HopperConfig(
    tile_m=128, tile_n=128, tile_k=256, num_ab_stages=4, consumer_warpgroups=2, swapped=True,
    dequant="prmt", loader="tma", x_operand="regs", y_source="prepass", fp16_buffers=8, prepass_chunk=1,
    prepass_x_early=True, y_tail64=True, schedule="balanced",
)
# Their twins with C staged through shared memory (epilogue="smem", label "_es"): what the default
# dispatch runs since session 6 (one H200 run, bench_gpu, CUDA-graph replay: 133.7 / 75.9 / 32.7 us
# on bench1-3 for the mixed tile, 17.6 us on bench4 for the fastest tile, against 138.4 / 84.1 /
# 34.0 / 19.0 for the direct-store twins in session 5); both passed the ci property, each input
# distribution (400 examples), the gpu-long run (500) and the checked perturbed property there
FASTEST_STAGED_CONFIG = replace(FASTEST_CONFIG, epilogue="smem")
MIXED_TAIL_STAGED_CONFIG = replace(MIXED_TAIL_CONFIG, epilogue="smem")
# Session 7: the mixed-tail staged tile whose phase 1 stores whole 128-byte runs from shared
# memory (prepass_store="staged"): phase 1 alone 9.9 / 7.5 / 6.4 / 5.9 us instead of 20.1 / 9.4 /
# 8.6 / 5.9 (bench1-4, profiling.ablation phase1_only), the kernel 121.8 us on bench1 instead of
# 132.5 (bench_gpu, same run); it passed the ci property, each distribution (400 examples), the
# gpu-long run (500) and the checked perturbed property on the H200. It replaces
# MIXED_TAIL_STAGED_CONFIG (now experimental) in the default dispatch.
PHASE1_STAGED_CONFIG = replace(MIXED_TAIL_STAGED_CONFIG, prepass_store="staged")
# Session 8 (experimental): PHASE1_STAGED_CONFIG with phase 1's exit trimmed (prepass_lean_exit).
# Two H200 runs (profiling.ablation and bench_gpu in each): faster on the one-round shapes (bench3
# 30.4-30.8 us against 31.0-32.2, bench4 17.1-17.4 against 18.2-18.7 and the fastest tile's 17.6),
# slower on bench1/bench2 (+3 to +6 %, not explained: the main loop's SASS differs from
# production's in 5 instructions). It
# passed the ci property, the checked perturbed property, each input distribution (400 examples)
# and the gpu-long run (500). Not production: a second prepass build in PRODUCTION_VARIANTS took
# the H200 main job past its 300 s (killed at 360 s, every prepass build compiles once per group
# count); the way in is its exit as a run-time choice of PHASE1_STAGED_CONFIG's build for
# one-round schedules (kernel/hopper/NOTES.md, session 8).
LEAN_EXIT_CONFIG = replace(PHASE1_STAGED_CONFIG, prepass_lean_exit=True)
# ... and the split and the first X stages before phase 1 (prepass_x_before)
X_BEFORE_CONFIG = replace(LEAN_EXIT_CONFIG, prepass_x_before=True)
# Session 9: PHASE1_STAGED_CONFIG with the balanced split searched by the producer warp's 32
# lanes (prepass_split_warp), nothing else of the lean exit. Production since session 10 in
# PHASE1_STAGED_CONFIG's place (still one prepass build): one H200 bench_gpu run (session 9),
# 121.0 / 75.1 / 30.7 / 18.3 us on bench1-4 against 122.4 / 74.5 / 31.7 / 18.7 for
# PHASE1_STAGED_CONFIG (bench2 0.8 % slower, the others faster); it passed the ci property and
# synccheck / racecheck there. Each distribution, gpu-long and the prod sync mutants run on it in
# session 10 (results: kernel/hopper/NOTES.md). PHASE1_STAGED_CONFIG is experimental now.
SPLIT_WARP_CONFIG = replace(PHASE1_STAGED_CONFIG, prepass_split_warp=True)
# ... and each of the lean exit's other three changes on top of it (which one cost bench1/bench2)
COUNT_AFTER_CONFIG = replace(SPLIT_WARP_CONFIG, prepass_count_after=True)
MAP_EARLY_CONFIG = replace(SPLIT_WARP_CONFIG, prepass_map_early=True)
CLAIM_FIRST_CONFIG = replace(SPLIT_WARP_CONFIG, prepass_claim_first=True)
# Session 10 (experimental): SPLIT_WARP_CONFIG with phase 1 in the background: three decoder
# warps of its own decode Y K-chunk-major behind readiness flags while phase 2 runs (no completion
# barrier); the epilogue's staging shrinks to 32 rows a pass to make room for the decoders' slots.
# Its twin with a 7-box Y ring keeps the 64-row epilogue passes
BACKGROUND_CONFIG = replace(SPLIT_WARP_CONFIG, prepass_sync="flags", prepass_decoders=3)
BACKGROUND_B7_CONFIG = replace(BACKGROUND_CONFIG, fp16_buffers=7)
# Session 10 (experimental): the production prepass build with every tile's wgmma N its Y rows
# rounded up to 16 and the snake schedule (kernel.plan) in place of the 128/64-row tiles and the
# balanced split (the split's warp search goes with the balanced split)
TAIL16_CONFIG = replace(PHASE1_STAGED_CONFIG, y_tail64=False, y_tail16=True, schedule="snake")
# Session 11 (experimental): the production prepass build with each group's workspace rows padded
# to 64 with zero rows, so the MMA work past a group's M multiplies zeros (less power). H200:
# correct; -2 % on bench1 / bench2 run back to back at the power cap, no gain in the benchmark
ZERO_PAD_CONFIG = replace(SPLIT_WARP_CONFIG, y_row_pad=True)
# Session 11 (experimental): the production prepass build with each CTA's first K tile of Y
# decoded by the CTA itself into its Y ring, phase 1's completion awaited only before the first
# workspace box (prepass_first_local). H200: correct (smoke, ci property, synccheck / racecheck),
# slower on every shape (138.6 / 87.4 / 35.1 / 20.3 us against 124.4 / 75.0 / 31.3 / 19.1)
FIRST_LOCAL_CONFIG = replace(SPLIT_WARP_CONFIG, prepass_first_local=True)
# Session 12 (experimental): the background phase 1 with the first tile's first K tile (two K
# tiles: the "h2" twin) decoded by the consumer warps at once: nothing of phase 1 before the
# first wgmma, the producer's flag wait from the first workspace box on. H200: correct (smoke, ci
# property), slower (127.1 / 81.3 / 33.0 / 18.8 us against production's 123.3 / 74.1 / 30.9 / 17.7)
BACKGROUND_LOCAL_CONFIG = replace(BACKGROUND_CONFIG, prepass_first_local=True)
# (neither it nor its two-K-tile twin, measured slower still, is declared: every declared variant is
# compiled by the CPU tests; `profiling.ablation --config` builds them from their fields)
BACKGROUND_LOCAL2_CONFIG = replace(BACKGROUND_CONFIG, prepass_first_local=True, first_local_tiles=2)
# Session 12: the two builds of the default dispatch with programmatic dependent launch
SPLIT_WARP_PDL_CONFIG = replace(SPLIT_WARP_CONFIG, pdl=True)
FASTEST_STAGED_PDL_CONFIG = replace(FASTEST_STAGED_CONFIG, pdl=True)
# Session 13: the default dispatch's builds with the device tables in shared memory
SPLIT_WARP_ST_CONFIG = replace(SPLIT_WARP_CONFIG, smem_tables=True)
FASTEST_STAGED_PDL_ST_CONFIG = replace(FASTEST_STAGED_PDL_CONFIG, smem_tables=True)
# Session 13 (experimental): bench4's build with Y decoded once per 2-CTA cluster (half a sub-block's
# Y per CTA on average, stored into both CTAs), 3 raw stages (4 Y buffers and 4 stages do not fit;
# bench4 measured alike with 2 to 5 stages in session 12)
CLUSTER_Y_CONFIG = replace(FASTEST_STAGED_PDL_CONFIG, cluster_x=2, y_cluster_decode=True, fp16_buffers=4,
                           num_ab_stages=3)
# Session 14: the same with the peer's copy sent by one cp.async.bulk per sub-block
# (y_cluster_copy="bulk", label "..._c2db_...") instead of every thread's st.async stores
CLUSTER_Y_BULK_CONFIG = replace(CLUSTER_Y_CONFIG, y_cluster_copy="bulk")
# Session 15 (not declared): the production prepass build with its two consumer warpgroups kept
# two sub-blocks out of step (consumer_stagger, label suffix "_lag2"), so their epilogues do not
# leave the tensor cores idle together. H200: bit-identical, ci property passed; lags 1-4 no
# faster (122.8 / 73.3 / 29.9 / 17.2 us at lag 2 against 122.1 / 71.7 / 29.9 / 17.2): the
# epilogue is 0.3-3.4 us of the prepass build (its no_epilogue ablation)
STAGGER_CONFIG = replace(SPLIT_WARP_CONFIG, consumer_stagger=2)
# Session 15: bench4's build with two wgmma groups in flight while the warps decode the next
# sub-block (wgmma_in_flight=2, 4 fp16 Y buffers, one barrier per sub-block; 3 raw stages: 4 with
# the 4 buffers leave 16-row epilogue passes)
IN_FLIGHT_CONFIG = replace(FASTEST_STAGED_PDL_CONFIG, fp16_buffers=4, wgmma_in_flight=2, num_ab_stages=3)
# Session 15 (not declared): the production prepass build with two wgmma groups in flight (its Y
# boxes released two sub-blocks later). H200: bit-identical, ci property passed; k_slope on bench4
# 8.99 + 1.348 us per 256 K against 8.92 + 1.354, bench_gpu 126.4 / 74.9 / 31.3 / 17.8 against
# 125.0 / 77.1 / 30.7 / 17.4: its tensor pipe is fed already
SPLIT_WARP_W2_CONFIG = replace(SPLIT_WARP_CONFIG, wgmma_in_flight=2)
# Session 16: the production prepass build with phase 1 in a launch of its own, 4 warps per CTA,
# beside the GEMM's CTAs (prepass_kernel_warps; direct stores: that launch has no shared memory)
PHASE1_KERNEL_CONFIG = replace(SPLIT_WARP_CONFIG, prepass_store="direct", prepass_kernel_warps=4)
# ... with phase 1's staged stores (its 4 warps' item slots: 16 KB, so the GEMM takes 3 raw stages
# and stages C in 64-row passes)
PHASE1_KERNEL_STAGED_CONFIG = replace(SPLIT_WARP_CONFIG, num_ab_stages=3, prepass_kernel_warps=4)
# ... and each with the next launch let in at the GEMM's start or at its completion instead
PHASE1_KERNEL_START_CONFIG = replace(PHASE1_KERNEL_CONFIG, prepass_kernel_trigger="start")
PHASE1_KERNEL_EXIT_CONFIG = replace(PHASE1_KERNEL_CONFIG, prepass_kernel_trigger="exit")
PHASE1_KERNEL_STAGED_EXIT_CONFIG = replace(PHASE1_KERNEL_STAGED_CONFIG, prepass_kernel_trigger="exit")
# issue 14, session 18: the production prepass build with stream-K over its balanced lists
# (``..._prec1xsw_t64_sk_es``; kernel.plan, streamk_*)
STREAM_K_CONFIG = replace(SPLIT_WARP_CONFIG, stream_k=True)
# issue 14, session 19: the production prepass build as two CTAs per SM (ctas_per_sm=2, label
# "..._cta2"): one consumer warpgroup each (an X 64 x Y 128 tile), 3 X stages, a Y ring of 4 boxes
# (one K tile) and C staged in 64-row passes: 108680 B of shared memory and 161 registers (ptxas,
# .minnctapersm 2), so two fit on an SM. Ten warps per SM instead of nine, each CTA's Y ring its own
TWO_CTA_CONFIG = replace(SPLIT_WARP_CONFIG, tile_n=64, consumer_warpgroups=1, ctas_per_sm=2, num_ab_stages=3,
                         fp16_buffers=4)
# Session 17: the own launch at fewer registers per phase-1 thread (does the GEMM's CTA start
# beside it only with room to spare on the fullest sub-partition?)
PHASE1_KERNEL_R48_CONFIG = replace(PHASE1_KERNEL_EXIT_CONFIG, prepass_kernel_regs=48)
PHASE1_KERNEL_R40_CONFIG = replace(PHASE1_KERNEL_EXIT_CONFIG, prepass_kernel_regs=40)
# Session 17: the same with readiness flags (the GEMM's producer waits per K chunk, not for the
# phase-1 grid): direct stores at 4 raw stages, and the staged stores at 3
PHASE1_FLAGS_CONFIG = replace(PHASE1_KERNEL_EXIT_CONFIG, prepass_sync="flags")
PHASE1_FLAGS_STAGED_CONFIG = replace(PHASE1_KERNEL_STAGED_EXIT_CONFIG, prepass_sync="flags")
# Local memory a declared variant may use (bytes of spill stores, why); every other variant uses
# none. kernel/tests/test_hopper_compile.py holds each to its figure and checks that no spill
# store or load sits between the kernel's first and last wgmma (none in the K loop).
SPILL_ALLOWANCE: dict[str, tuple[int, str]] = {
    TAIL16_CONFIG.label: (4, "one epilogue address (the staged epilogue's column offset, per thread) held across the "
                             "tile loop at the 168-register cap with eight wgmma branches: stored once before the "
                             "tile loop, loaded once per tile after its K loop"),
    IN_FLIGHT_CONFIG.label: (12, "three epilogue values held across the tile's K loop at the 168-register cap with "
                                 "three X fragments live: stored before the K loop, loaded after its last wgmma"),
}
# Session 7 (experimental): the next sub-block's raw X bytes and Y box waited for before the
# wgmma wait (measured: no gain beyond noise)
X_PREFETCH_CONFIG = replace(MIXED_TAIL_STAGED_CONFIG, x_prefetch=True)
PRODUCTION_VARIANTS: tuple[HopperConfig, ...] = (
    DEFAULT_CONFIG,
    # session 15: the bench4 build with two wgmma groups in flight (wgmma_in_flight=2; in place
    # of session 12's FASTEST_STAGED_PDL_CONFIG, now experimental): 16.56 / 16.48 us against
    # 17.15 / 16.90 in two H200 runs (kernel/hopper/dispatch.py)
    IN_FLIGHT_CONFIG,
    SPLIT_WARP_CONFIG,
)

_DECLARED_MATRIX: tuple[HopperConfig, ...] = (
    DEFAULT_CONFIG,  # 128x128, 3 stages, 1 consumer warpgroup
    HopperConfig(tile_k=128, num_ab_stages=5),
    HopperConfig(tile_n=256, consumer_warpgroups=2, num_ab_stages=2),
    HopperConfig(tile_n=256, tile_k=128, consumer_warpgroups=2, num_ab_stages=3),
    HopperConfig(tile_m=64, tile_n=128, swapped=True, num_ab_stages=4),
    HopperConfig(tile_m=64, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4),
    HopperConfig(tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=3),
    HopperConfig(operand_exp_shift=0),
    HopperConfig(loader="bulk_rows"),
    HopperConfig(tile_n=256, consumer_warpgroups=2, num_ab_stages=2, loader="bulk_rows"),
    # issue 7: the byte-permute decode on the best tile shape of each benchmark shape
    HopperConfig(dequant="prmt"),
    HopperConfig(tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=3, dequant="prmt"),
    HopperConfig(tile_n=256, consumer_warpgroups=2, num_ab_stages=2, dequant="prmt"),
    # issue 7: dequant warpgroups decoupled from the wgmma warpgroups (roles="split")
    HopperConfig(dequant="prmt", roles="split", dequant_warpgroups=1, fp16_buffers=3),
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=3, dequant="prmt",
        roles="split", dequant_warpgroups=2, fp16_buffers=3, producer_warps=4,
    ),
    # issue 7: four producer warps (the one-warp loader alone took 60 % of the kernel's time)
    HopperConfig(tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, dequant="prmt", producer_warps=4),
    HopperConfig(tile_n=256, consumer_warpgroups=2, num_ab_stages=2, dequant="prmt", producer_warps=4),
    # issue 7: TMA loads (one 2-D box per operand and stage, per-group tensor maps)
    HopperConfig(tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma"),
    HopperConfig(tile_n=256, consumer_warpgroups=2, num_ab_stages=2, dequant="prmt", loader="tma"),
    HopperConfig(num_ab_stages=4, dequant="prmt", loader="tma"),
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=3, dequant="prmt", loader="tma",
        roles="split", dequant_warpgroups=2, fp16_buffers=3,
    ),
    # issue 7: wgmma's A operand decoded straight into registers (no fp16 X in shared memory),
    # and three fp16 buffers with one barrier per sub-block
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs",
    ),
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", fp16_buffers=3,
    ),
    # issue 14: setmaxnreg (a register-light producer warpgroup) so that 3 consumer warpgroups
    # (16 warps per SM instead of 9) fit: wgmma M side 192 (N), 128 or 64 (M) on the other
    HopperConfig(
        tile_m=128, tile_n=192, tile_k=256, num_ab_stages=4, consumer_warpgroups=3, swapped=True, dequant="prmt",
        loader="tma", x_operand="regs", consumer_regs=160,
    ),
    HopperConfig(
        tile_m=64, tile_n=192, tile_k=256, num_ab_stages=4, consumer_warpgroups=3, swapped=True, dequant="prmt",
        loader="tma", x_operand="regs", consumer_regs=160,
    ),
    # issue 14: the fastest variant with setmaxnreg alone (consumers 232 registers, producer 40)
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", consumer_regs=232,
    ),
    # issue 14c: Y decoded by its own warpgroup(s) into an fp16 ring (roles="split"), X still
    # decoded by the wgmma warpgroups into registers: the consumers no longer wait at named
    # barriers for Y (the "no_y_sync" ablation of the fastest variant ran 1.3-1.5x faster)
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", roles="split", dequant_warpgroups=1, fp16_buffers=4, consumer_regs=168,
    ),
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", roles="split", dequant_warpgroups=2, fp16_buffers=4, consumer_regs=152,
    ),
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", roles="split", dequant_warpgroups=1, fp16_buffers=4,
    ),
    # ... on a 192 (N) x 128 (M) tile with 3 consumer warpgroups: Y decoded once per 192 columns
    HopperConfig(
        tile_m=128, tile_n=192, swapped=True, consumer_warpgroups=3, num_ab_stages=3, dequant="prmt", loader="tma",
        x_operand="regs", roles="split", dequant_warpgroups=1, fp16_buffers=4, consumer_regs=120,
    ),
    # issue 14b (experimental): the fastest variant with a Y ring per consumer warpgroup
    # (y_per_warpgroup): 128-thread barriers, the two warpgroups no longer in lock-step
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", y_per_warpgroup=True,
    ),
    # ... and with setmaxnreg (consumers 232 registers): the _ywg consumers sit at the 168 cap
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", y_per_warpgroup=True, consumer_regs=232,
    ),
    # issue 14p (experimental; H200: 146.1 / 96.1 / 37.1 / 23.1 us vs 170.8 / 110.2 / 36.4 / 18.3 for the fastest): Y decoded
    # once per call into a global fp16 workspace (phase 1 of the same launch), then TMA-loaded as
    # fp16 64-K boxes into an 8-buffer ring; no named barriers in the tile loop
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", y_source="prepass", fp16_buffers=8,
    ),
    # issue 14q (experimental, not yet run on a GPU): phase 1 with run-time chunks (every CTA
    # gets work on small problems, each thread's loads issued together, the next chunk claimed
    # while the current one decodes) and the first tile's X stages issued before phase 1's
    # completion barrier; without the early X stages (to tell the two apart); and on the
    # 192 (N) x 128 (M) tile with 3 consumer warpgroups (Y L2 traffic per FLOP / 1.5)
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", y_source="prepass", fp16_buffers=8, prepass_chunk=1, prepass_x_early=True,
    ),
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", y_source="prepass", fp16_buffers=8, prepass_chunk=1,
    ),
    HopperConfig(
        tile_m=128, tile_n=192, swapped=True, consumer_warpgroups=3, num_ab_stages=3, dequant="prmt", loader="tma",
        x_operand="regs", y_source="prepass", fp16_buffers=8, prepass_chunk=1, prepass_x_early=True,
    ),
    # issue 14 (experimental, session 4): Y tiles of 64 rows (wgmma N = 64). M padding on the ragged
    # per-group M: bench1 1408 -> 1216 rows for 1024, bench2 1664 -> 1344; with the 128-row X tile
    # that is 2.5 instead of 3 full-tile rounds on bench1 and 4.5 instead of 6 on bench2. Prepass
    # only (16 or 8 fp16 Y buffers of 8 KB): the per-tile Y decode cannot split 64 rows over 256 threads
    HopperConfig(
        tile_m=64, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", y_source="prepass", fp16_buffers=16, prepass_chunk=1, prepass_x_early=True,
    ),
    HopperConfig(
        tile_m=64, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", y_source="prepass", fp16_buffers=8, prepass_chunk=1, prepass_x_early=True,
    ),
    # issue 14 (experimental, session 4; H200: slower than the barrier twins, PERF_LOG): the two prec1x prepass variants with
    # per-(Y block, 256-K chunk) readiness flags instead of phase 1's grid barrier (prepass_sync):
    # phase 1 K-chunk-major, the producer acquire-waits per Y block and K chunk, so a CTA's first
    # stages wait only for the first K chunk of its own Y block (one-round shapes: bench3, bench4)
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", y_source="prepass", fp16_buffers=8, prepass_chunk=1, prepass_x_early=True,
        prepass_sync="flags",
    ),
    HopperConfig(
        tile_m=64, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", y_source="prepass", fp16_buffers=16, prepass_chunk=1, prepass_x_early=True,
        prepass_sync="flags",
    ),
    # issue 14 (experimental, session 4): the best prepass variant (_prec1x,
    # H200 144.7 / 93.0 / 34.2 / 19.5 us, L2-bound: Y is ~650 of ~810 MB of L2 traffic on bench1)
    # in 2-CTA clusters along N, each fp16 Y box loaded half by each CTA and multicast to both
    # (Y's L2 traffic halved); with the 8-buffer Y ring, and with 9 (the most that fits)
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", y_source="prepass", fp16_buffers=8, prepass_chunk=1, prepass_x_early=True, cluster_x=2,
    ),
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", y_source="prepass", fp16_buffers=9, prepass_chunk=1, prepass_x_early=True, cluster_x=2,
    ),
    # issue 14, session 5 (experimental, not yet run on a GPU): the best prepass variant (_prec1x)
    # with mixed Y tiles: a group's last Y block of <= 64 rows runs as a 64-row tile (wgmma N = 64,
    # ~0.75 of a 128-row tile's time), chosen per tile at run time, and a cost-balanced schedule
    # (kernel.plan, schedule="balanced"): bench1 3 -> 2.75 rounds, bench2 6 -> 5
    HopperConfig(
        tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
        x_operand="regs", y_source="prepass", fp16_buffers=8, prepass_chunk=1, prepass_x_early=True,
        y_tail64=True, schedule="balanced",
    ),
    # issue 14, session 6 (production since the H200 runs above; the mixed tile's twin gave its
    # place to PHASE1_STAGED_CONFIG in session 7): the two variants of the old
    # default dispatch (FASTEST_CONFIG, MIXED_TAIL_CONFIG) with C staged through shared memory
    # (epilogue="smem", label "_es"): stmatrix.trans into a per-warpgroup staging buffer, then
    # coalesced 16-byte stores, instead of predicated scalar 2-byte stores from the accumulators
    # (the swapped tile's stores touch ~32 rows of C per warp instruction). The fastest tile
    # stages all 128 rows of C at once (+32 KB); the mixed-tail tile 64 at a time (+16 KB, a light
    # tile one pass)
    FASTEST_STAGED_CONFIG,
    MIXED_TAIL_STAGED_CONFIG,
    # issue 14, session 7: the mixed-tail staged tile with the next sub-block's raw X bytes and Y
    # box waited for before the wgmma wait, the decode (ALU only) free to move above it
    # (x_prefetch, label "_xp"; experimental: no gain measured)
    X_PREFETCH_CONFIG,
    # issue 14, session 7: the mixed-tail staged tile whose phase 1 stages each decoded item in
    # shared memory and stores whole 128-byte runs per warp instruction (prepass_store="staged",
    # label "..._prec1xs_..."; production since the H200 runs in PERF_LOG)
    PHASE1_STAGED_CONFIG,
    # issue 14, session 8: the same with phase 1's exit trimmed (prepass_lean_exit, label
    # "..._prec1xsl_..."): the count-through after the CTA barrier, the workspace map acquired
    # before it, the balanced split searched by the producer warp's 32 lanes together, thread
    # 0's first claim before anything else and chunk blockIdx's first items prefetched into L2
    # while it is in flight; and its twin with the split and the first X stages before phase 1
    LEAN_EXIT_CONFIG,
    X_BEFORE_CONFIG,
    # issue 14, session 9: the production prepass build with only the split's warp search
    # (prepass_split_warp, label "..._prec1xsw_..."), and with each of the lean exit's other
    # changes on top ("..._prec1xswt_...", "..._prec1xswm_...", "..._prec1xswq_...")
    SPLIT_WARP_CONFIG,
    COUNT_AFTER_CONFIG,
    MAP_EARLY_CONFIG,
    CLAIM_FIRST_CONFIG,
    BACKGROUND_CONFIG,
    BACKGROUND_B7_CONFIG,
    TAIL16_CONFIG,
    # issue 14, session 11: the production prepass build with zero rows past each group's M in
    # the workspace (y_row_pad, label "..._prec1xswz_...")
    ZERO_PAD_CONFIG,
    # issue 14, session 11: the production prepass build with phase 1 behind the first K tile
    # (prepass_first_local, label "..._prec1xswh_...")
    FIRST_LOCAL_CONFIG,
    # issue 14, session 12: bench4's build with programmatic dependent launch (label suffix
    # "_pdl"; production). The prepass build's pdl twin (SPLIT_WARP_PDL_CONFIG, bench2 +4 %) and
    # the background build with a local first K tile (BACKGROUND_LOCAL_CONFIG, slower) are not
    # declared: every declared variant is compiled by each CPU run of the static tests and their
    # mutants; `profiling.ablation --config` builds them from their fields
    FASTEST_STAGED_PDL_CONFIG,
    # issue 14, session 13: the default dispatch's two builds with the device tables in shared
    # memory (smem_tables, label suffix "_st")
    SPLIT_WARP_ST_CONFIG,
    FASTEST_STAGED_PDL_ST_CONFIG,
    # issue 14, session 13: bench4's build with Y decoded once per 2-CTA cluster
    # (y_cluster_decode, label "..._c2d_...")
    CLUSTER_Y_CONFIG,
    # issue 14, session 14: its peer copy by cp.async.bulk (label "..._c2db_...")
    CLUSTER_Y_BULK_CONFIG,
    # issue 14, session 16: the production prepass build with phase 1 in a launch of its own, its
    # stores staged, the next launch let in at the GEMM's completion (prepass_kernel_warps, label
    # "..._prec1xswk4e_..."): the fastest of the five measured (PHASE1_KERNEL_*_CONFIG), no faster
    # than production on bench1-3 nor than _w2 on bench4 (on the H200 the GEMM's CTAs do not run
    # beside phase 1's: kernel/hopper/NOTES.md, sessions 16-17)
    PHASE1_KERNEL_STAGED_EXIT_CONFIG,
    # issue 14, session 18: the production prepass build with stream-K over its balanced lists
    # (stream_k, label "..._t64_sk_es")
    STREAM_K_CONFIG,
    # issue 14, session 19: the production prepass build as two CTAs per SM (ctas_per_sm, label
    # "..._cta2")
    TWO_CTA_CONFIG,
    # (issue 14, session 17: the own-launch builds with readiness flags, PHASE1_FLAGS_CONFIG and
    # PHASE1_FLAGS_STAGED_CONFIG, measured correct and slower, are not declared:
    # kernel/tests/test_hopper_phase1_kernel.py compiles them)
    # (issue 14, session 15: the production prepass build with its consumer warpgroups out of
    # step, STAGGER_CONFIG, and with two wgmma groups in flight, SPLIT_WARP_W2_CONFIG, measured
    # correct and no faster, are not declared: kernel/tests/test_hopper_schedule.py compiles them)
)

# The rest of the declared matrix: run with --variant=all (or by label) and in nightly runs.
EXPERIMENTAL_VARIANTS: tuple[HopperConfig, ...] = tuple(c for c in _DECLARED_MATRIX if c not in PRODUCTION_VARIANTS)
DECLARED_VARIANTS: tuple[HopperConfig, ...] = PRODUCTION_VARIANTS + EXPERIMENTAL_VARIANTS

STATIC_MATRIX: tuple[HopperConfig, ...] = DECLARED_VARIANTS


def named_configs() -> dict[str, HopperConfig]:
    """Label -> config of every declared variant and of every config this module names without
    declaring it (measured builds: the session scripts, profiling.k_slope and ci.schedule_smoke
    take their labels too)."""
    named = [c for c in globals().values() if isinstance(c, HopperConfig)]
    return {c.label: c for c in list(DECLARED_VARIANTS) + named}


def phase1_inside_twin(config: HopperConfig) -> HopperConfig:
    """``prepass_kernel_warps`` > 0: the same build with phase 1 inside the GEMM's launch (the
    production build's staged stores): its results are the same bits."""
    return replace(config, prepass_kernel_warps=0, prepass_kernel_trigger=HopperConfig.prepass_kernel_trigger,
                   prepass_kernel_regs=HopperConfig.prepass_kernel_regs, prepass_store="staged",
                   prepass_sync="barrier")
