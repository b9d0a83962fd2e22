"""Shared pieces of the benchmark files: what to run, inputs, peers, the slowed variant, machine info.

Knobs are environment variables (they work whatever directory pytest is started from):

* ``NVFP4_BENCH_SHAPES``: shapes of the suite (profiling.shape_suite): ``suite`` (the default),
  ``quick``, family names and shape names, comma-separated;
* ``NVFP4_BENCH_FAMILIES``: comma-separated kernel families (default ``hopper,blackwell``);
* ``NVFP4_BENCH_VARIANTS`` (or ``--bench-variants``, which wins): ``default`` (the per-shape
  default, ``custom_kernel(data)`` without a config, and the production builds), ``all`` (the
  per-shape default and every declared variant) or comma-separated labels (``per-shape`` for
  the per-shape default);
* ``NVFP4_BENCH_CEILINGS``: ``measure`` (default on a GPU: a D2D copy and a bf16 matmul, once
  per pytest run) or ``facts`` (the reference H200 ceilings, 4.3 TB/s and 790 TFLOP/s, measured
  2026-11-29: ``profiling.floors.DEFAULT_CEILINGS``);
* ``NVFP4_BENCH_SLOW``: the regression demonstration. Benchmarks of a family's *default*
  variant run a deliberately slower configuration under the default's benchmark name, so
  ``--benchmark-compare`` matches it with the baseline:
  ``auto`` (every int config field whose name has "stage" in it set to 1, else 2; when no
  such config is valid, ``repeat:2``), ``config:{"field": value, ...}`` (``dataclasses.replace`` on the default
  config) or ``repeat:N`` (each timed launch calls the kernel N times).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Callable

from kernel.family import families
from profiling.floors import ShapeSet, get_shape
from profiling.shape_suite import SUITE, select

SEED = 1111  # the leaderboard's seed
DISTRIBUTION = "uniform"
FAMILIES = {f.name: f.package for f in families()}  # the kernel.family registry, name -> package
ARCH = {f.name: f.arch for f in families()}


def selected_shapes() -> list[ShapeSet]:
    spec = os.environ.get("NVFP4_BENCH_SHAPES", "").strip()
    return select(spec) if spec else list(SUITE)


PER_SHAPE = "per-shape"  # the label of the per-shape default entry: custom_kernel(data), no config


def selected_variant_labels(option: str | None = None):
    """``"default"``, ``"all"`` or a set of labels: ``option`` (``--bench-variants``) when given,
    else NVFP4_BENCH_VARIANTS, else ``"default"``."""
    raw = (option or os.environ.get("NVFP4_BENCH_VARIANTS", "")).strip()
    if raw in ("", "default"):
        return "default"
    if raw == "all":
        return "all"
    return {x.strip() for x in raw.split(",") if x.strip()}


def selected_families() -> list[str]:
    names = os.environ.get("NVFP4_BENCH_FAMILIES", "").strip()
    if not names:
        return list(FAMILIES)
    out = [n.strip() for n in names.split(",") if n.strip()]
    unknown = set(out) - set(FAMILIES)
    if unknown:
        raise ValueError(f"NVFP4_BENCH_FAMILIES: unknown {sorted(unknown)}; known {sorted(FAMILIES)}")
    return out


@functools.lru_cache(maxsize=None)
def cuda_reason() -> str | None:
    """None when a CUDA device is usable, else why the GPU benchmarks are skipped."""
    try:
        import torch

        if torch.cuda.is_available():
            return None
        return f"no CUDA device (torch {torch.__version__}, built for CUDA {torch.version.cuda})"
    except Exception as exc:  # pragma: no cover
        return f"torch.cuda unusable: {exc}"


# ---------------------------------------------------------------------------- kernel families


@dataclass(frozen=True)
class VariantSpec:
    """One benchmarked entry of a family: a declared variant, or (``per_shape``) what
    ``custom_kernel(data)`` without a config runs. ``is_default``: the family's DEFAULT_CONFIG,
    the entry NVFP4_BENCH_SLOW slows."""

    family: str
    label: str
    config: Any
    index: int
    is_default: bool
    module: Any = dataclasses.field(compare=False, default=None)
    skip_reason: str | None = None
    production: bool = False
    per_shape: bool = False

    @property
    def id(self) -> str:
        return f"{self.family}:{self.label}"


def load_family(family: str) -> tuple[Any, str | None]:
    """(module, None) or (None, why it cannot be imported)."""
    name = FAMILIES[family]
    try:
        return importlib.import_module(name), None
    except Exception as exc:  # a broken family module, or cutlass missing on this machine
        return None, f"{name} does not import: {type(exc).__name__}: {exc}"[:300]


def default_config(module) -> Any:
    return getattr(module, "DEFAULT_CONFIG", None) or module.DECLARED_VARIANTS[0]


def family_variants(family: str, *, need_device: bool = True) -> list[VariantSpec]:
    """The per-shape default entry, then one spec per declared variant (production first); a
    single skipped 'unavailable' spec when the family won't import."""
    module, reason = load_family(family)
    if module is None:
        return [VariantSpec(family, "unavailable", None, 0, False, None, reason)]
    try:
        default = default_config(module)
        production = tuple(getattr(module, "PRODUCTION_VARIANTS", ()))
        if need_device:
            reason = module.unavailable_reason()
        return [VariantSpec(family, PER_SHAPE, None, -1, False, module, reason, per_shape=True)] + [
            VariantSpec(family, cfg.label, cfg, i, cfg == default, module, reason, production=cfg in production)
            for i, cfg in enumerate(module.DECLARED_VARIANTS)
        ]
    except Exception as exc:  # a family module without the full interface
        why = f"{FAMILIES[family]} lacks the family interface: {type(exc).__name__}: {exc}"[:300]
        return [VariantSpec(family, "unavailable", None, 0, False, None, why)]


