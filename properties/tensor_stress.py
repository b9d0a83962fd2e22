"""A co-resident tensor-pipe stressor: wgmma traffic from another stream while the subject runs.

Why: some races of a pipelined wgmma kernel need the tensor pipe to fall *behind* the warps that
issue into it. A buffer rewritten one wait too early (a lax ``wgmma.wait_group``, a missing reuse
barrier) is only read late if the wgmma group that reads it is still queued after its warps have
done a whole sub-block's dequantization. Delays inside the kernel cannot make that happen: the
kernel's barriers couple the warps, so a delayed warp holds the others back and the pipe catches up
(docs/judging.md, the tensor-pipe stressor), and extra wgmmas queued by the kernel's own warps stall
those warps at issue. Work queued by *another CTA on the same SM* does neither: its warps are not
bound by the subject's barriers, and every SM sub-partition's tensor core is shared by all the
warps resident on it. So this module launches, on a side stream, one small CTA per SM (one
warpgroup, 1 KB of shared memory, few registers) that queues bursts of ``m64n128k16`` wgmmas (~128
tensor cycles each) until the subject has finished.
The subject's wgmma groups then wait behind them, while its dequantizing warps run at full speed:
the backlog the races need ("stress" in the sense of Alglave et al., ASPLOS 2015).

How a stressed launch runs (:meth:`TensorPipeStress.run`), every step stream-ordered:

1. side stream (after the current stream's earlier work): zero the control block, launch the
   stressor (one CTA per SM); each CTA counts itself in, then loops: a burst of wgmmas, wait for
   it, a pseudo-random pause, poll the stop word, until it is set or ``cap_ns`` passed (a safety
   net);
2. current stream: a one-warp gate that spins until every stressor CTA has started, so the
   subject's CTAs land next to running stressor CTAs rather than before them;
3. the subject's own launch (``run(data)``: unchanged, on the current stream);
4. current stream: set the stop word.

What it needs: room on each SM for one stressor CTA next to the subject's CTA: shared memory
(1 KB + the reserved 2 KB), 128 threads, 58 registers, and registers *per SM sub-partition*
(:func:`fits_beside`: each of the four has its own 16 K-register file, and a CTA's warp ``w``
lives on sub-partition ``w % 4``).

**Measured on the H200 (2026-12-01): it does not get that room beside the Hopper variants.** A
torch elementwise kernel runs beside the stressor (37.8 us, the stressor stopped by the stop word:
the gate and stop protocol work), but no CTA of the default variant, of ``_rs`` or of a cuBLAS
fp16 matmul ever started beside it: every such launch waited for the stressor's cap, whatever the
stressor's shared-memory carveout (default, 50, 85, 86, 90, 100 %), with a 122- and a
58-register stressor, flooding or in bursts. The host time of the subject's call stayed far
below the wait (95 us stressed, 44 us plain, against the 100 ms cap that run had), so it is the GPU that does not place those ~190 KB CTAs on an SM that runs another
kernel's CTA. Hence it is off by default (``NVFP4_TENSOR_STRESS=1`` turns it on, see
properties/perturbed.py); a subject with smaller CTAs can use it as is. What would get around it
(not built): a stressor warpgroup inside the subject's own CTA in perturbed builds. When a
subject does not run beside the stressor its launch waits until the stressor's cap (20 ms): the
result is still checked, :attr:`StressReport.overlapped` says so, and later launches of that
variant in the process run without the stressor (:func:`stressed`).

The stressor's wgmmas read uninitialized shared memory into accumulators nobody reads; it writes
only its control block. Hopper (sm_90a) only: on other devices :func:`stress_available` is false
and the subject runs unstressed.
"""

import functools
import os
from dataclasses import dataclass
from typing import Callable

