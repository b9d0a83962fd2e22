"""Roofline floors for the NVFP4 grouped GEMM: shape sets, bytes, FLOPs, floor times.

Pure Python (no torch, no GPU). One *shape set* is a grouped problem: a name and a list of
per-group ``(m, n, k, l)`` sizes, as the leaderboard's ``problem_sizes``; the named ones are
declared once, in :mod:`profiling.shape_suite` (:func:`get_shape` looks them up there).

* bytes moved at least once: NVFP4 A and B (half a byte per element), their E4M3 scales (one
  byte per 16 K elements, *unpadded*; pass ``padded_scales=True`` for the 128x4-padded
  blocked layout the Blackwell kernel reads) and the fp16 C written;
* FLOPs: ``2 * m * n * k`` per group;
* floor = max(bytes / bandwidth, FLOPs / tensor rate). The default ceilings are the reference
  H200 figures (measured 2026-11-29: 4.3e12 B/s device-to-device copy, 790e12 FLOP/s
  bf16 dense matmul); pass :class:`Ceilings` measured on the machine at hand
  (``profiling.timing.measure_ceilings``) to get floors at its rates.

With the defaults the bytes / FLOPs floors of bench1 are 33.6 / 76.1 us; the reference floors
are docs/results.md row 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

Size = tuple[int, int, int, int]

# The reference H200 ceilings, measured 2026-11-29 (docs/benchmarks.md, "Floors and shapes").
H200_COPY_BYTES_PER_S = 4.3e12
H200_BF16_FLOPS_PER_S = 790e12


@dataclass(frozen=True)
class Ceilings:
    """Achievable machine rates: memory bandwidth (B/s) and tensor-core rate (FLOP/s)."""

    bandwidth: float = H200_COPY_BYTES_PER_S
    tensor_flops: float = H200_BF16_FLOPS_PER_S
    source: str = "H200 ceilings measured 2026-11-29 (docs/results.md)"

    def __post_init__(self):
        if not (self.bandwidth > 0 and self.tensor_flops > 0):
            raise ValueError(f"ceilings must be positive, got {self}")


DEFAULT_CEILINGS = Ceilings()


@dataclass(frozen=True)
class ShapeSet:
    """A grouped problem: ``name``, per-group sizes, the suite ``family`` it belongs to
    (profiling.shape_suite.FAMILIES; "" for a shape made on the fly) and where it comes from."""

    name: str
    sizes: tuple[Size, ...]
    family: str = ""
    provenance: str = ""

    @property
    def num_groups(self) -> int:
        return len(self.sizes)

    def problem_sizes(self) -> list[list[int]]:
        """As ``oracle.make_inputs`` / the leaderboard tuple take them."""
        return [list(s) for s in self.sizes]

    def describe(self) -> str:
        ms = [s[0] for s in self.sizes]
        ns = sorted({s[1] for s in self.sizes})
        ks = sorted({s[2] for s in self.sizes})
        return f"{self.name}: G={self.num_groups} M={ms} N={ns if len(ns) > 1 else ns[0]} K={ks if len(ks) > 1 else ks[0]}"


def shape_set(name: str, ms: Sequence[int], ns: Sequence[int] | int, ks: Sequence[int] | int,
              family: str = "", provenance: str = "") -> ShapeSet:
    g = len(ms)
    ns = [ns] * g if isinstance(ns, int) else list(ns)
    ks = [ks] * g if isinstance(ks, int) else list(ks)
    if not (len(ns) == len(ks) == g):
        raise ValueError(f"{name}: per-group lists of different lengths")
    return ShapeSet(name, tuple((int(m), int(n), int(k), 1) for m, n, k in zip(ms, ns, ks)), family, provenance)


# The organizers' B200 speed-of-light times of the leaderboard's benchmarks (docs/benchmarks.md).
B200_SOL_US = {"bench1": 18.833, "bench2": 10.667, "bench3": 2.406, "bench4": 1.525}


def get_shape(name: str) -> ShapeSet:
    """A shape of the suite (profiling.shape_suite, where every named shape is declared)."""
    from profiling.shape_suite import get_shape as suite_shape

    return suite_shape(name)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _scale_bytes(rows: int, k: int, padded: bool) -> int:
    if padded:
        return _ceil_div(rows, 128) * 128 * _ceil_div(k // 16, 4) * 4
    return rows * (k // 16)


@dataclass(frozen=True)
class Traffic:
    """Bytes by tensor kind and FLOPs of one shape set."""

    a: int
    b: int
    sfa: int
    sfb: int
    c: int
    flops: int

    @property
    def bytes(self) -> int:
        return self.a + self.b + self.sfa + self.sfb + self.c

    def as_dict(self) -> dict:
        return {**asdict(self), "bytes": self.bytes}


def traffic(sizes: ShapeSet | Iterable[Sequence[int]], *, padded_scales: bool = False) -> Traffic:
    """Minimum DRAM traffic (each operand read once, C written once) and FLOPs."""
    if isinstance(sizes, ShapeSet):
        sizes = sizes.sizes
    a = b = sfa = sfb = c = flops = 0
    for size in sizes:
        m, n, k = int(size[0]), int(size[1]), int(size[2])
        l = int(size[3]) if len(size) > 3 else 1
        a += l * m * k // 2
        b += l * n * k // 2
        sfa += l * _scale_bytes(m, k, padded_scales)
        sfb += l * _scale_bytes(n, k, padded_scales)
        c += l * m * n * 2
        flops += l * 2 * m * n * k
    return Traffic(a, b, sfa, sfb, c, flops)


def shape_bytes(sizes, *, padded_scales: bool = False) -> int:
    return traffic(sizes, padded_scales=padded_scales).bytes


def shape_flops(sizes) -> int:
    return traffic(sizes).flops


def peer_bytes(sizes: ShapeSet | Iterable[Sequence[int]]) -> int:
    """Bytes cuBLAS-on-bf16 (the peer) moves at least: bf16 A and B, fp16 C."""
    if isinstance(sizes, ShapeSet):
        sizes = sizes.sizes
    return sum(2 * s[0] * s[2] + 2 * s[1] * s[2] + 2 * s[0] * s[1] for s in sizes)


@dataclass(frozen=True)
class Floor:
    bytes: int
    flops: int
    floor_bytes_us: float  # bytes / bandwidth
    floor_flops_us: float  # FLOPs / tensor rate
    ceilings: Ceilings

    @property
    def floor_us(self) -> float:
        return max(self.floor_bytes_us, self.floor_flops_us)

    @property
    def bound(self) -> str:
        return "memory" if self.floor_bytes_us >= self.floor_flops_us else "compute"

    def as_dict(self) -> dict:
        return {
            "bytes": self.bytes,
            "flops": self.flops,
            "floor_bytes_us": self.floor_bytes_us,
            "floor_flops_us": self.floor_flops_us,
            "floor_us": self.floor_us,
            "floor_bound": self.bound,
            "ceiling_bandwidth_Bps": self.ceilings.bandwidth,
            "ceiling_tensor_flops": self.ceilings.tensor_flops,
            "ceiling_source": self.ceilings.source,
        }


def floor(sizes, ceilings: Ceilings | None = None, *, padded_scales: bool = False) -> Floor:
    """Floor time of one shape set at the given (default: the reference H200) ceilings."""
    ceilings = ceilings or DEFAULT_CEILINGS
    t = traffic(sizes, padded_scales=padded_scales)
    return Floor(
        bytes=t.bytes,
        flops=t.flops,
        floor_bytes_us=t.bytes / ceilings.bandwidth * 1e6,
        floor_flops_us=t.flops / ceilings.tensor_flops * 1e6,
        ceilings=ceilings,
    )


def floor_us(sizes, ceilings: Ceilings | None = None, **kw) -> float:
    return floor(sizes, ceilings, **kw).floor_us


def rates(sizes, time_us: float) -> dict:
    """TFLOP/s and GB/s (NVFP4 minimum traffic) achieved by a run of ``time_us``."""
    t = traffic(sizes)
    if not time_us > 0:
        return {"tflops": float("nan"), "gbps": float("nan")}
    return {"tflops": t.flops / time_us / 1e6, "gbps": t.bytes / time_us / 1e3}


def table(shapes: Iterable[ShapeSet] | None = None, ceilings: Ceilings | None = None) -> str:
    """A text table of the floors (``python -m profiling.floors``); default: the leaderboard's
    benchmarks."""
    if shapes is None:
        from profiling.shape_suite import family_shapes

        shapes = family_shapes("leaderboard-bench")
    rows = [f"{'shape':20} {'MB':>8} {'GFLOP':>8} {'floorB us':>10} {'floorF us':>10} {'floor us':>9} bound"]
    for s in shapes:
        f = floor(s, ceilings)
        rows.append(
            f"{s.name:20} {f.bytes / 1e6:8.2f} {f.flops / 1e9:8.2f} {f.floor_bytes_us:10.2f} "
            f"{f.floor_flops_us:10.2f} {f.floor_us:9.2f} {f.bound}"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    from profiling.shape_suite import SUITE

    print(table(SUITE))
