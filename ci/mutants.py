"""The mutant catalog: planted bugs, each a small, named, reversible edit of the real code.

A :class:`Mutant` is data: which file, the exact original text (it must occur exactly once in
that file: ``ci/test_mutants.py`` checks every entry, so the catalog cannot rot silently when
the code changes), its replacement, the subject whose tests must catch it and the pytest
selection that runs them. ``python -m ci.mutation_runner`` applies each one to a copy of the
repository and runs its selection there (see that module).

Subjects:

* ``model``: the CPU model (``kernel/model.py``), caught by the main property
  (``properties/test_subject_vs_oracle.py``) with ``--subject=model``;
* ``plan``: the shared host plan / device tables, caught by ``properties/test_plan_properties.py``
  (and, through the model that executes the plan, by the main property);
* ``host``: the shared host pipeline's fast path (``kernel/fast_path.py``), caught by the entry's
  calling-pattern property (``properties/test_entry_calling_pattern.py``) on the CPU model run
  through the host pipeline, with the Python probe;
* ``hopper``: the sm_90a kernel, needs an H200 (``--subject=hopper``); skipped on a CPU;
* ``hopper-static``: the sm_90a kernel compiled on the CPU, caught by the SASS ordering checks of
  ``kernel/tests/test_hopper_sync_sites.py`` (races the H200 runs need not show);
* ``blackwell-static``: the sm_100a kernel compiled on the CPU, caught by the compile tests and
  the SASS census assertions (``profiling/tests/test_static_blackwell.py``,
  ``kernel/tests/test_blackwell_sync_sites.py``);
* ``harness``: the harness itself (the oracle's bound, the checks every subject run goes
  through, input validation, a plan corner): caught on the CPU by the harness's own tests
  (``oracle/tests/test_bounds.py``, ``properties/test_check_mechanisms.py``,
  ``properties/test_breakages.py``, ``properties/test_plan_properties.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

SUBJECTS = ("model", "plan", "host", "hopper", "hopper-static", "blackwell-static", "harness")
CPU_SUBJECTS = ("model", "plan", "host", "hopper-static", "blackwell-static", "harness")

# the main property, run against the CPU model's default variant (it catches every model mutant;
# the suite itself runs the property on both declared model variants)
MODEL_PROPERTY = ["properties/test_subject_vs_oracle.py::test_subject_matches_oracle", "--subject=model",
                  "--variant=model-t128x128x256-contiguous-ctas8"]
PLAN_PROPERTIES = ["properties/test_plan_properties.py"]
# custom_kernel(data) called as callers do (values refilled in place, outputs swapped, tensors
# reallocated) on the CPU model through the host pipeline
ENTRY_PROPERTY = ["properties/test_entry_calling_pattern.py::test_entry_calling_pattern", "--subject=model"]
# one Hopper variant keeps the compiles (one per group count) within the device budget
HOPPER_VARIANT = "h90_m128n128k256_s3_wg1_fp16"
HOPPER_PROPERTY = [
    "properties/test_subject_vs_oracle.py::test_subject_matches_oracle",
    "--subject=hopper",
    f"--variant={HOPPER_VARIANT}",
]
# the sm_90a kernel compiled on the CPU: the dequant-buffer barrier rule of its SASS, on the
# default variant (one compile)
HOPPER_BUFFER_BARRIER = [
    "kernel/tests/test_hopper_sync_sites.py::test_barrier_before_a_dequant_buffer_is_rewritten[h90_m128n128k256_s3_wg1_fp16]",
]
# the sm_100a kernel compiled on the CPU: the synchronization sites of one variant per warp-role
# kernel; the SASS census of MMA and copy sites per K tile (one variant)
BLACKWELL_SYNC_SITES = ["kernel/tests/test_blackwell_sync_sites.py"]
BLACKWELL_MMA_SITES = [
    "profiling/tests/test_static_blackwell.py::test_mma_and_copy_sites_per_k_tile[bw-spec-t128x128x256-ab2-acc2]",
]
# the MMA issuer's stage waits: one rule, two compiles
BLACKWELL_MMA_WAITS = ["kernel/tests/test_blackwell_mma_waits.py"]


@dataclass(frozen=True)
class Mutant:
    name: str
    kind: str  # the kind of bug, in words
    target: str  # file, relative to the repository root
    original: str  # exact text, occurs exactly once in target
    replacement: str
    subject: str  # one of SUBJECTS
    select: tuple[str, ...] = field(default=())  # pytest arguments (paths, node ids, options)
    # concurrency / memory-safety mutants (ci.mutation_runner's three verdicts: plain and
    # perturbed properties, compute-sanitizer) run on this variant; "" for the others
    variant: str = ""

    @property
    def equivalent_because(self) -> str | None:
        """Why no test can catch this mutant (the compiled code is unchanged), or None."""
        return EQUIVALENT.get(self.name)

    @property
    def needs_gpu(self) -> bool:
        return self.subject == "hopper"

    def apply(self, root: Path) -> None:
        """Edit ``root/target`` in place (root is a copy of the repository, never the checkout)."""
        path = Path(root) / self.target
        text = path.read_text()
        count = text.count(self.original)
        if count != 1:
            raise ValueError(f"mutant {self.name}: original text occurs {count} times in {self.target}")
        path.write_text(text.replace(self.original, self.replacement, 1))

    def load(self, root: Path) -> ModuleType:
        """``root/target`` with the edit applied, executed as a new module object (the file is
        untouched; the module is in ``sys.modules`` only while it executes, as dataclasses need):
        a CPU test swaps one function of the real module for its mutated twin."""
        import sys

        path = Path(root) / self.target
        text = path.read_text()
        if text.count(self.original) != 1:
            raise ValueError(f"mutant {self.name}: original text occurs {text.count(self.original)} times in {self.target}")
        module = ModuleType(f"mutant_{self.name}")
        module.__file__ = str(path)
        sys.modules[module.__name__] = module
        try:
            exec(compile(text.replace(self.original, self.replacement, 1), str(path), "exec"), module.__dict__)
        finally:
            del sys.modules[module.__name__]
        return module


def _m(name, kind, target, original, replacement, subject, select):
    return Mutant(name, kind, target, original, replacement, subject, tuple(select))


MUTANTS: tuple[Mutant, ...] = (
    # ----------------------------------------------------------------------- CPU model
    _m(
        "model_m_residue_off_by_one",
        "off-by-one in the M residue predicate (last row of a ragged M tile not stored)",
        "kernel/model.py",
        "rows_a = torch.arange(m0, min(m0 + plan.tile_m, m))",
        "rows_a = torch.arange(m0, min(m0 + plan.tile_m, m - 1))",
        "model",
        MODEL_PROPERTY,
    ),
    _m(
        "model_n_residue_off_by_one",
        "off-by-one in the N residue predicate (last column of a ragged N tile not stored)",
        "kernel/model.py",
        "rows_b = torch.arange(n0, min(n0 + plan.tile_n, n))",
        "rows_b = torch.arange(n0, min(n0 + plan.tile_n, n - 1))",
        "model",
        MODEL_PROPERTY,
    ),
    _m(
        "model_scale_subblocks_swapped",
        "wrong scale-factor index map: the 32- and 4-row sub-blocks of the 128-row block swapped",
        "kernel/model.py",
        "[r % 32, (r % 128) // 32, r // 128, c % 4, c // 4, 0]",
        "[(r % 128) // 4, r % 4, r // 128, c % 4, c // 4, 0]",
        "model",
        MODEL_PROPERTY,
    ),
    _m(
        "model_last_k_tile_dropped",
        "last K tile dropped when K is not a multiple of the K tile (k // tile_k tiles)",
        "kernel/model.py",
        "for k0 in range(k_begin, k if k_end is None else min(k_end, k), plan.tile_k):",
        "for k0 in range(k_begin, (k if k_end is None else min(k_end, k)) - plan.tile_k + 1, plan.tile_k):",
        "model",
        MODEL_PROPERTY,
    ),
    _m(
        "model_accumulator_not_reset",
        "accumulate flag not reset between tiles of one CTA (accumulator carries over)",
        "kernel/model.py",
        "    acc.zero_()\n",
        "",
        "model",
        MODEL_PROPERTY,
    ),
    _m(
        "model_upper_nibble_sign_lost",
        "wrong decode of the upper nibble (its sign bit masked off)",
        "kernel/model.py",
        "codes = torch.stack((raw & 0xF, raw >> 4), dim=-1)",
        "codes = torch.stack((raw & 0xF, (raw >> 4) & 0x7), dim=-1)",
        "model",
        MODEL_PROPERTY,
    ),
    _m(
        "model_scale_per_32",
        "scale applied per 32 elements instead of per 16 (every other scale used twice)",
        "kernel/model.py",
        "return values * scales.repeat_interleave(16, dim=1)",
        "return values * scales[:, ::2].repeat_interleave(32, dim=1)[:, : values.shape[1]]",
        "model",
        MODEL_PROPERTY,
    ),
    _m(
        "model_output_bf16_bits",
        "output written as bf16 bits into the fp16 C",
        "kernel/model.py",
        "acc[: len(rows_a), : len(rows_b)].to(torch.float16)",
        "acc[: len(rows_a), : len(rows_b)].to(torch.bfloat16).view(torch.float16)",
        "model",
        MODEL_PROPERTY,
    ),
    _m(
        "model_group_order_not_restored",
        "group order not restored: outputs returned in launch (slot) order",
        "kernel/model.py",
        "    return [g.c for g in groups]",
        "    return [groups[g].c for g in plan.group_order]",
        "model",
        MODEL_PROPERTY,
    ),
    _m(
        "model_accumulates_in_fp16",
        "accumulation in fp16 per K tile instead of fp32",
        "kernel/model.py",
        "acc[: len(rows_a), : len(rows_b)] += a_tile @ b_tile.T",
        "acc[: len(rows_a), : len(rows_b)] += (a_tile @ b_tile.T).half().float()",
        "model",
        MODEL_PROPERTY,
    ),
    # ----------------------------------------------------------------------- host fast path
    _m(
        "host_fast_path_ignores_pointers",
        "stale pointer after reallocation: the fast path's metadata check leaves out the data "
        "pointers (a tensor given new storage in place, same shape, replays the old launch)",
        "kernel/fast_path.py",
        "words = [*map(_PTR, tensors), *map(id, map(_DTYPE, tensors))",
        "words = [*map(id, map(_DTYPE, tensors))",
        "host",
        ENTRY_PROPERTY,
    ),
    _m(
        "host_fast_path_key_without_outputs",
        "fast-path key without the outputs: the key's tensor ids leave out every group's c (outputs "
        "swapped between groups replay the old launch into the old outputs)",
        "kernel/fast_path.py",
        "        key = identity_key(data, config, tensors)\n",
        "        key = identity_key(data, config, [t for i, t in enumerate(tensors) if i >= 3 * len(abc) or i % 3 != 2])\n",
        "host",
        ENTRY_PROPERTY,
    ),
    # ----------------------------------------------------------------------- plan / tables
    _m(
        "plan_stale_pointer_table",
        "stale pointer table reused for new tensors of the same shapes (cache key lacks pointers)",
        "kernel/tables.py",
        "key = (plan.sizes, plan.tile_prefix, pointers, str(device))",
        "key = (plan.sizes, plan.tile_prefix, str(device))",
        "plan",
        PLAN_PROPERTIES,
    ),
    _m(
        "plan_group_search_boundary",
        "device group search off by one at a group boundary (< instead of <=)",
        "kernel/plan.py",
        "        if tile_prefix[mid + 1] <= tile:",
        "        if tile_prefix[mid + 1] < tile:",
        "plan",
        PLAN_PROPERTIES,
    ),
    _m(
        "plan_tile_prefix_off_by_one_group",
        "tile prefix sum off by one group (each slot's count added one slot late)",
        "kernel/plan.py",
        "    for tm, tn in zip(tiles_m, tiles_n):",
        "    for tm, tn in zip((1,) + tiles_m[:-1], (1,) + tiles_n[:-1]):",
        "plan",
        PLAN_PROPERTIES,
    ),
    _m(
        "plan_group_order_not_restored",
        "group order not restored by LaunchPlan.restore_order (slot index used for the group)",
        "kernel/plan.py",
        "            out[group] = per_slot[slot]",
        "            out[slot] = per_slot[slot]",
        "plan",
        PLAN_PROPERTIES,
    ),
    _m(
        "split_half_skips_a_k_tile",
        "cut tile off by one: the combining half starts one K tile past the middle (schedule="
        "\"split_last\": that K tile of every cut tile is never accumulated)",
        "kernel/plan.py",
        '    return (h, k_tiles, "combine" if h > 0 else "whole")',
        '    return (h + (h > 0), k_tiles, "combine" if h > 0 else "whole")',
        "plan",
        PLAN_PROPERTIES,
    ),
    _m(
        "plan_range_length_rounded_down",
        "CTA range length rounded down (total // CTAs instead of the ceiling): once a launch has "
        "more tiles than CTAs (rounds > 1) and they do not divide evenly, the last tiles never run",
        "kernel/plan.py",
        "        return ceil_div(self.total_tiles, self.num_ctas) if self.num_ctas else 0",
        "        return self.total_tiles // self.num_ctas if self.num_ctas else 0",
        "plan",
        MODEL_PROPERTY,
    ),
    _m(
        "plan_contiguous_range_short",
        "contiguous CTA range one tile short (last tile of every CTA range never runs)",
        "kernel/plan.py",
        "        return range(start, min(start + per, self.total_tiles))",
        "        return range(start, min(start + per - 1, self.total_tiles))",
        "plan",
        PLAN_PROPERTIES,
    ),
    # ----------------------------------------------------------------------- Hopper (GPU)
    _m(
        "hopper_n_residue_off_by_one",
        "off-by-one in the N residue predicate of the epilogue (col <= n)",
        "kernel/hopper/epilogue.py",
        "            if row < m and col < n:",
        "            if row < m and col <= n:",
        "hopper",
        HOPPER_PROPERTY,
    ),
    _m(
        "hopper_m_residue_off_by_one",
        "off-by-one in the M residue predicate of the epilogue (row < m - 1)",
        "kernel/hopper/epilogue.py",
        "            if row < m and col < n:",
        "            if row < m - 1 and col < n:",
        "hopper",
        HOPPER_PROPERTY,
    ),
    _m(
        "hopper_scale_subblocks_swapped",
        "wrong scale-factor index map: 32- and 4-row sub-blocks swapped in the smem scale address",
        "kernel/hopper/consumer.py",
        "sb * 512 + (i % 32) * 16 + (i // 32) * 4 + h * 2",
        "sb * 512 + (i // 4 % 32) * 16 + (i % 4) * 4 + h * 2",
        "hopper",
        HOPPER_PROPERTY,
    ),
    _m(
        "hopper_accumulator_not_reset",
        "accumulator not reset between the tiles of one CTA",
        "kernel/hopper/kernel.py",
        "                    k_tiles = k // cfg.tile_k\n\n                    self.reset_accumulator(acc)\n",
        "                    k_tiles = k // cfg.tile_k\n\n",
        "hopper",
        HOPPER_PROPERTY,
    ),
    _m(
        "hopper_wrong_stage_index",
        "consumer reads the wrong pipeline stage (stage index off by one)",
        "kernel/hopper/kernel.py",
        "stage = raw_base + state.index * self.raw_stage_bytes\n                        for sb in cutlass.range_constexpr(self.n_sub):\n"
        "                            # 2 or 4 buffers divide",
        "stage = raw_base + ((state.index + 1) % self.stages) * self.raw_stage_bytes\n"
        "                        for sb in cutlass.range_constexpr(self.n_sub):\n                            # 2 or 4 buffers divide",
        "hopper",
        HOPPER_PROPERTY,
    ),
    _m(
        "hopper_no_wait_before_epilogue",
        "missing wait (wgmma wait_group 0) before the epilogue reads the accumulators",
        "kernel/hopper/kernel.py",
        "                    self.wait_group(0)\n                    self.epilogue(",
        "                    self.epilogue(",
        "hopper",
        HOPPER_PROPERTY,
    ),
    _m(
        "hopper_no_barrier_before_buffer_reuse",
        "missing named barrier before a dequant buffer is overwritten (wgmma may still read it)",
        "kernel/hopper/kernel.py",
        "# every warp has retired the wgmma that read the other buffer\n                                consumers.arrive_and_wait()",
        "# every warp has retired the wgmma that read the other buffer (barrier removed)\n"
        "                                pass",
        "hopper",
        # the race did not fire in 50 examples on the H200; the SASS ordering check catches it
        [*HOPPER_PROPERTY, "kernel/tests/test_hopper_sync_sites.py"],
    ),
    _m(
        "hopper_static_no_barrier_before_buffer_reuse",
        "missing named barrier before a dequant buffer is overwritten, seen in the SASS on a CPU "
        "(the same edit survived 50 examples on the H200: the race did not fire)",
        "kernel/hopper/kernel.py",
        "# every warp has retired the wgmma that read the other buffer\n                                consumers.arrive_and_wait()",
        "# every warp has retired the wgmma that read the other buffer (barrier removed)\n"
        "                                pass",
        "hopper-static",
        HOPPER_BUFFER_BARRIER,
    ),
    # programmatic dependent launch without its wait (the launch still carries the attribute): the grid may read A, B and the tables, and write C and the workspace, while the
    # previous kernel on the stream still runs
    _m(
        "hopper_static_pdl_no_wait",
        "griddepcontrol.wait removed from a pdl build: global accesses before the previous grid is "
        "complete, seen in the SASS on a CPU",
        "kernel/hopper/kernel.py",
        "            cute.arch.griddepcontrol_wait()\n            cute.arch.griddepcontrol_launch_dependents()\n",
        "            cute.arch.griddepcontrol_launch_dependents()\n",
        "hopper-static",
        ["kernel/tests/test_hopper_pdl.py"],
    ),
    _m(
        "hopper_pdl_no_wait",
        "griddepcontrol.wait removed from a pdl build: a launch reads the previous launch's output "
        "before it is written",
        "kernel/hopper/kernel.py",
        "            cute.arch.griddepcontrol_wait()\n            cute.arch.griddepcontrol_launch_dependents()\n",
        "            cute.arch.griddepcontrol_launch_dependents()\n",
        "hopper",
        ["kernel/tests/test_gpu_pdl.py", "-x"],
    ),
    _m(
        "hopper_static_in_flight_wait_lax",
        "wgmma wait one group too lax in the Y-decoding build (wait_group(in_flight + 1): bench4's "
        "production build then rewrites a Y buffer a wgmma of another warp may still read), seen in "
        "the SASS on a CPU (the same edit, hopper_sync_wgmma_wait_lax__w2, is caught by the perturbed "
        "property on the H200 only)",
        "kernel/hopper/kernel.py",
        "                            self.wait_group(cfg.wgmma_in_flight)\n",
        "                            self.wait_group(cfg.wgmma_in_flight + 1)\n",
        "hopper-static",
        ["kernel/tests/test_hopper_schedule.py::test_in_flight_sass_structure"],
    ),
    _m(
        "hopper_upper_half_wrong_scale",
        "wrong scale for the upper half-word (nibbles n4..n7 of a word use the next block's scale)",
        "kernel/hopper/ptx.py",
        '"prmt.b32 p, p, 0, 0x1100;"',
        '"prmt.b32 p, p, 0, 0x0100;"',
        "hopper",
        HOPPER_PROPERTY,
    ),
    _m(
        "hopper_scale_per_32",
        "scale applied per 32 elements instead of per 16 (first scale of the unit used for all)",
        "kernel/hopper/ptx.py",
        'lines.append(f"mul.rn.f16x2 q{j}, q{j}, sc{word // 2};")',
        'lines.append(f"mul.rn.f16x2 q{j}, q{j}, sc{word // 4};")',
        "hopper",
        HOPPER_PROPERTY,
    ),
    _m(
        "hopper_output_bf16_bits",
        "output written as bf16 bits (cvt to bf16, stored as 16 bits)",
        "kernel/hopper/ptx.py",
        "cvt.rn.f16.f32 h, f;",
        "cvt.rn.bf16.f32 h, f;",
        "hopper",
        HOPPER_PROPERTY,
    ),
    _m(
        "hopper_group_search_boundary",
        "device group search off by one at a group boundary (< instead of <=), in the device "
        "schedule both kernels share",
        "kernel/device_schedule.py",
        "        if tile_prefix[mid + 1] <= tile:",
        "        if tile_prefix[mid + 1] < tile:",
        "hopper",
        HOPPER_PROPERTY,
    ),
    # ----------------------------------------------------------------------- Blackwell (static)
    _m(
        "blackwell_drop_one_mma_per_k_tile",
        "one of the 4 block-scaled MMAs per K tile dropped",
        "kernel/blackwell/common.py",
        "for kblock in cutlass.range_constexpr(num_kblocks):",
        "for kblock in cutlass.range_constexpr(num_kblocks - 1):",
        "blackwell-static",
        BLACKWELL_MMA_SITES,
    ),
    _m(
        "blackwell_no_accumulator_wait_in_epilogue",
        "missing barrier before the epilogue reads: no wait on the accumulator-full mbarrier",
        "kernel/blackwell/common.py",
        "        acc_pipeline.consumer_wait(acc_state)\n",
        "",
        "blackwell-static",
        BLACKWELL_SYNC_SITES,
    ),
    _m(
        "blackwell_mono_no_barrier_before_tmem_free",
        "missing CTA barrier before TMEM is freed (monolithic: a warp may still read the accumulator)",
        "kernel/blackwell/monolithic.py",
        "        cute.arch.barrier()\n",
        "",
        "blackwell-static",
        BLACKWELL_SYNC_SITES,
    ),
    _m(
        "blackwell_spec_mma_without_stage_wait",
        "missing wait: the MMA warp issues a k tile's MMAs without waiting on the stage's full "
        "barrier (specialized; the MMA may read a stage the TMA is still filling)",
        "kernel/blackwell/specialized.py",
        "                    ab_pipeline.consumer_wait(ab_state)\n",
        "",
        "blackwell-static",
        BLACKWELL_MMA_WAITS,
    ),
    _m(
        "blackwell_mono_mma_without_stage_wait",
        "missing wait: the monolithic kernel issues a k tile's MMAs without waiting on the stage's "
        "full barrier",
        "kernel/blackwell/monolithic.py",
        "                ab_pipeline.consumer_wait(mma_state)\n",
        "",
        "blackwell-static",
        BLACKWELL_MMA_WAITS,
    ),
    _m(
        "blackwell_spec_no_epilogue_barrier_before_tmem_free",
        "missing named barrier of the epilogue warps before TMEM is freed (specialized)",
        "kernel/blackwell/specialized.py",
        "            pipeline.NamedBarrier(barrier_id=EPILOGUE_BARRIER, num_threads=32 * cfg.EPILOGUE_WARPS).arrive_and_wait()\n",
        "",
        "blackwell-static",
        BLACKWELL_SYNC_SITES,
    ),
)


# ------------------------------------------------------------- concurrency / memory safety
# Synchronization and memory-safety bugs of the sm_90a pipelines, each on the default variant,
# on the fastest one (TMA loads, wgmma A from registers) and on the production builds, where the
# edited code is compiled into that variant (its SASS changes); loader-specific edits only where
# their loader is. ci.mutation_runner judges each three ways: the plain property, the perturbed
# property (seeded delays at every sync site, poison on release, guarded device tables) and
# compute-sanitizer over fixed ragged cases. ``--section=sync`` selects them.
SYNC_VARIANTS = {
    "default": "h90_m128n128k256_s3_wg1_fp16",
    "rs": "h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs",
    # the production variant the default dispatch runs on bench1-3 and as its fallback: phase 1
    # (Y decoded once into the fp16 workspace, staged whole-run stores, completion barrier), the
    # TMA-filled Y ring, the balanced schedule of mixed 128/64-row tiles (its split searched by the
    # producer warp's 32 lanes), C staged in shared memory
    "prod": "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1xsw_t64_es",
    # bench4's production build with two wgmma groups in flight (wgmma_in_flight=2): 4 fp16
    # buffers indexed by the sub-block and one barrier per sub-block; the rest of its pipeline is
    # rs's code
    "w2": "h90_m128n128k256_s3_wg2_b4_swap_fp16_tma_prmt_rs_w2_es_pdl",
    # the production build the default dispatch runs below half a round of tiles: w2's code on
    # 64-row X tiles with one consumer warpgroup (the in-flight mainloop, rs's TMA producer and
    # contiguous schedule, one staged-epilogue warpgroup)
    "few": "h90_m128n64k256_s3_wg1_b4_swap_fp16_tma_prmt_rs_w2_es_pdl",
    # the build for groups of thousands of rows over several rounds with phase 1 before the tiles
    # (experimental; beside's twin): prod's phase 1, Y ring and staged epilogue with a 256-row Y
    # tile, a producer warpgroup (setmaxnreg), the split_last schedule (contiguous full rounds on
    # the whole grid, trailing CTAs idle where no cut applies; no 64-row tail tiles, no balanced or
    # warp-searched split) (its last round's tiles cut in two K halves: one CTA publishes its fp32
    # sums through the workspace, the other adds them, kernel/hopper/split.py). Its Y ring, staged
    # epilogue and split code is beside's
    "wide": "h90_m256n128k256_s3_wg2_b4_swap_fp16_tma_prmt_rs_prec1xsb8h_es_pwg_sk",
    # the production build for groups of thousands of rows: wide with phase 1 beside the tiles (the
    # helper warps alone decode it, one flag per chunk, each tile's producer waiting for its own
    # rows' chunks, no completion barrier)
    "beside": "h90_m256n128k256_s3_wg2_b4_swap_fp16_tma_prmt_rs_prec1xsb2ho_es_pwg_sk",
    # beside on 240-row Y tiles (production where a dense group's M splits into as many 240-row
    # blocks as 256-row ones): the Y box, the epilogue's three 80-row passes and the cut tile's
    # slot at a height that is no power of two
    "beside240": "h90_m240n128k256_s3_wg2_b4_swap_fp16_tma_prmt_rs_prec1xsb2ho_es_pwg_sk",
    # beside240 whose producer stops acquiring chunk flags once it reads every chunk counted
    # (chunk_done_skip: the lead helper's release count, the producer's fence.acq_rel)
    "beside240d": "h90_m240n128k256_s3_wg2_b4_swap_fp16_tma_prmt_rs_prec1xsb2hod_es_pwg_sk",
}
PERTURBED_PROPERTY = "properties/test_perturbed_properties.py::test_perturbed_subject_matches_oracle"
_K = "kernel/hopper/kernel.py"
_KP = "kernel/hopper/producer.py"
_K1 = "kernel/hopper/phase1.py"
_KC = "kernel/hopper/consumer.py"
_KE = "kernel/hopper/epilogue.py"
_I8 = " " * 8
_I12 = " " * 12
_I16 = " " * 16
_I20 = " " * 20
_I24 = " " * 24
_I28 = " " * 28
_I32 = " " * 32
_I42 = " " * 42
# the comment above phase 1's completion barrier (kernel.py), verbatim: part of the mutant that
# moves that barrier into the two role branches
_PHASE1_BARRIER_COMMENT = (
    f"{_I16}# phase 1's completion barrier: one instruction that every thread executes\n"
    f"{_I16}# (bar.sync is barrier.sync.aligned: reached from the two roles' own code it is\n"
    f"{_I16}# undefined in PTX, and compute-sanitizer synccheck aborts the launch on it)\n"
)
# the timeline build's stamp after thread 0's grid-barrier wait (constant-false in production)
_PHASE1_PASSED_STAMP = (
    f"{_I24}if cutlass.const_expr(self.timeline):\n"
    f"{_I28}self.timeline_point(\"phase1_passed\")  # the grid barrier's spin ended\n"
)
# the consumer warps' phase-1 decode in kernel.py's prepass branch, verbatim (the role branch
# the two mutants below edit around)
_PHASE1_DECODE_BRANCH = (
    f"{_I20}if cutlass.const_expr(not self.ablates(\"prepass\")):\n"
    f"{_I24}# (the ablation, profiling only: no item decoded, the Y boxes read stale rows)\n"
    f"{_I24}chunks = self.prepass_decode_scaled(tidx, m_sizes, m_ptrs, ws, claim_slots, sy_base,\n"
    f"{' ' * 60}first_claim)\n"
    f"{_I20}if cutlass.const_expr(self.timeline):\n"
    f"{_I24}if tidx == 0:\n"
    f"{_I28}if chunks >= 0:  # its chunks' stores issued\n"
    f"{_I32}self.timeline_point(\"phase1_decoded\")\n"
)
_SYNC_EDITS = (
    # (name, kind, target, original, replacement, variant keys)
    ("no_proxy_fence", "fence removed: no generic->async proxy fence between the consumers' fp16 "
     "stores and the wgmma that reads them (cooperative)", _K,
     f'{_I32}self.fence_fp16_stores(buf)\n{_I32}self.delay("consumer", "fence", "after")',
     f'{_I32}self.delay("consumer", "fence", "after")', ("default", "rs", "w2", "few")),
    ("no_publish_barrier", "barrier removed: the named barrier that publishes the fp16 buffers "
     "before wgmma (and ends the raw stage's reads before its release)", _K,
     f'{_I32}consumers.arrive_and_wait()\n{_I32}self.delay("consumer", "bar_dequant", "after")',
     f'{_I32}self.delay("consumer", "bar_dequant", "after")', ("default", "rs", "w2", "few")),
    ("no_reuse_barrier", "barrier removed: an fp16 buffer rewritten before every warp retired the "
     "wgmma that reads it", _K,
     f'{_I32}self.delay("consumer", "bar_reuse", "before")\n'
     f'{_I32}# every warp has retired the wgmma that read the other buffer\n{_I32}consumers.arrive_and_wait()',
     f'{_I32}self.delay("consumer", "bar_reuse", "before")', ("default", "rs")),
    ("stage_released_early", "release moved: the raw stage handed back to the producer after the "
     "first sub-block, while the later sub-blocks still read it", _K,
     f"{_I28}if cutlass.const_expr(sb == self.n_sub - 1):\n{_I32}self.poison_released_stage(tidx, stage)",
     f"{_I28}if cutlass.const_expr(sb == 0):\n{_I32}self.poison_released_stage(tidx, stage)", ("default", "rs", "few")),
    ("wgmma_wait_lax", "wgmma wait too lax: one group more left in flight (wait_group(2), w2: 3) lets the "
     "wgmma that read the buffer about to be rewritten stay in flight", _K,
     f'{_I28}self.wait_group(cfg.wgmma_in_flight)\n',
     f'{_I28}self.wait_group(cfg.wgmma_in_flight + 1)\n', ("default", "rs", "w2", "few")),
    ("in_flight_three_buffers", "ring too short for two groups in flight: sub-block 3 rewrites buffer 0, "
     "which the wgmma three sub-blocks back may still read in another warp", _K,
     f"{_I28}buf = sb % self.fp16_buffers\n",
     f"{_I28}buf = sb % (self.fp16_buffers - 1)\n", ("w2", "few")),
    ("consumer_wrong_parity", "wrong mbarrier phase: the consumers' raw-stage state starts with the "
     "producer's parity (the first waits pass on empty stages)", _K,
     "state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)\n"
     "                for tile in range(t_begin, t_end, t_step):",
     "state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)\n"
     "                for tile in range(t_begin, t_end, t_step):", ("default", "rs", "few")),
    ("producer_ring_short", "ring wrap off by one: the producer's stage ring wraps one stage early", _K,
     "state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)\n"
     "            for tile in range(t_begin, p_end, t_step):",
     "state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages - 1)\n"
     "            for tile in range(t_begin, p_end, t_step):", ("default", "rs", "few")),
    ("producer_tail_missing", "producer tail missing: the producer warp exits without waiting for "
     "the consumers to release its last stages", _K,
     '            self.delay("producer", "tail", "before")\n'
     '            self.producer_tail(pipe, state)',
     '            self.delay("producer", "tail", "before")', ("default", "rs", "few")),
    ("no_acc_reset_fence", "accumulator reused for the next tile without the wgmma fence after its "
     "reset (the first wgmma may read stale accumulators)", _K,
     "                    self.reset_accumulator(acc)\n                    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)\n"
     "                    self.wgmma_fence()\n                    for kt in range(k_tiles):",
     "                    self.reset_accumulator(acc)\n                    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)\n"
     "                    for kt in range(k_tiles):", ("default", "rs", "few")),
    # the same bug as no_acc_reset_fence (no wgmma fence between the accumulator reset and the
    # tile's first wgmma), written as the fence moved above the reset: the cubin is production's
    # instruction for instruction (EQUIVALENT), the proof that ptxas orders the reset itself
    ("acc_reset_after_fence", "accumulator reset after the wgmma fence instead of before it (no fence "
     "between the reset and the tile's first wgmma)", _K,
     "                    self.reset_accumulator(acc)\n                    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)\n"
     "                    self.wgmma_fence()\n                    for kt in range(k_tiles):",
     "                    self.wgmma_fence()\n                    self.reset_accumulator(acc)\n"
     "                    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)\n                    for kt in range(k_tiles):",
     ("default", "rs")),
    ("empty_count_short_cp_async", "wrong arrive count: the cp.async pipeline's empty barrier "
     "completes one warp early (the producer refills a stage a warp still reads)", _K,
     "consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.dequant_threads),",
     "consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.dequant_threads - 32),", ("default",)),
    ("empty_count_short_tma", "wrong arrive count: the TMA pipeline's empty barrier completes one "
     "warp early (the producer refills a stage a warp still reads)", _K,
     "consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.raw_release_warps),\n                tx_count",
     "consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.raw_release_warps - 1),\n                tx_count",
     ("rs", "prod", "w2", "few", "wide")),
    ("tx_count_short", "wrong transaction count: the full barrier expects 512 bytes fewer than the "
     "copies bring (the consumers may read the last scale block before it lands)", _K,
     "                tx_count=self.tx_bytes,", "                tx_count=self.tx_bytes - 512,", ("rs", "prod", "w2", "few", "wide")),
    ("tensormap_acquire_missing", "tensor-map acquire missing: TMA may read a tensor map before its "
     "bytes (written before the launch) are visible to the tensormap proxy", _K,
     "                    if lane == 0:\n                        self.acquire_map(tm_x)\n"
     "                    if lane == 1:\n                        self.acquire_map(tm_y)",
     "                    pass", ("rs", "few")),
    ("no_fragment_fence", "wgmma fence removed: the register A fragment just written may not be "
     "ordered before the wgmma that reads it", _K,
     f"{_I32}self.wgmma_fence()  # the fragment registers were just written\n", "", ("rs",)),
    # ---- the prepass production variant ("prod"): phase 1, its completion barrier, the Y ring,
    # the balanced schedule, the staged epilogue
    ("phase1_wait_one_short", "completion barrier one chunk early: thread 0 lets its CTA through when "
     "all but one of phase 1's chunks are decoded (a Y box may be loaded before its rows are written)", _K1,
     "        self.acquire_chunks(ws, chunks)\n",
     "        self.acquire_chunks(ws, chunks - 1)\n", ("prod", "wide")),
    ("phase1_barrier_at_role_sites", "phase 1's completion barrier at two sites, one per warp role: "
     "bar.sync is barrier.sync.aligned, undefined unless every thread of the CTA executes the same "
     "instruction", _K,
     f"{_I42}cutlass.Int32(0) if self.tail64 else t_begin, share_slots)\n{_I16}else:\n" + _PHASE1_DECODE_BRANCH
     + f"{_I20}if tidx == 0:\n{_I24}passed = self.prepass_wait(ws, chunks)\n" + _PHASE1_PASSED_STAMP
     + _PHASE1_BARRIER_COMMENT + f"{_I16}self.completion_barrier(tidx)\n",
     f"{_I42}cutlass.Int32(0) if self.tail64 else t_begin, share_slots)\n{_I20}self.completion_barrier(tidx)\n"
     f"{_I16}else:\n" + _PHASE1_DECODE_BRANCH
     + f"{_I20}if tidx == 0:\n{_I24}passed = self.prepass_wait(ws, chunks)\n" + _PHASE1_PASSED_STAMP
     + f"{_I20}self.completion_barrier(tidx)\n", ("prod", "wide")),
    ("phase1_no_global_proxy_fence", "fence removed: phase 1's generic stores to the fp16 workspace are "
     "not ordered before the async proxy (other CTAs' TMA loads of those rows)", _K1,
     f"{_I12}# this thread's generic stores -> ordered before the async proxy (other CTAs' TMA)\n"
     f"{_I12}self.fence_chunk_stores(it)\n",
     f"{_I12}# this thread's generic stores -> ordered before the async proxy (other CTAs' TMA)\n", ("prod", "wide")),
    # phase 1's chunk hand-off and counters (kernel.phase1_protocol MUTATIONS: the same edits, on
    # the CPU twin of the checker's phase-1 rules)
    ("phase1_publish_relaxed", "release removed: a phase-1 chunk is counted done with a relaxed add (no "
     "fence.acq_rel, no red.release), so a CTA that acquires the count is not ordered after the chunk's "
     "workspace stores", _K1,
     f"{_I16}self.publish_chunk(ws, it)\n",
     f"{_I16}atom_add_relaxed_gpu(ws + DONE_WORD, cutlass.Int32(1))\n", ("prod", "wide")),
    ("phase1_wait_after_barrier", "wait moved: thread 0's completion wait after phase 1's completion "
     "barrier, so the producer warp's TMA reads of the workspace are not ordered after the acquire of "
     "every chunk (a Y box may be loaded before its rows are written)", _K,
     _PHASE1_DECODE_BRANCH + f"{_I20}if tidx == 0:\n{_I24}passed = self.prepass_wait(ws, chunks)\n"
     + _PHASE1_PASSED_STAMP + _PHASE1_BARRIER_COMMENT + f"{_I16}self.completion_barrier(tidx)\n",
     _PHASE1_DECODE_BRANCH + _PHASE1_BARRIER_COMMENT + f"{_I16}self.completion_barrier(tidx)\n"
     f"{_I16}if tidx == 0:\n{_I20}passed = self.prepass_wait(ws, chunks)\n", ("prod", "wide")),
    ("phase1_claim_not_reset", "counter not reset: the last CTA through phase 1 leaves the claim counter "
     "at its final value, so the next call's claims all lie past the chunk count (no chunk decoded, "
     "the completion wait never ends)", _K1,
     f"{_I8}if passed == cutlass.Int32(num_ctas) - 1:\n{_I12}store_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(0))\n",
     f"{_I8}if passed == cutlass.Int32(num_ctas) - 1:\n", ("prod", "wide")),
    ("producer_no_proxy_fence_after_phase1", "fence removed: the producer's TMA loads of the workspace "
     "are not ordered after the phase-1 writes its CTA acquired at the completion barrier", _KP,
     f"{_I12}# phase 1's writes (acquired by thread 0 before the CTA barrier) -> the async proxy\n"
     f"{_I12}fence_proxy_async_global()\n",
     f"{_I12}# phase 1's writes (acquired by thread 0 before the CTA barrier) -> the async proxy\n", ("prod", "wide")),
    ("staged_slots_no_proxy_fence", "fence removed: phase 1's generic writes to its staging slots (the "
     "Y ring) are not ordered before the Y boxes' TMA writes to the same bytes", _K1,
     f"{_I8}# the slots' generic writes before the Y ring's TMA (async proxy) writes to them\n"
     f"{_I8}cute.arch.fence_proxy(\"async.shared\", space=\"cta\")\n",
     f"{_I8}pass  # the slots' generic writes before the Y ring's TMA (async proxy) writes to them\n", ("prod", "wide")),
    ("staged_copy_no_entry_sync", "warp barrier removed: phase 1's staged copy reads other lanes' "
     "slots with no bar.warp.sync after their writes", "kernel/hopper/ptx.py",
     '"bar.warp.sync 0xffffffff;", "and.b32 c, $4, 7;"', '"and.b32 c, $4, 7;"', ("prod", "wide")),
    ("y_ring_wait_lax", "wgmma wait too lax: wait_group(2) before releasing a Y ring buffer lets the "
     "wgmma that reads it stay in flight while the producer refills it", _KC,
     f"{_I20}self.wait_group(in_flight)\n{_I20}self.delay(\"consumer\", \"wgmma_wait\", \"after\")\n"
     f"{_I20}if cutlass.const_expr(sb >= in_flight):\n{_I20}    self.warp_release(y_pipe, retire_state)",
     f"{_I20}self.wait_group(in_flight + 1)\n{_I20}self.delay(\"consumer\", \"wgmma_wait\", \"after\")\n"
     f"{_I20}if cutlass.const_expr(sb >= in_flight):\n{_I20}    self.warp_release(y_pipe, retire_state)", ("prod", "wide")),
    ("y_ring_empty_count_short", "wrong arrive count: the Y ring's empty barrier completes one warp "
     "early (the producer refills a Y buffer a warp's wgmma still reads)", _K,
     "y_pipe = self.y_ring(storage, self.consumer_warps, (1, 1, 1, 1))\n",
     "y_pipe = self.y_ring(storage, self.consumer_warps - 1, (1, 1, 1, 1))\n", ("prod", "wide")),
    ("y_ring_tx_count_short", "wrong transaction count: the Y ring's full barrier expects 1024 bytes "
     "fewer than a Y box brings (wgmma may read the box's last rows before they land)", _KP,
     "consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, release_warps),\n"
     "            tx_count=self.y_tx_bytes,\n",
     "consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, release_warps),\n"
     "            tx_count=self.y_tx_bytes - 1024,\n", ("prod", "wide", "beside240")),
    ("tile_wait_lax", "accumulators read in flight: the tile's last wait is wait_group(1), so the "
     "epilogue may read accumulators the last wgmma group still writes", _KC,
     f"{_I12}self.wait_group(0)\n{_I12}for _r in cutlass.range_constexpr(in_flight):",
     f"{_I12}self.wait_group(1)\n{_I12}for _r in cutlass.range_constexpr(in_flight):", ("prod", "wide")),
    ("epilogue_no_publish_barrier", "barrier removed: the staged epilogue reads its staging buffer "
     "before every thread of the warpgroup has written its stmatrix part", _KE,
     "        bar.arrive_and_wait()  # the whole pass is in the buffer\n", "", ("prod", "few", "wide", "beside240")),
    ("epilogue_no_reuse_barrier", "barrier removed: the staged epilogue rewrites its staging buffer "
     "(next pass or tile) before every thread has read the previous one", _KE,
     "        bar.arrive_and_wait()  # the warpgroup's reads of the buffer (previous pass or tile) are done\n",
     "", ("prod", "few", "wide")),
    # a hang on the first launch: both halves of every consumer warpgroup wait for good, at the
    # first epilogue barrier of their first tile (what the isolation's run-phase limit reports)
    ("epilogue_barrier_per_warp_pair", "divergent barrier (a hang): the staged epilogue's named barrier "
     "id taken per warp pair, not per warpgroup, so the two halves of a warpgroup wait at two barriers, "
     "each for 128 threads of which 64 arrive", _KE,
     "        bar = pipeline.NamedBarrier(barrier_id=cfgmod.EPILOGUE_BARRIER_ID0 + wg, num_threads=128)\n",
     "        bar = pipeline.NamedBarrier(barrier_id=cfgmod.EPILOGUE_BARRIER_ID0\n"
     "                                    + cute.arch.make_warp_uniform(cute.arch.warp_idx()) // 2, num_threads=128)\n",
     ("prod", "few", "wide")),
    ("balanced_share_skips_a_light_tile", "balanced schedule off by one: the CTAs of the second kind "
     "start their light run one entry late (one light tile is never computed, one twice)",
     "kernel/device_schedule.py",
     "        ts = p * ta + (cta - p) * tb\n", "        ts = p * ta + (cta - p) * tb + 1\n", ("prod",)),
    ("idle_cta_early_x_stages", "a CTA without tiles issues X stages before phase 1 ends (the "
     "empty-range check of early_x_stages dropped): the balanced split leaves CTAs idle once a launch "
     "has more tiles than SMs, nothing consumes their stages and the producer's tail waits forever",
     _KP, "        if t_begin >= t_end:\n            pre = cutlass.Int32(0)\n", "", ("prod", "wide")),
    ("snake_odd_round_off_by_one", "snake split off by one: in odd rounds each CTA takes the tile after its "
     "own (mixed-K problems: one tile of the round never computed, another twice)", "kernel/device_schedule.py",
     "    return j * ctas + cta + (j % 2) * (ctas - 1 - 2 * cta)\n",
     "    return j * ctas + cta + (j % 2) * (ctas - 2 * cta)\n", ("prod",)),
    ("lean_split_wrong_lane", "warp-searched split read from the wrong lane: the shuffles take the "
     "next lane's candidate, not the lowest feasible one", "kernel/device_schedule.py",
     "        src = low % 32\n", "        src = (low + 1) % 32\n", ("prod",)),
    # schedule="split_last": the cut tile's hand-off (kernel/hopper/split.py)
    ("split_publish_relaxed", "release removed: half 0 of a cut tile sets its flag with a relaxed store "
     "(no fence.acq_rel, no red.release), so the combining CTA's acquire is not ordered after the "
     "partial sums' stores", "kernel/hopper/split.py",
     "            arrive_release_gpu(area + cutlass.Int64(j) * 4, cutlass.Int32(1))\n",
     "            store_relaxed_gpu(area + cutlass.Int64(j) * 4, cutlass.Int32(1))\n", ("wide",)),
    ("split_publish_before_barrier", "barrier removed: thread 0 publishes the cut tile's partial sums "
     "before the other consumer threads have stored theirs", "kernel/hopper/split.py",
     "            st_global_v4_f32(addr + q * step, [acc[4 * q + i] for i in range(4)])\n        self.split_barrier()\n",
     "            st_global_v4_f32(addr + q * step, [acc[4 * q + i] for i in range(4)])\n", ("wide",)),
    ("split_combine_no_wait", "wait removed: half 1 of a cut tile adds the partial-sum slot without "
     "waiting for half 0's release (it may read the slot before it is written)", "kernel/hopper/split.py",
     "            wait_geq_acquire_gpu(flag, cutlass.Int32(1))\n", "", ("wide",)),
    ("split_flag_not_reset", "flag not reset: the combining CTA leaves its slot's flag at 1, so the next "
     "call's combine does not wait and may add the previous call's partial sums", "kernel/hopper/split.py",
     "            store_relaxed_gpu(flag, cutlass.Int32(0))\n", "", ("wide",)),
    ("split_halves_overlap", "cut off by one: half 0 runs one K tile past the middle, which half 1 "
     "also runs (that K tile counted twice in the cut tiles)", "kernel/hopper/split.py",
     "                k_end = k_tiles // 2\n", "                k_end = k_tiles // 2 + 1\n", ("wide", "beside240")),
    # phase1_beside: the chunk flags (kernel/hopper/phase1.py, kernel/hopper/producer.py)
    ("beside_publish_relaxed", "release removed: the lead helper sets a chunk's flag with a relaxed "
     "store (no fence.acq_rel, no red.release), so a producer's acquire of the flag is not ordered "
     "after the chunk's workspace stores", _K1,
     "        arrive_release_gpu(flags + cutlass.Int64(chunk) * 4, cutlass.Int32(1))\n",
     "        store_relaxed_gpu(flags + cutlass.Int64(chunk) * 4, cutlass.Int32(1))\n", ("beside",)),
    ("beside_producer_no_proxy_fence", "fence removed: the producer's Y boxes read rows it acquired "
     "through the generic proxy only (no fence.proxy.async.global after the chunk wait)", _KP,
     "        self.wait_stage_chunks(flags, chunk, rows_total, y_row, cutlass.min(rows_left, self.config.tile_m), kt)\n"
     "        fence_proxy_async_global()\n",
     "        self.wait_stage_chunks(flags, chunk, rows_total, y_row, cutlass.min(rows_left, self.config.tile_m), kt)\n",
     ("beside",)),
    ("beside_producer_no_wait", "wait removed: the producer loads a K stage's Y boxes without waiting for "
     "the chunks that hold them (the first tiles read rows phase 1 has not written yet)", _KP,
     "        self.wait_stage_chunks(flags, chunk, rows_total, y_row, cutlass.min(rows_left, self.config.tile_m), kt)\n",
     "", ("beside", "beside240")),
    ("beside_flags_not_reset", "flags not reset: the last party through leaves the chunk flags set, "
     "so the next launch's producers read rows before that launch's helpers wrote them", _K1,
     "                store_relaxed_gpu(flags + cutlass.Int64(c) * 4, cutlass.Int32(0))\n", "                pass\n",
     ("beside", "beside240")),
    ("done_not_reset", "count not reset: the last party through leaves the DONE count at the launch's chunk "
     "count, so the next launch's producers stop waiting for flags at their first stage", _K1,
     "                if cutlass.const_expr(self.config.chunk_done_skip):\n"
     "                    store_relaxed_gpu(ws + DONE_WORD, cutlass.Int32(0))\n",
     "                if cutlass.const_expr(self.config.chunk_done_skip):\n                    pass\n", ("beside240d",)),
    ("done_skip_one_short", "skip one chunk short: the producer stops waiting for flags once it reads one chunk "
     "fewer than the launch's counted, so it may read the last chunk's rows before they are written", _KP,
     "                        if cute.arch.shuffle_sync(counted, 0) >= chunks:\n",
     "                        if cute.arch.shuffle_sync(counted, 0) >= chunks - 1:\n", ("beside240d",)),
    ("done_count_relaxed", "release removed: the lead helper counts a chunk with a relaxed add (no fence.acq_rel, "
     "no red.release), so a producer that reads every chunk counted is not ordered after the chunks' stores", _K1,
     "                        arrive_release_gpu(ws + DONE_WORD, cutlass.Int32(1))  # counted for the producers' skip\n",
     "                        atom_add_relaxed_gpu(ws + DONE_WORD, cutlass.Int32(1))  # counted for the producers' skip\n",
     ("beside240d",)),
    ("done_skip_no_fence", "fence removed: the producer stops waiting for flags on a relaxed read of the count, "
     "with no fence.acq_rel after it (no acquire of the counted publishes)", _KP,
     "                            cute.arch.fence_acq_rel_gpu()\n                            fence_proxy_async_global()\n",
     "                            fence_proxy_async_global()\n", ("beside240d",)),
    ("schedule_past_end", "persistent schedule one tile past its end: the last CTA's range is not "
     "clamped to the tile total (a slot one row past the tables is read)", "kernel/device_schedule.py",
     "        if end > total_tiles:\n            end = total_tiles",
     "        if end > total_tiles + 1:\n            end = total_tiles + 1", ("default", "rs", "few", "wide")),
)


def _sync_mutant(name, kind, target, original, replacement, variant_key) -> Mutant:
    label = SYNC_VARIANTS[variant_key]
    select = ("properties/test_subject_vs_oracle.py::test_subject_matches_oracle", "--subject=hopper",
              f"--variant={label}", "--perturb=off")
    return Mutant(f"hopper_sync_{name}__{variant_key}", kind, target, original, replacement, "hopper", select, label)


SYNC_MUTANTS: tuple[Mutant, ...] = tuple(
    _sync_mutant(name, kind, target, original, replacement, key)
    for name, kind, target, original, replacement, keys in _SYNC_EDITS
    for key in keys
)
# some of those edits seen on a CPU: the SASS rules of kernel/tests/test_hopper_sync_sites.py, which
# cover every production variant (a Y ring buffer released before its wgmma retired; bench4's
# fp16 buffers rewritten with no consumers' barrier after the wait that freed them; the staged
# epilogue's buffer rewritten with no barrier after the last reads, which survived the plain and
# perturbed properties on the GPU; phase 1's three async-proxy fences, which the GPU runs show
# rarely or never), on the variant the edit targets (one compile)
_STATIC_OF_SYNC = ("hopper_sync_y_ring_wait_lax__prod", "hopper_sync_no_publish_barrier__w2",
                   "hopper_sync_epilogue_no_reuse_barrier__prod", "hopper_sync_epilogue_no_reuse_barrier__wide",
                   "hopper_sync_phase1_no_global_proxy_fence__prod", "hopper_sync_staged_slots_no_proxy_fence__prod",
                   "hopper_sync_producer_no_proxy_fence_after_phase1__wide",
                   "hopper_sync_split_publish_relaxed__wide", "hopper_sync_split_publish_before_barrier__wide",
                   "hopper_sync_beside_publish_relaxed__beside", "hopper_sync_beside_producer_no_proxy_fence__beside",
                   "hopper_sync_done_count_relaxed__beside240d", "hopper_sync_done_skip_no_fence__beside240d")
STATIC_SYNC_MUTANTS: tuple[Mutant, ...] = tuple(
    Mutant(f"hopper_static_{m.name.removeprefix('hopper_sync_')}", f"{m.kind}; seen in the SASS on a CPU",
           m.target, m.original, m.replacement, "hopper-static", ("kernel/tests/test_hopper_sync_sites.py", "-k", m.variant))
    for m in SYNC_MUTANTS if m.name in _STATIC_OF_SYNC
)
assert len(STATIC_SYNC_MUTANTS) == len(_STATIC_OF_SYNC)
MUTANTS = MUTANTS + SYNC_MUTANTS + STATIC_SYNC_MUTANTS

# ------------------------------------------------------------------- harness (CPU, every CI run)
# bugs in the harness that would let kernel bugs through: each is caught by a test of the harness
BOUND_TIGHTNESS = ["oracle/tests/test_bounds.py::test_a_bound_twice_as_loose_misses_a_planted_error"]
BOUND_FP16_STEP = ["oracle/tests/test_bounds.py::test_the_fp16_step_is_the_rounding_interval_of_x_plus_minus_e"]
CHECK_MECHANISMS = "properties/test_check_mechanisms.py"
BREAKAGE_TESTS = ["properties/test_breakages.py"]
# the invalid-input property on the CPU model (every breakage, drawn)
INVALID_INPUT_PROPERTY = ["properties/test_subject_vs_oracle.py::test_subject_rejects_invalid_problems",
                          "--subject=model"]


HARNESS_MUTANTS: tuple[Mutant, ...] = (
    _m(
        "harness_bound_loosened_x2",
        "bound loosened: the accumulation error E of a declared order doubled",
        "oracle/bounds.py",
        "    return magnitudes * (g * growth * _FLOAT64_SLACK)",
        "    return magnitudes * (2 * g * growth * _FLOAT64_SLACK)",
        "harness",
        BOUND_TIGHTNESS,
    ),
    _m(
        "harness_bound_loosened_one_chunk_x2",
        "bound loosened: the accumulation error E with no declared order doubled",
        "oracle/bounds.py",
        "        return abs_sum.to(torch.float64) * (gamma(k) * _FLOAT64_SLACK)",
        "        return abs_sum.to(torch.float64) * (2 * gamma(k) * _FLOAT64_SLACK)",
        "harness",
        BOUND_TIGHTNESS,
    ),
    _m(
        "harness_bound_extra_fp16_ulp",
        "bound loosened: one fp16 ulp added to the rounding interval of x +- E",
        "oracle/bounds.py",
        "    return torch.maximum(high - r, r - low)",
        "    return torch.maximum(high - r, r - low) + ulp16(r)",
        "harness",
        BOUND_FP16_STEP,
    ),
    _m(
        "harness_determinism_compares_buffer_with_itself",
        "determinism check compares the second run's buffer with itself",
        "properties/checks.py",
        "            diff = _bitwise_differences(b, a)",
        "            diff = _bitwise_differences(b, b)",
        "harness",
        [f"{CHECK_MECHANISMS}::test_the_rerun_catches_a_subject_that_differs_between_runs"],
    ),
    _m(
        "harness_canary_check_skipped",
        "canary check skipped: guard regions around C never inspected",
        "properties/checks.py",
        "    bad = guarded.damaged_guards()\n",
        "    bad = []\n",
        "harness",
        [f"{CHECK_MECHANISMS}::test_the_canaries_catch_a_write_past_c"],
    ),
    _m(
        "harness_validation_sfb_blocked_strides_dropped",
        "validation rule dropped: the strides of sfb_blocked are not checked",
        "kernel/validation.py",
        '_check_tensor(sfb_r, "sfb_blocked", g, fp8, blocked_shape(n, k), blocked_strides(n, k), constraints)',
        '_check_tensor(sfb_r, "sfb_blocked", g, fp8, blocked_shape(n, k), None, constraints)',
        "harness",
        BREAKAGE_TESTS,
    ),
    _m(
        "harness_validation_alignment_dropped",
        "validation rule dropped: no base-pointer alignment check for any tensor",
        "kernel/validation.py",
        "    if t.data_ptr() % constraints.alignment_bytes:",
        "    if False and t.data_ptr() % constraints.alignment_bytes:",
        "harness",
        BREAKAGE_TESTS,
    ),
    _m(
        "harness_validation_overlap_one_element_short",
        "validation rule one element short: a tensor's byte range ends at its last element's first "
        "byte, so an output overlapping an input (or another output) by its last element is accepted",
        "kernel/validation.py",
        "    extent = 1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()))",
        "    extent = sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()))",
        "harness",
        INVALID_INPUT_PROPERTY,
    ),
    _m(
        "harness_plan_empty_group_prefix_skipped",
        "plan corner: an empty group gets no tile prefix entry (entries padded at the end), "
        "visible only when an empty group precedes work in launch order",
        "kernel/plan.py",
        "        prefix.append(prefix[-1] + tm * tn)\n",
        "        if tm * tn:\n            prefix.append(prefix[-1] + tm * tn)\n"
        "    prefix += [prefix[-1]] * (len(tiles_m) + 1 - len(prefix))\n",
        "harness",
        PLAN_PROPERTIES,
    ),
)

MUTANTS = MUTANTS + HARNESS_MUTANTS

BY_NAME = {m.name: m for m in MUTANTS}


# one proof for both variants of the moved accumulator-reset fence (cubins identical to production)
_ACC_RESET_AFTER_FENCE_PROOF = (
    "cubin unchanged: with the wgmma fence moved above the accumulator reset (acc.fill(0) and the "
    "accumulate flag now follow it, nothing fences them before the tile's first wgmma) the variant's "
    "SASS is production's instruction by instruction (ptxas puts its own WARPGROUP.ARRIVE between "
    "the CS2R zeroing and the first HGMMA; python -m ci.sass_identity on a copy with the edit: "
    "h90_m128n128k256_s3_wg1_fp16 3640 and ..._tma_prmt_rs 2456 instructions, identical, as are the "
    "other 21 m128 variants). The same bug as hopper_sync_no_acc_reset_fence__*, whose SASS differs "
    "only in where the explicit fence's ARRIVE sits"
)


# Mutants no test can catch because the compiled code does not change; kept in the catalog, with
# the evidence, so the table says so instead of "SURVIVED".
EQUIVALENT = {
    "hopper_no_wait_before_epilogue": (
        "ptxas re-inserts the wait: with warpgroup.wait_group(0) removed from the source, the SASS "
        "still has WARPGROUP.DEPBAR.LE gsb0, 0x0 between the last HGMMA and the first epilogue STG "
        "(ptxas tracks the accumulator registers of in-flight wgmma), and "
        "kernel/tests/test_hopper_sync_sites.py::test_epilogue_waits_for_all_wgmma_before_storing "
        "passes on the mutant"
    ),
    "hopper_sync_no_fragment_fence__rs": (
        "cubin unchanged: without the explicit warpgroup.fence() before the register-A wgmma the "
        "variant's SASS is identical instruction by instruction (ptxas orders the fragment "
        "registers before HGMMA itself; python -m ci.mutation_runner --section=sync --sass-equivalence)"
    ),
    "hopper_sync_acc_reset_after_fence__default": _ACC_RESET_AFTER_FENCE_PROOF,
    "hopper_sync_acc_reset_after_fence__rs": _ACC_RESET_AFTER_FENCE_PROOF,
}


_STAGED_COPY_WARP_SYNC = (
    "ptxas compiles bar.warp.sync there to no instruction: the warp reconverges (BSYNC) right before "
    "the slots' stores, and the mutant's SASS has production's instructions, NOPs included, in another "
    "order; a converged warp's shared stores and the loads after them execute in program order"
)


# Concurrency mutants whose cubin changes but whose bug no run on this kernel can show, with the
# reason and its evidence. Not verdicts: ci.mutation_runner
# still runs them, last (after every other task), so the verdicts that can move come first within
# a device budget.
UNOBSERVABLE = {
    "hopper_sync_no_acc_reset_fence__default": (
        "ptxas orders the reset itself: the mutant's SASS differs from production only in where one "
        "WARPGROUP.ARRIVE sits; the ARRIVE between the accumulator zeroing and the tile's first HGMMA "
        "is in both; the same bug written as the fence moved above the reset "
        "(hopper_sync_acc_reset_after_fence__*) compiles to production's cubin (EQUIVALENT)"
    ),
    "hopper_sync_no_acc_reset_fence__rs": (
        "ptxas orders the reset itself: the mutant's SASS differs from production only in where one "
        "WARPGROUP.ARRIVE sits; the ARRIVE between the accumulator zeroing and the tile's first HGMMA "
        "is in both; the same bug written as the fence moved above the reset "
        "(hopper_sync_acc_reset_after_fence__*) compiles to production's cubin (EQUIVALENT)"
    ),
    "hopper_sync_no_acc_reset_fence__few": (
        "ptxas orders the reset itself: the mutant's SASS differs from production only by the "
        "WARPGROUP.ARRIVE before the accumulator zeroing; the ARRIVE of the fragment fence, between "
        "the zeroing and the tile's first HGMMA, is in both"
    ),
    "hopper_sync_staged_copy_no_entry_sync__prod": _STAGED_COPY_WARP_SYNC,
    "hopper_sync_staged_copy_no_entry_sync__wide": _STAGED_COPY_WARP_SYNC,
    "hopper_sync_producer_tail_missing__default": (
        "cluster size 1: the tail only keeps a CTA alive while cluster peers may still signal its "
        "barriers; here the CTA's shared memory lives until its consumers exit, and they wait for "
        "every stage the producer filled"
    ),
    "hopper_sync_producer_tail_missing__rs": (
        "cluster size 1: the tail only keeps a CTA alive while cluster peers may still signal its "
        "barriers; here the CTA's shared memory lives until its consumers exit, and they wait for "
        "every stage the producer filled"
    ),
    "hopper_sync_producer_tail_missing__few": (
        "cluster size 1: the tail only keeps a CTA alive while cluster peers may still signal its "
        "barriers; here the CTA's shared memory lives until its consumers exit, and they wait for "
        "every stage the producer filled"
    ),
}


# ------------------------------------------------------------------- docs/mutants.md (generated)
DOC_PATH = "docs/mutants.md"
DOC_INTRO = """# Mutants: does the test suite catch real kernel bugs?