def wanted(spec: VariantSpec, policy) -> bool:
    """Whether ``policy`` (selected_variant_labels) benchmarks ``spec``: ``default`` the per-shape
    entry and the production builds, ``all`` every entry, a label set those labels."""
    if spec.module is None:  # the family's 'unavailable' entry: shown, skipped with its reason
        return True
    if policy == "default":
        return spec.per_shape or spec.production
    if policy == "all":
        return True
    return spec.label in policy


def bench_entries(policy, shapes=None, families=None) -> list[tuple[VariantSpec, ShapeSet]]:
    """(entry, shape) pairs of test_kernel, shape-major (inputs are made once per shape)."""
    specs = [v for f in (families or selected_families()) for v in family_variants(f)]
    return [(v, shape) for shape in (shapes or selected_shapes()) for v in specs if wanted(v, policy)]


def per_shape_config(module, data) -> Any:
    """The build ``custom_kernel(data)`` runs without a config: the family's ``default_config(data)``
    where it has one (the Hopper per-shape rule), else its DEFAULT_CONFIG."""
    choose = getattr(module, "default_config", None)
    return choose(data) if callable(choose) else default_config(module)


def shape_reason(module, config, shape: ShapeSet) -> str | None:
    """Why the variant's declared constraints reject this shape set, or None."""
    try:
        c = module.constraints(config)
    except Exception as exc:
        return f"constraints({config.label}) failed: {exc}"
    if shape.num_groups > c.max_groups:
        return f"{shape.name}: {shape.num_groups} groups > max_groups {c.max_groups}"
    for m, n, k, _ in shape.sizes:
        if k % c.k_granularity:
            return f"{shape.name}: K={k} is not a multiple of k_granularity {c.k_granularity}"
        if max(m, n, k) > c.max_dim:
            return f"{shape.name}: a dimension exceeds max_dim {c.max_dim}"
    return None


# ---------------------------------------------------------------------------- slowed variant


