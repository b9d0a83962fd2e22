"""Does programmatic dependent launch put a secondary grid's CTAs beside the primary's? (H200)

A ``pdl`` build (``HopperConfig.pdl``) lets the next launch's CTAs start while its own last
CTAs run; whether they run beside them depends on what the dependent CTAs need. This probe
takes the GEMM out: a primary grid of small CTAs
(``--primary-threads``, no shared memory) lets the secondary launch at once
(``griddepcontrol.launch_dependents``) and then stays on its SMs for ``--spin-us``; the
secondary grid (``--secondary-threads``, ``--secondary-smem`` bytes of shared memory each)
stamps ``%globaltimer`` at its start. Both grids have one CTA per SM. If the secondary's CTAs
start well before the primary's end, they were co-scheduled.

    python -m profiling.pdl_probe [--spin-us 20] [--secondary-smem 0,100000,200000]

Needs a CUDA GPU (the compile alone runs anywhere: ``build``). Prints one markdown row per
shared-memory size: the secondary's start after the primary's first start (median, largest over
CTAs) and the primary's end (median).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Sequence

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import Int64, dsl_user_op

from kernel.hopper.ptx import _ir, timeline_stamp


@dsl_user_op
def spin_ns(ns: Int64, *, loc=None, ip=None) -> None:
    """Busy-wait ``ns`` nanoseconds of ``%globaltimer`` from now."""
    asm = ("{\n.reg .u64 t0, t;\n.reg .pred p;\nmov.u64 t0, %globaltimer;\nPROBE_SPIN:\nmov.u64 t, %globaltimer;\n"
           "sub.u64 t, t, t0;\nsetp.lt.u64 p, t, $0;\n@p bra PROBE_SPIN;\n}")
    llvm.inline_asm(None, _ir(loc, ip, (Int64, ns)), asm, "l,~{memory}", has_side_effects=True,
                    is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip)


class PdlProbe:
    """One primary and one secondary grid of ``ctas`` CTAs each (see the module)."""

    def __init__(self, ctas: int, primary_threads: int, secondary_threads: int, secondary_smem: int,
                 primary_carveout: int | None = None, primary_smem: int = 0):
        self.ctas = ctas
        self.primary_smem = primary_smem
        self.primary_carveout = primary_carveout  # the primary's preferred shared-memory carveout (%)
        self.primary_threads = primary_threads
        self.secondary_threads = secondary_threads
        self.secondary_smem = secondary_smem

    @cute.kernel
    def primary(self, stamps: cute.Pointer, spin: Int64):
        tidx, _, _ = cute.arch.thread_idx()
        cta, _, _ = cute.arch.block_idx()
        base = stamps.toint() + cutlass.Int64(cta) * 16
        if tidx == 0:
            timeline_stamp(base, False)
        cute.arch.griddepcontrol_launch_dependents()
        if cutlass.const_expr(self.primary_smem):
            smem = cutlass.memory.SmemAllocator()
            held = smem.allocate_array(cutlass.Uint8, self.primary_smem, byte_alignment=128)
            if tidx == 0:  # (a use, so the allocation stays)
                held[0] = cutlass.Uint8(0)
        spin_ns(spin)
        if tidx == 0:
            timeline_stamp(base + 8, False)

    @cute.kernel
    def secondary(self, stamps: cute.Pointer):
        tidx, _, _ = cute.arch.thread_idx()
        cta, _, _ = cute.arch.block_idx()
        if tidx == 0:
            timeline_stamp(stamps.toint() + cutlass.Int64(cta) * 8, False)
        if cutlass.const_expr(self.secondary_smem):
            smem = cutlass.memory.SmemAllocator()
            held = smem.allocate_array(cutlass.Uint8, self.secondary_smem, byte_alignment=128)
            if tidx == 0:  # (a use, so the allocation stays)
                held[0] = cutlass.Uint8(0)

    @cute.jit
    def __call__(self, primary_stamps: cute.Pointer, secondary_stamps: cute.Pointer, spin: Int64,
                 stream: cuda.CUstream):
        self.primary(primary_stamps, spin).launch(grid=(self.ctas, 1, 1), block=(self.primary_threads, 1, 1),
                                                  stream=stream, use_pdl=True,
                                                  preferred_smem_carveout=self.primary_carveout)
        self.secondary(secondary_stamps).launch(grid=(self.ctas, 1, 1), block=(self.secondary_threads, 1, 1),
                                                stream=stream, use_pdl=True)


def build(ctas: int, primary_threads: int, secondary_threads: int, secondary_smem: int,
          primary_carveout: int | None = None, primary_smem: int = 0):
    """The compiled probe (sm_90a; no GPU needed)."""
    from cutlass.cute.runtime import make_ptr

    probe = PdlProbe(ctas, primary_threads, secondary_threads, secondary_smem, primary_carveout, primary_smem)
    p = make_ptr(cutlass.Int64, 16, cute.AddressSpace.gmem, assumed_align=16)
    return cute.compile(probe, p, p, Int64(0), cuda.CUstream(0))


def main(argv: Sequence[str] | None = None) -> int:
    import torch
    from cutlass.cute.runtime import make_ptr

    ap = argparse.ArgumentParser(prog="python -m profiling.pdl_probe", description=__doc__.split("\n\n")[0])
    ap.add_argument("--spin-us", type=float, default=20.0)
    ap.add_argument("--primary-threads", type=int, default=128)
    ap.add_argument("--secondary-threads", type=int, default=288)
    ap.add_argument("--secondary-smem", default="0,100000,200000", help="bytes per secondary CTA, comma-separated")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--primary-smem", type=int, default=0, help="bytes of shared memory per primary CTA")
    ap.add_argument("--primary-carveout", default="none",
                    help="the primary's preferred shared-memory carveout in %%, comma-separated ('none': unset)")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("pdl_probe: no CUDA device", file=sys.stderr)
        return 2
    ctas = torch.cuda.get_device_properties(0).multi_processor_count
    print("| primary carveout % | secondary smem B | secondary start us (median / largest) | primary end us (median) "
          "| co-scheduled |")
    print("|---|---|---|---|---|")
    runs = [(None if c == "none" else int(c), int(b)) for c in args.primary_carveout.split(",")
            for b in args.secondary_smem.split(",")]
    for carveout, smem in runs:
        fn = build(ctas, args.primary_threads, args.secondary_threads, smem, carveout, args.primary_smem)
        starts, ends, lasts = [], [], []
        for _ in range(args.repeats):
            ps = torch.zeros(ctas * 2, dtype=torch.int64, device="cuda")
            ss = torch.zeros(ctas, dtype=torch.int64, device="cuda")
            fn(make_ptr(cutlass.Int64, ps.data_ptr(), cute.AddressSpace.gmem, assumed_align=16),
               make_ptr(cutlass.Int64, ss.data_ptr(), cute.AddressSpace.gmem, assumed_align=16),
               Int64(int(args.spin_us * 1000)), cuda.CUstream(torch.cuda.current_stream().cuda_stream))
            torch.cuda.synchronize()
            p = ps.view(ctas, 2).cpu()
            t0 = int(p[:, 0].min())
            s = [(int(x) - t0) / 1000 for x in ss.cpu()]
            starts.append(statistics.median(s))
            lasts.append(max(s))
            ends.append(statistics.median((int(x) - t0) / 1000 for x in p[:, 1]))
        start, last, end = statistics.median(starts), statistics.median(lasts), statistics.median(ends)
        print(f"| {carveout if carveout is not None else 'unset'} | {smem} | {start:.2f} / {last:.2f} | {end:.2f} "
              f"| {'yes' if start < 0.5 * end else 'no'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
