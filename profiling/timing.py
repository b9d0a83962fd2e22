"""The one GPU timing helper: warm-up, rotated inputs, CUDA-graph replay, events, full distribution.

How a device time is taken (docs/benchmarks.md):

* ``launches`` is a list of zero-argument callables, one per *copy* of the problem's inputs
  (``copies_for`` picks enough copies that their bytes exceed the L2 several times, so the cache
  does not flatter). Each is called once first: that compiles, fills the kernels' pointer-keyed
  device-table caches (no H2D copy may happen during capture) and warms up.
* One *replay* runs ``launches_per_replay`` launches, cycling through the copies. With
  ``method="graph"`` they are captured once into a CUDA graph (on a side stream, as PyTorch
  requires) and a replay is ``graph.replay()``; with ``method="events"`` a replay calls the
  launches directly (host launch overhead included when the host is slower than the device).
  ``"auto"`` tries the graph and falls back to events when capture fails.
* Every replay is bracketed by CUDA events on the current stream and synchronized; a *sample* is
  the replay's elapsed time divided by its launches. All samples are kept; the median is the
  headline, the inter-quartile range the spread.

:meth:`Replayer.replay` is what a pytest-benchmark target calls: it is device-bound (it ends
with a synchronize), so pytest-benchmark's host clock tracks device time, and it records the
event sample of the same replay. The clock is pluggable (:class:`FakeClock`) so the statistics
are tested on a CPU.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

H200_L2_BYTES = 50 * 1024 * 1024  # the H200's L2 is 50 MB


# ---------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class Stats:
    n: int
    median: float
    mean: float
    stdev: float
    min: float
    max: float
    q1: float
    q3: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def rel_iqr(self) -> float:
        """IQR / median: the run's relative spread."""
        return self.iqr / self.median if self.median else float("nan")