STRESS_THREADS = 128  # one warpgroup: a wgmma needs exactly that
# both operands read one 256-byte window (their descriptors step 128 bytes along K and 0 along
# M/N: every core matrix aliases the first two), so the stressor takes next to no shared memory
STRESS_SMEM_BYTES = 1024
# Bursts, not a flood: measured on the H200 (2026-12-01), a stressor that always kept wgmmas queued starved
# the subject's wgmmas completely (every subject launch finished only when the stressor stopped
# at its cap). So each turn issues one group of WGMMAS_PER_GROUP wgmmas (~0.5 us of tensor
# work), waits for it, then sleeps a pseudo-random 0..GAP_MAX_NS (per SM and turn): a subject
# wgmma group issued during a burst executes after it, up to a burst late, and the subject
# still gets the pipe between bursts.
WGMMAS_PER_GROUP = 16
GAP_MAX_NS = 1024
DEFAULT_CAP_NS = 20_000_000  # the stressor's own limit (20 ms): only reached when the subject could not run beside it
# The stressor's preferred L1/shared split (percent of 228 KB): 85 % is the 196 KB split that a
# ~190 KB subject CTA needs. Measured on the H200 (2026-12-01): no split (default, 50, 85, 86, 90, 100 %) let
# a Hopper subject CTA start beside it (module docstring).
SMEM_CARVEOUT_PERCENT = 85
GATE_CAP_NS = 50_000_000
# control block (int32 words): stop flag, CTAs started, gate timed out, spare, then per CTA
# SLOT_WORDS: iterations, end code | smid << 8 (end code 1 = stopped by the flag, 2 = by its
# cap), one accumulator word (stored so that ptxas keeps every wgmma: with a result nobody
# reads it folds them into one HGMMA.64x8x16 of nothing), spare
SLOT_WORDS = 4
STOP_WORD, STARTED_WORD, GATE_TIMEOUT_WORD = 0, 1, 2
HEADER_WORDS = 4
END_BY_FLAG, END_BY_CAP = 1, 2
ARCH = "sm_90a"


MMA_N = 128  # m64n128k16: a 32-register accumulator (f16), ~128 tensor cycles per wgmma
ACC_REGS = MMA_N // 4


def _acc_list(n: int = ACC_REGS) -> str:
    return ", ".join(f"d{i}" for i in range(n))


def stress_loop_asm(wgmmas: int = WGMMAS_PER_GROUP, gap_max_ns: int = 0) -> str:
    """The stressor CTA's whole life, one inline-PTX block. Operands: ``$0`` shared base (u32),
    ``$1`` control block (u64), ``$2`` cap in ns (u64), ``$3`` this CTA's report slot (u64),
    ``$4`` thread index (u32). The loop's exit is decided for the whole CTA (``bar.red.or``),
    so every wgmma (``.sync.aligned``) is issued by all four warps together."""
    gap_max_ns = gap_max_ns or GAP_MAX_NS
    zero = "\n".join(f"mov.b32 d{i}, 0;" for i in range(ACC_REGS))
    # both operands from shared memory (A from registers would cost ptxas a copy of the
    # fragment per wgmma in flight: 122 registers), the same bytes for A and B
    mma = (f"wgmma.mma_async.sync.aligned.m64n{MMA_N}k16.f16.f16.f16 {{{_acc_list()}}}, desc, desc, "
           f"pz, 1, 1, 0, 0;")
    body = "\n".join([mma] * wgmmas)
    return f"""{{
.reg .b32 d<{ACC_REGS}>;
.reg .b32 lo, hi, flag, it, code, smid, one, gap;
.reg .b64 desc, t0, t1, el;
.reg .pred pz, mine, late, stop, leader;
{zero}
setp.eq.b32 pz, 0, 0;
shr.b32 lo, $0, 4;
and.b32 lo, lo, 16383;
or.b32 lo, lo, 524288;
mov.b32 hi, 0;
mov.b64 desc, {{lo, hi}};
setp.eq.u32 leader, $4, 0;
@leader atom.global.add.u32 one, [$1+4], 1;
mov.b32 it, 0;
mov.u64 t0, %globaltimer;
NVFP4_STRESS_LOOP:
wgmma.fence.sync.aligned;
{body}
wgmma.commit_group.sync.aligned;
wgmma.wait_group.sync.aligned 0;
add.u32 it, it, 1;
mov.u32 smid, %smid;
mad.lo.u32 gap, it, 1103515245, smid;
mad.lo.u32 gap, gap, 747796405, 2891336453;
shr.u32 gap, gap, 16;
rem.u32 gap, gap, {gap_max_ns};
nanosleep.u32 gap;
ld.volatile.global.u32 flag, [$1];
mov.u64 t1, %globaltimer;
sub.u64 el, t1, t0;
setp.ge.u64 late, el, $2;
setp.ne.b32 mine, flag, 0;
or.pred mine, mine, late;
bar.red.or.pred stop, 0, mine;
@!stop bra NVFP4_STRESS_LOOP;
wgmma.wait_group.sync.aligned 0;
ld.volatile.global.u32 flag, [$1];
setp.ne.b32 mine, flag, 0;
selp.b32 code, 1, 2, mine;
mov.u32 smid, %smid;
shl.b32 smid, smid, 8;
or.b32 code, code, smid;
@leader st.global.u32 [$3], it;
@leader st.global.u32 [$3+4], code;
@leader st.global.u32 [$3+8], d0;
}}"""