@dataclass(frozen=True)
class Slowdown:
    config: Any
    repeat: int
    description: str


def _stage_candidates(config) -> list[dict]:
    """Fewer pipeline stages: every int field named *stage* (> 1) to 1, then to 2."""
    if not dataclasses.is_dataclass(config):
        return []
    names = [f.name for f in dataclasses.fields(config)
             if "stage" in f.name.lower() and isinstance(getattr(config, f.name), int)
             and not isinstance(getattr(config, f.name), bool) and getattr(config, f.name) > 1]
    out = []
    for target in (1, 2):
        fields = {n: target for n in names if getattr(config, n) > target}
        if fields and fields not in out:
            out.append(fields)
    return out


def _valid(config, validate: Callable[[Any], Any] | None) -> bool:
    if validate is None:
        return True
    try:
        validate(config)
        return True
    except Exception:
        return False


def resolve_slowdown(config, spec: str | None = None, validate: Callable[[Any], Any] | None = None
                     ) -> Slowdown | None:
    """The slowed configuration NVFP4_BENCH_SLOW asks for, or None when unset.

    ``validate`` (the family's ``check_config``) rejects configs the family cannot build: for
    ``auto`` the first valid stage reduction wins (Hopper needs >= 2 A/B stages, so its 3 become
    2), and ``repeat:2`` when there is none.
    """
    spec = (os.environ.get("NVFP4_BENCH_SLOW", "") if spec is None else spec).strip()
    if not spec:
        return None
    if spec == "auto":
        for fields in _stage_candidates(config):
            slowed = dataclasses.replace(config, **fields)
            if _valid(slowed, validate):
                return Slowdown(slowed, 1, f"config override {fields}")
        return Slowdown(config, 2, "repeat:2 (no valid stage reduction)")
    if spec.startswith("config:"):
        fields = json.loads(spec[len("config:"):])
        slowed = dataclasses.replace(config, **fields)
        if not _valid(slowed, validate):
            raise ValueError(f"NVFP4_BENCH_SLOW: {fields} gives an invalid config")
        return Slowdown(slowed, 1, f"config override {fields}")
    if spec.startswith("repeat:"):
        n = int(spec[len("repeat:"):])
        if n < 1:
            raise ValueError("repeat:N needs N >= 1")
        return Slowdown(config, n, f"repeat:{n}")
    raise ValueError(f"NVFP4_BENCH_SLOW={spec!r}: use auto, config:{{json}} or repeat:N")


# ---------------------------------------------------------------------------- inputs and peers


@functools.lru_cache(maxsize=None)
def host_inputs(shape_name: str):
    import oracle

    return oracle.make_inputs(get_shape(shape_name).problem_sizes(), SEED, distribution=DISTRIBUTION)


_DEVICE_COPIES: dict = {}


def device_copies(shape: ShapeSet, copies: int) -> list:
    """``copies`` independent device copies of the shape's inputs (the first is the original).

    The copies of the last shape asked for are kept (the benchmarks run shape-major), so the
    variants of one shape share them, and the kernels' pointer-keyed table caches hit.
    """
    import oracle

    key = (shape.name, copies)
    if key not in _DEVICE_COPIES:
        _DEVICE_COPIES.clear()
        first = oracle.data_to(host_inputs(shape.name), "cuda")
        _DEVICE_COPIES[key] = [first] + [oracle.clone_data(first) for _ in range(copies - 1)]
    return _DEVICE_COPIES[key]


def kernel_call(module, config) -> Callable[[Any], Any]:
    """``custom_kernel`` with ``config``, or as a user calls it (no config) when ``config`` is None."""
    fn = module.custom_kernel
    return fn if config is None else (lambda d: fn(d, config=config))


def kernel_launches(module, config, datas: list, repeat: int = 1) -> list[Callable[[], Any]]:
    fn = kernel_call(module, config)

    def make(d):
        if repeat == 1:
            return lambda: fn(d)

        def launch():
            for _ in range(repeat):
                fn(d)

        return launch

    return [make(d) for d in datas]