def _quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default 'linear' method)."""
    if not sorted_xs:
        return float("nan")
    pos = (len(sorted_xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def summarize(samples: Sequence[float]) -> Stats:
    xs = sorted(float(x) for x in samples)
    if not xs:
        raise ValueError("no samples")
    return Stats(
        n=len(xs),
        median=statistics.median(xs),
        mean=statistics.fmean(xs),
        stdev=statistics.stdev(xs) if len(xs) > 1 else 0.0,
        min=xs[0],
        max=xs[-1],
        q1=_quantile(xs, 0.25),
        q3=_quantile(xs, 0.75),
    )


@dataclass(frozen=True)
class DeviceTiming:
    """Per-launch device times (us), one sample per replay, warm-up excluded."""

    samples_us: tuple[float, ...]
    launches_per_replay: int
    copies: int
    method: str  # "graph" or "events" (or "fake")
    warmup: int

    @functools.cached_property
    def stats(self) -> Stats:
        return summarize(self.samples_us)

    @property
    def median_us(self) -> float:
        return self.stats.median

    @property
    def spread_us(self) -> float:
        return self.stats.iqr

    def as_dict(self, prefix: str = "device_") -> dict:
        s = self.stats
        return {
            f"{prefix}median_us": s.median,
            f"{prefix}mean_us": s.mean,
            f"{prefix}stdev_us": s.stdev,
            f"{prefix}min_us": s.min,
            f"{prefix}max_us": s.max,
            f"{prefix}q1_us": s.q1,
            f"{prefix}q3_us": s.q3,
            f"{prefix}iqr_us": s.iqr,
            f"{prefix}rel_iqr": s.rel_iqr,
            f"{prefix}samples_us": [round(x, 4) for x in self.samples_us],
            f"{prefix}method": self.method,
            f"{prefix}launches_per_replay": self.launches_per_replay,
            f"{prefix}input_copies": self.copies,
            f"{prefix}warmup_replays": self.warmup,
        }


# ---------------------------------------------------------------------------- clocks


class Clock(Protocol):
    def mark(self) -> Any: ...

    def elapsed_us(self, start: Any, end: Any) -> float: ...

    def synchronize(self, end: Any) -> None: ...


class CudaEventClock:
    """CUDA events recorded on the current stream (the stream the kernels launch on)."""

    def __init__(self):
        import torch

        self._torch = torch

    def mark(self):
        e = self._torch.cuda.Event(enable_timing=True)
        e.record()
        return e

    def elapsed_us(self, start, end) -> float:
        return start.elapsed_time(end) * 1e3

    def synchronize(self, end) -> None:
        end.synchronize()


class FakeClock:
    """A clock for tests: launches call :meth:`advance`; marks read the current time."""

    def __init__(self):
        self.now_us = 0.0
        self.syncs = 0

    def advance(self, us: float) -> None:
        self.now_us += us

    def mark(self) -> float:
        return self.now_us

    def elapsed_us(self, start: float, end: float) -> float:
        return end - start

    def synchronize(self, end) -> None:
        self.syncs += 1


# ---------------------------------------------------------------------------- sizing


def copies_for(bytes_per_copy: int, *, l2_bytes: int = H200_L2_BYTES, factor: float = 3.0,
               max_copies: int = 64, max_total_bytes: float = 8e9) -> int:
    """How many input copies to rotate through so that together they exceed ``factor`` x L2."""
    if bytes_per_copy <= 0:
        return 1
    want = math.ceil(factor * l2_bytes / bytes_per_copy)
    by_memory = max(1, int(max_total_bytes // bytes_per_copy))
    return max(1, min(want, max_copies, by_memory))


def launches_for(estimate_us: float, copies: int, *, target_us: float = 1000.0,
                 max_launches: int = 256) -> int:
    """Launches per replay: about ``target_us`` of work, a multiple of ``copies``.

    Derive ``estimate_us`` from the shape (e.g. its floor), never from a measurement, so the
    replay, and therefore pytest-benchmark's statistics, mean the same thing run after run.
    """
    copies = max(1, int(copies))
    n = math.ceil(target_us / estimate_us) if estimate_us > 0 else max_launches
    n = max(copies, min(n, max_launches))
    return math.ceil(n / copies) * copies


# ---------------------------------------------------------------------------- replayer


def _cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


class Replayer:
    """Warm, capture and replay ``launches_per_replay`` launches over rotated input copies."""

    def __init__(self, launches: Sequence[Callable[[], Any]], *, launches_per_replay: int | None = None,
                 method: str = "auto", clock: Clock | None = None):
        if not launches:
            raise ValueError("need at least one launch")
        if method not in ("auto", "graph", "events"):
            raise ValueError(f"unknown method {method!r}")
        self.launches = list(launches)
        self.launches_per_replay = int(launches_per_replay or len(self.launches))
        if self.launches_per_replay < 1:
            raise ValueError("launches_per_replay must be >= 1")
        self.clock = clock if clock is not None else CudaEventClock()
        self._fake = isinstance(self.clock, FakeClock)
        self.requested_method = method
        self.method: str | None = None
        self.capture_error: str | None = None
        self._graph = None
        self.samples_us: list[float] = []
        self.warmup_replays = 0

    # the launch order inside one replay: copy i % copies
    def order(self) -> list[int]:
        return [i % len(self.launches) for i in range(self.launches_per_replay)]

    def _run_direct(self) -> None:
        for i in self.order():
            self.launches[i]()

    def prepare(self) -> "Replayer":
        """Call every copy once (compile, device tables, warm-up), then capture if asked."""
        for launch in self.launches:
            launch()
        self._sync_device()
        if self._fake or self.requested_method == "events":
            self.method = "events"
            return self
        try:
            self._capture()
            self.method = "graph"
        except Exception as exc:  # capture not possible (e.g. a launch on the legacy stream)
            if self.requested_method == "graph":
                raise
            self.capture_error = f"{type(exc).__name__}: {exc}"[:500]
            self._graph = None
            self._sync_device()
            self.method = "events"
        return self

    def _sync_device(self) -> None:
        if not self._fake and _cuda_available():
            import torch

            torch.cuda.synchronize()

    def _capture(self) -> None:
        import torch

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self._run_direct()  # warm on the capture stream (PyTorch's recipe)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._run_direct()
        graph.replay()  # one replay to load the graph
        torch.cuda.synchronize()
        self._graph = graph

    def _replay_once(self) -> float:
        if self.method is None:
            self.prepare()
        start = self.clock.mark()
        if self._graph is not None:
            self._graph.replay()
        else:
            self._run_direct()
        end = self.clock.mark()
        self.clock.synchronize(end)
        return self.clock.elapsed_us(start, end) / self.launches_per_replay

    def warmup(self, replays: int = 3) -> None:
        for _ in range(replays):
            self._replay_once()
        self.warmup_replays += replays

    def replay(self) -> float:
        """One synchronized replay (a pytest-benchmark target); keeps and returns its sample."""
        sample = self._replay_once()
        self.samples_us.append(sample)
        return sample

    def timing(self) -> DeviceTiming:
        if not self.samples_us:
            raise RuntimeError("no replay recorded")
        return DeviceTiming(
            samples_us=tuple(self.samples_us),
            launches_per_replay=self.launches_per_replay,
            copies=len(self.launches),
            method="fake" if self._fake else (self.method or "?"),
            warmup=self.warmup_replays,
        )


def time_device(launches: Sequence[Callable[[], Any]], *, samples: int = 30, warmup: int = 3,
                launches_per_replay: int | None = None, method: str = "auto",
                clock: Clock | None = None) -> DeviceTiming:
    """Device time per launch of ``launches`` (one callable per input copy): see the module doc."""
    r = Replayer(launches, launches_per_replay=launches_per_replay, method=method, clock=clock)
    r.prepare()
    r.warmup(warmup)
    for _ in range(samples):
        r.replay()
    return r.timing()


# ---------------------------------------------------------------------------- ceilings


@functools.lru_cache(maxsize=None)
def measure_ceilings(copy_bytes: int = 1 << 30, matmul_n: int = 8192, samples: int = 10):
    """This GPU's achievable bandwidth (D2D copy, read + write bytes) and bf16 matmul rate.

    Measured once per process with :func:`time_device`; returns :class:`profiling.floors.Ceilings`.
    """
    import torch

    from profiling.floors import Ceilings

    src = torch.empty(copy_bytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    copy = time_device([lambda: dst.copy_(src)], samples=samples, launches_per_replay=4)
    a = torch.randn(matmul_n, matmul_n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(matmul_n, matmul_n, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(a)
    mm = time_device([lambda: torch.matmul(a, b, out=out)], samples=samples, launches_per_replay=4)
    bandwidth = 2 * copy_bytes / (copy.median_us * 1e-6)
    flops = 2 * matmul_n**3 / (mm.median_us * 1e-6)
    del src, dst, a, b, out
    torch.cuda.empty_cache()
    return Ceilings(
        bandwidth=bandwidth,
        tensor_flops=flops,
        source=f"measured in this process on {torch.cuda.get_device_name()}: "
        f"{copy_bytes >> 20} MiB D2D copy, bf16 {matmul_n}^3 matmul (medians)",
    )


# ---------------------------------------------------------------------------- extra_info


@dataclass
class BenchRecord:
    """Everything a GPU benchmark puts into ``benchmark.extra_info``."""

    subject: str
    variant: str
    shape: Any  # profiling.floors.ShapeSet
    timing: DeviceTiming
    ceilings: Any  # profiling.floors.Ceilings
    peer: DeviceTiming | None = None
    peer_name: str = "cublas_bf16_predequantized"
    notes: dict = field(default_factory=dict)

    def extra_info(self) -> dict:
        from profiling.floors import floor, rates

        f = floor(self.shape, self.ceilings)
        median = self.timing.median_us
        info = {
            "subject": self.subject,
            "variant": self.variant,
            "shape": self.shape.name,
            "problem_sizes": self.shape.problem_sizes(),
            **self.timing.as_dict(),
            **rates(self.shape, median),
            **f.as_dict(),
            "time_over_floor": median / f.floor_us if f.floor_us else float("nan"),
        }
        if self.peer is not None:
            info["peer"] = self.peer_name
            info["peer_median_us"] = self.peer.median_us
            info["peer_iqr_us"] = self.peer.spread_us
            info["time_over_peer"] = median / self.peer.median_us
        info.update(self.notes)
        return info