def gate_asm() -> str:
    """The gate (one warp): spin until ``$1`` stressor CTAs counted themselves in at ``[$0+4]``,
    or ``$2`` ns passed (then word 2 := 1). Operands: ``$0`` control block (u64), ``$1`` CTAs
    (u32), ``$2`` cap (u64), ``$3`` thread index (u32)."""
    return """{
.reg .b32 n;
.reg .b64 t0, t1, el;
.reg .pred done, late, leader;
mov.u64 t0, %globaltimer;
NVFP4_GATE_LOOP:
ld.volatile.global.u32 n, [$0+4];
setp.ge.u32 done, n, $1;
mov.u64 t1, %globaltimer;
sub.u64 el, t1, t0;
setp.ge.u64 late, el, $2;
@late bra NVFP4_GATE_OUT;
@!done nanosleep.u32 200;
@!done bra NVFP4_GATE_LOOP;
NVFP4_GATE_OUT:
setp.eq.u32 leader, $3, 0;
and.pred late, late, leader;
@late st.global.u32 [$0+8], 1;
}"""


@functools.lru_cache(maxsize=None)
def compiled_kernels(dump_dir: str | None = None, carveout: int = SMEM_CARVEOUT_PERCENT):
    """(stressor, gate): compiled host functions ``stressor(ctrl_ptr, cap_ns, ctas, stream)``,
    ``gate(ctrl_ptr, ctas, cap_ns, stream)``. No GPU needed (``dump_dir`` keeps the cubins)."""
    os.environ.setdefault("CUTE_DSL_ARCH", ARCH)
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr
    from cutlass._mlir.dialects import llvm

    def asm(text: str, constraints: str, operands: list) -> None:
        llvm.inline_asm(None, operands, text, constraints, has_side_effects=True, is_align_stack=False,
                        asm_dialect=llvm.AsmDialect.AD_ATT)

    @cute.kernel
    def stress_kernel(ctrl: cute.Pointer, cap_ns: cutlass.Int64):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        buf = smem.allocate_array(cutlass.Int8, STRESS_SMEM_BYTES, byte_alignment=1024)
        base = buf.toint()
        slot = ctrl.toint() + cutlass.Int64(4 * HEADER_WORDS) + cutlass.Int64(bidx) * cutlass.Int64(4 * SLOT_WORDS)
        asm(stress_loop_asm(), "r,l,l,l,r,~{memory}",
            [cutlass.Int32(base).ir_value(), cutlass.Int64(ctrl.toint()).ir_value(), cutlass.Int64(cap_ns).ir_value(),
             cutlass.Int64(slot).ir_value(), cutlass.Int32(tidx).ir_value()])

    @cute.kernel
    def gate_kernel(ctrl: cute.Pointer, ctas: cutlass.Int32, cap_ns: cutlass.Int64):
        tidx, _, _ = cute.arch.thread_idx()
        asm(gate_asm(), "l,r,l,r,~{memory}",
            [cutlass.Int64(ctrl.toint()).ir_value(), cutlass.Int32(ctas).ir_value(), cutlass.Int64(cap_ns).ir_value(),
             cutlass.Int32(tidx).ir_value()])

    @cute.jit
    def launch_stress(ctrl: cute.Pointer, cap_ns: cutlass.Int64, ctas: cutlass.Int32, stream: cuda.CUstream):
        stress_kernel(ctrl, cap_ns).launch(grid=(ctas, 1, 1), block=(STRESS_THREADS, 1, 1), stream=stream,
                                           preferred_smem_carveout=carveout)

    @cute.jit
    def launch_gate(ctrl: cute.Pointer, ctas: cutlass.Int32, cap_ns: cutlass.Int64, stream: cuda.CUstream):
        gate_kernel(ctrl, ctas, cap_ns).launch(grid=(1, 1, 1), block=(32, 1, 1), stream=stream,
                                               preferred_smem_carveout=carveout)

    opts = f"--gpu-arch {ARCH}" + (f" --keep-cubin --dump-dir {dump_dir}" if dump_dir else "")
    fake = make_ptr(cutlass.Int32, 16, cute.AddressSpace.gmem, assumed_align=16)
    stress = cute.compile(launch_stress, fake, cutlass.Int64(1), cutlass.Int32(1), cuda.CUstream(0), options=opts)
    gate = cute.compile(launch_gate, fake, cutlass.Int32(1), cutlass.Int64(1), cuda.CUstream(0), options=opts)

    def ptr(address: int):
        return make_ptr(cutlass.Int32, address, cute.AddressSpace.gmem, assumed_align=16)

    def run_stress(ctrl_address: int, cap_ns: int, ctas: int, stream_handle: int) -> None:
        stress(ptr(ctrl_address), cutlass.Int64(cap_ns), cutlass.Int32(ctas), cuda.CUstream(stream_handle))

    def run_gate(ctrl_address: int, ctas: int, cap_ns: int, stream_handle: int) -> None:
        gate(ptr(ctrl_address), cutlass.Int32(ctas), cutlass.Int64(cap_ns), cuda.CUstream(stream_handle))

    return run_stress, run_gate