<!-- generated by `python -m ci.mutants --markdown > docs/mutants.md`; ci/test_mutants.py checks it -->

`ci/mutants.py` is the catalog: each mutant is a named, reversible edit of the real code (the
exact original text, which must occur exactly once in its target file, its replacement, the
subject it affects and the pytest selection that must catch it). `python -m ci.mutation_runner`
applies each one to a **copy** of the repository (tracked and untracked-not-ignored files in a
temporary directory; the working tree is never touched), runs its selection there and reports
caught / SURVIVED, by which test and after how many Hypothesis examples. `--baseline` first runs
every subject's selection unmutated: a failing baseline marks its mutants `baseline-failed`.

The concurrency and memory-safety mutants (`hopper_sync_*`, one per edit and variant) are judged
three ways on an H200: the plain property, the perturbed property (seeded delays at every
synchronization site, poison on release, guarded tables) and compute-sanitizer over fixed ragged
cases (`--section=sync`). Mutants whose compiled code is production's instruction for instruction
are *equivalent*; those whose bug no run on this kernel can show are *unobservable*; both say why.

Commands:

    python -m ci.mutation_runner --subject=cpu --baseline      # every CPU subject
    python -m ci.mutation_runner --subject=hopper --section=sync  # on the H200
    python -m pytest -q ci/test_mutants.py                       # the catalog is well formed
    python -m pytest -q -m slow ci/test_mutants.py               # every CPU mutant is caught