def run_ceilings():
    from profiling import floors, timing

    mode = os.environ.get("NVFP4_BENCH_CEILINGS", "measure").strip() or "measure"
    if mode == "facts" or cuda_reason() is not None:
        return floors.DEFAULT_CEILINGS
    if mode != "measure":
        raise ValueError(f"NVFP4_BENCH_CEILINGS={mode!r}: use measure or facts")
    return timing.measure_ceilings()


_PEER_TIMINGS: dict[str, Any] = {}


def peer_setup(shape: ShapeSet):
    """(launches over rotated copies, launches_per_replay) of the cuBLAS bf16 peer."""
    from profiling import floors, peers, timing

    first = peers.make_peer(oracle_device_inputs(shape))
    copies = timing.copies_for(first.bytes, l2_bytes=l2_bytes())
    ops = [first] + [peers.clone_peer(first) for _ in range(copies - 1)]
    lpr = timing.launches_for(floors.floor_us(shape), copies)
    return [peers.peer_launch(p) for p in ops], lpr


def oracle_device_inputs(shape: ShapeSet):
    import oracle

    return oracle.data_to(host_inputs(shape.name), "cuda")


def peer_timing(shape: ShapeSet):
    """The peer's device timing on this shape, measured once per pytest session."""
    from profiling import timing

    if shape.name not in _PEER_TIMINGS:
        launches, lpr = peer_setup(shape)
        _PEER_TIMINGS[shape.name] = timing.time_device(launches, samples=20, launches_per_replay=lpr)
    return _PEER_TIMINGS[shape.name]


@functools.lru_cache(maxsize=None)
def l2_bytes() -> int:
    from profiling.timing import H200_L2_BYTES

    try:
        import torch

        return int(torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size) or H200_L2_BYTES
    except Exception:
        return H200_L2_BYTES


# ---------------------------------------------------------------------------- machine info


def _dist_version(name: str) -> str | None:
    try:
        import importlib.metadata as md

        return md.version(name)
    except Exception:
        return None


def machine_info() -> dict:
    """GPU, driver and library versions for pytest-benchmark's saved JSON."""
    info: dict[str, Any] = {"python": platform.python_version()}
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            idx = torch.cuda.current_device()
            props = torch.cuda.get_device_properties(idx)
            info["gpu_name"] = props.name
            info["gpu_compute_capability"] = f"{props.major}.{props.minor}"
            info["gpu_sm_count"] = props.multi_processor_count
            info["gpu_memory_bytes"] = props.total_memory
            info["gpu_l2_bytes"] = getattr(props, "L2_cache_size", None)
            info["cuda_runtime"] = torch.version.cuda
        else:
            info["gpu_name"] = None
    except Exception as exc:  # pragma: no cover
        info["torch_error"] = str(exc)
    info["nvidia_cutlass_dsl"] = _dist_version("nvidia-cutlass-dsl") or _module_version("cutlass")
    info["driver"] = _driver_version()
    info["cute_dsl_arch"] = os.environ.get("CUTE_DSL_ARCH")
    from profiling import timing

    if timing.measure_ceilings.cache_info().currsize:
        c = timing.measure_ceilings()
        info["ceilings"] = {"bandwidth_Bps": c.bandwidth, "tensor_flops": c.tensor_flops, "source": c.source}
    return info


def _module_version(name: str) -> str | None:
    mod = sys.modules.get(name)
    return getattr(mod, "__version__", None) if mod else None


def _driver_version() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10,
        )
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except Exception:
        pass
    try:  # CUDA driver API version (e.g. 13000) when nvidia-smi is absent
        import torch

        if torch.cuda.is_available():
            v = torch._C._cuda_getDriverVersion()
            return f"cuda-driver-api {v // 1000}.{(v % 1000) // 10}"
    except Exception:
        pass
    return None