def stress_available(device=None) -> bool:
    """The stressor runs on sm_90 devices (its wgmma is Hopper's)."""
    import torch

    if not torch.cuda.is_available():
        return False
    return torch.cuda.get_device_capability(device) == (9, 0)


@dataclass(frozen=True)
class StressReport:
    """What the stressor of one stressed launch did (read after the device synchronized)."""

    ctas: int  # stressor CTAs launched (one per SM)
    started: int  # how many counted themselves in
    gate_timed_out: bool
    ended_by_flag: int  # stopped by the subject's stop word: they ran beside the whole subject
    ended_by_cap: int  # stopped by their own cap: the subject waited for them (no room beside them)
    iterations: int  # wgmma groups of 8 issued, all CTAs
    sms: int  # distinct SMs the stressor CTAs ran on

    @property
    def overlapped(self) -> bool:
        """The subject ran while every stressor CTA was running (the stop word came first)."""
        return self.started == self.ctas and not self.gate_timed_out and self.ended_by_flag == self.ctas

    def line(self) -> str:
        return (f"tensor-pipe stress: {self.ctas} CTAs on {self.sms} SMs, {self.iterations} wgmma groups, "
                f"{'ran beside the subject' if self.overlapped else 'NOT beside the subject'} "
                f"(flag {self.ended_by_flag}, cap {self.ended_by_cap}, gate timeout {self.gate_timed_out})")