Subjects: `model` (the CPU model), `plan` (host plan and device tables), `host` (the host
pipeline's fast path, caught on the CPU model run through it), `hopper` (the sm_90a
kernel on an H200), `hopper-static` and `blackwell-static` (the kernels compiled on the CPU,
caught by SASS checks), `harness` (the oracle's bound and the checks every run goes through).
"""


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def markdown() -> str:
    """docs/mutants.md: the introduction and one table of the catalog (name, subject, bug, what
    catches it), generated from :data:`MUTANTS` so it cannot drift."""
    rows = ["| mutant | subject | bug | caught by |", "| --- | --- | --- | --- |"]
    for m in MUTANTS:
        if m.name in EQUIVALENT:
            caught = "equivalent: " + EQUIVALENT[m.name]
        else:
            tests = [a for a in m.select if not a.startswith("-")]
            opts = [a for a in m.select if a.startswith("--")]
            caught = ", ".join(f"`{t}`" for t in tests) + (f" ({' '.join(opts)})" if opts else "")
            if m.name in UNOBSERVABLE:
                caught += "; unobservable: " + UNOBSERVABLE[m.name]
        subject = m.subject + (f" `{m.variant}`" if m.variant else "")
        rows.append(f"| `{m.name}` | {_cell(subject)} | {_cell(m.kind)} | {_cell(caught)} |")
    return DOC_INTRO + f"\n## The catalog ({len(MUTANTS)} mutants)\n\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--markdown"]:
        raise SystemExit("usage: python -m ci.mutants --markdown > docs/mutants.md")
    sys.stdout.write(markdown())