class TensorPipeStress:
    """One stressor per process and device: :meth:`run` launches the subject beside it."""

    def __init__(self, cap_ns: int = DEFAULT_CAP_NS, ctas: int | None = None, carveout: int = SMEM_CARVEOUT_PERCENT):
        import torch

        self.cap_ns = cap_ns
        self.ctas = ctas or torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        self.ctrl = torch.zeros(HEADER_WORDS + SLOT_WORDS * self.ctas, dtype=torch.int32, device="cuda")
        self.side = torch.cuda.Stream()
        self.launch_stress, self.launch_gate = compiled_kernels(None, carveout)
        self.launched = 0

    def run(self, run: Callable, data):
        """``run(data)`` (which launches the subject on the current stream) beside the stressor."""
        import torch

        main = torch.cuda.current_stream()
        self.side.wait_stream(main)  # the previous stop word and any reader of ctrl come first
        with torch.cuda.stream(self.side):
            self.ctrl.zero_()
            self.launch_stress(self.ctrl.data_ptr(), self.cap_ns, self.ctas, self.side.cuda_stream)
        self.launch_gate(self.ctrl.data_ptr(), self.ctas, GATE_CAP_NS, main.cuda_stream)
        try:
            return run(data)
        finally:
            self.ctrl[STOP_WORD:STOP_WORD + 1].fill_(1)  # current stream: after the subject's launch
            main.wait_stream(self.side)  # whoever synchronizes the current stream waits for the stressor too
            self.launched += 1

    def report(self) -> StressReport:
        """The last stressed launch's report (synchronizes the side stream)."""
        self.side.synchronize()
        words = self.ctrl.cpu().tolist()
        per = words[HEADER_WORDS:]
        iters, codes = per[0::SLOT_WORDS], per[1::SLOT_WORDS]
        ends = [c & 0xFF for c in codes]
        return StressReport(ctas=self.ctas, started=words[STARTED_WORD], gate_timed_out=bool(words[GATE_TIMEOUT_WORD]),
                            ended_by_flag=ends.count(END_BY_FLAG), ended_by_cap=ends.count(END_BY_CAP),
                            iterations=sum(iters), sms=len({c >> 8 for c in codes if c & 0xFF}))


@functools.lru_cache(maxsize=None)
def stress_for_device(device_index: int, carveout: int = SMEM_CARVEOUT_PERCENT) -> TensorPipeStress:
    import torch

    with torch.cuda.device(device_index):
        return TensorPipeStress(carveout=carveout)


# base labels (no perturbation tag) whose launch did not run beside the stressor: no room on the SM
NO_ROOM: set = set()


def stressed(run: Callable, key: str = "") -> Callable:
    """``run`` launched beside the tensor-pipe stressor where the device has one (sm_90);
    unchanged elsewhere. The wrapper's ``last_report()`` gives the last stressed launch's
    :class:`StressReport` (None before the first). When a launch of ``key`` (the variant's base
    label) did not run beside the stressor (no room on the SM: :func:`fits_beside`), later
    launches of ``key`` in this process run without it, and say so once on stderr."""
    state: dict = {"stress": None}

    def run_stressed(data):
        import sys

        import torch

        if not stress_available() or key in NO_ROOM:
            return run(data)
        if state["stress"] is not None and not state["stress"].report().overlapped:
            NO_ROOM.add(key)
            print(f"tensor stress: {key or 'this subject'} does not run beside the stressor (no room on the SM); "
                  f"its later stressed seeds run without it", file=sys.stderr)
            return run(data)
        stress = stress_for_device(torch.cuda.current_device())
        state["stress"] = stress
        return stress.run(run, data)

    def last_report():
        return state["stress"].report() if state["stress"] is not None else None

    run_stressed.last_report = last_report
    run_stressed.stressed = True
    return run_stressed


def warp_registers(regs_per_thread: int) -> int:
    """Registers a warp holds: allocated per warp in units of 256."""
    return -(-regs_per_thread * 32 // 256) * 256


def fits_beside(subject_regs: int, subject_warps: int, stress_regs: int,
                smsp_registers: int = 16384, smsps: int = 4) -> bool:
    """Whether one stressor CTA (4 warps, one per SM sub-partition) and one subject CTA fit in
    the register files together. Each sub-partition has its own register file (16 K of the
    SM's 64 K), and warp ``w`` of a CTA lives on sub-partition ``w % 4``, so the fullest one
    holds ``ceil(warps / 4)`` subject warps plus one stressor warp. (Shared memory and threads
    leave room for both catalog variants.) The ``_rs`` variant's 9 warps at 161 registers put
    3 x 5376 on one sub-partition: no stressor fits beside it. A necessary condition only: the
    default variant meets it, and the H200 (2026-12-01) still never placed its CTA beside a stressor CTA
    (module docstring)."""
    fullest = -(-subject_warps // smsps)
    return fullest * warp_registers(subject_regs) + warp_registers(stress_regs) <= smsp_registers


def main(argv=None) -> int:
    """``python -m properties.tensor_stress --compile [--dump DIR]``: compile both kernels for
    sm_90a (no GPU needed). ``--measure``: on an H200, time a production variant on one shape
    with and without the stressor and print the stressor's report (how much it slows the
    subject's tensor pipe)."""
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--dump", default=None)
    p.add_argument("--measure", action="store_true")
    p.add_argument("--variant", action="append", default=[])
    p.add_argument("--shape", default="bench3")
    p.add_argument("--torch-subjects", action="store_true",
                   help="also time two torch kernels beside the stressor (an elementwise op, an fp16 matmul)")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--carveout", type=int, action="append", default=[],
                   help="the stressor's shared-memory carveout in percent (repeatable; default %d)" % SMEM_CARVEOUT_PERCENT)
    args = p.parse_args(argv)
    if args.compile:
        compiled_kernels(args.dump)
        print(f"compiled the tensor-pipe stressor and its gate for {ARCH}" + (f" into {args.dump}" if args.dump else ""))
    if args.torch_subjects:
        _measure_torch(args.reps, args.carveout or [SMEM_CARVEOUT_PERCENT])
    if args.measure:
        return _measure(args.variant or ["h90_m128n128k256_s3_wg1_fp16"], args.shape, args.reps,
                        args.carveout or [SMEM_CARVEOUT_PERCENT])
    return 0


def _measure_torch(reps: int, carveouts) -> None:
    import statistics

    import torch

    x = torch.ones(1 << 20, device="cuda")
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    subjects = {"elementwise": lambda d: x.mul_(1.0), "fp16 matmul 4096^3": lambda d: a @ a}
    for carveout in carveouts:
        stress = stress_for_device(torch.cuda.current_device(), carveout)
        for name, fn in subjects.items():
            fn(None)
            times = []
            for _ in range(reps):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

                def timed(d, fn=fn, start=start, end=end):
                    start.record()
                    fn(d)
                    end.record()

                stress.run(timed, None)
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end) * 1000)
            print(f"torch {name} (carveout {carveout} %): {statistics.median(times):.1f} us beside the stressor; "
                  f"{stress.report().line()}", flush=True)


def _measure(labels, shape_name: str, reps: int, carveouts) -> int:
    import statistics
    import time

    import torch

    import oracle
    from kernel.family import get_family
    from profiling import floors

    family = get_family("hopper")
    shape = floors.get_shape(shape_name)
    data = oracle.make_inputs(shape.problem_sizes(), 1111, distribution="uniform", device="cuda")
    status = 0
    for label, carveout in [(label, c) for c in carveouts for label in labels]:
        stress = stress_for_device(torch.cuda.current_device(), carveout)
        config = family.find(label)
        run = lambda d, config=config: family.custom_kernel(d, config)  # noqa: E731
        run(data)
        torch.cuda.synchronize()
        timings = {}
        host: list = []
        for mode in ("plain", "stressed"):
            times = []
            for _ in range(reps):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

                def timed(d, start=start, end=end):
                    start.record()
                    t = time.perf_counter()
                    out = run(d)
                    host.append((time.perf_counter() - t) * 1e6)
                    end.record()
                    return out

                stress.run(timed, data) if mode == "stressed" else timed(data)
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end) * 1000)
            timings[mode] = statistics.median(times)
            timings[mode + "_host"] = statistics.median(host[-reps:])
        report = stress.report()
        check = oracle.check_outputs(data)
        status = status or (0 if report.overlapped else 1)
        print(f"{label} {shape_name} (stressor carveout {carveout} %): plain {timings['plain']:.1f} us, beside the stressor {timings['stressed']:.1f} us "
              f"({timings['stressed'] / timings['plain']:.2f}x, host launch included; host time of the call "
              f"{timings['plain_host']:.0f} / {timings['stressed_host']:.0f} us); {report.line()}; "
              f"last output {'matches' if check.ok else 'DIFFERS FROM'} the oracle", flush=True)
    return status  # 1: the stressor did not run beside some subject


if __name__ == "__main__":
    raise SystemExit(main())
