"""The sweep's plan: which (variant, shape) cases ``profiling.ncu_sweep`` profiles, in which order.

Pure host code (no GPU, no ncu): the variants of a kernel family (``kernel.family``), optionally
crossed with a ``--grid`` of config values, times the benchmark shapes of ``profiling.floors``;
cases a variant cannot run are dropped with the reason. Also the per-case records the report
joins (FLOPs, floor, config axes, status).
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from kernel.family import families
from profiling import floors
from profiling import metrics as M
from profiling.shape_suite import family_shapes

FAMILIES = {f.arch: (f.name, f.package) for f in families()}  # the kernel.family registry, by arch
DEFAULT_SHAPES = tuple(s.name for s in family_shapes("leaderboard-bench"))

# ---- the plan: which cases ---------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    index: int
    variant: str
    shape: str


@dataclass
class SweepPlan:
    arch: str
    family: str
    module_name: str
    configs: dict[str, Any]  # label -> config, in sweep order
    shapes: list[floors.ShapeSet]
    cases: list[Case]
    skipped: list[tuple[str, str, str]] = field(default_factory=list)  # (variant, shape, why)

    def config_tuples(self) -> list[tuple[str, str]]:
        return [(c.variant, c.shape) for c in self.cases]


def _family_attr(module_name: str, name: str):
    """``name`` from the family package, or from its ``config`` module during bring-up."""
    module = importlib.import_module(module_name)
    if hasattr(module, name):
        return getattr(module, name)
    return getattr(importlib.import_module(f"{module_name}.config"), name)


def _coerce(text: str, like: Any) -> Any:
    if text == "None":
        return None
    if isinstance(like, bool):
        if text.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"not a bool: {text!r}")
        return text.lower() in ("true", "1")
    if isinstance(like, int) or (like is None and re.fullmatch(r"-?\d+", text)):
        return int(text)
    if isinstance(like, tuple):
        return tuple(int(x) for x in re.split(r"[x:/]", text))
    return text


def parse_grid(items: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``["num_ab_stages=2,3", "tile_mnk=128x128x256,128x256x256"]`` -> [(field, values)]."""
    grid = []
    for item in items:
        key, sep, values = item.partition("=")
        if not sep or not key or not values:
            raise ValueError(f"--grid wants FIELD=V1,V2,..., got {item!r}")
        grid.append((key.strip(), [v.strip() for v in values.split(",") if v.strip()]))
    return grid


def expand_grid(bases: Sequence[Any], grid: Sequence[tuple[str, list[str]]], problems_fn) -> tuple[list[Any], list[str]]:
    """Every base config crossed with every grid point; invalid ones returned as reasons."""
    if not grid:
        return list(bases), []
    out, rejected = [], []
    for base in bases:
        names = {f.name for f in dataclasses.fields(base)}
        for key, _ in grid:
            if key not in names:
                raise ValueError(f"--grid field {key!r} is not a field of {type(base).__name__}: {sorted(names)}")
        for point in itertools.product(*[vals for _, vals in grid]):
            changes = {key: _coerce(v, getattr(base, key)) for (key, _), v in zip(grid, point)}
            cfg = dataclasses.replace(base, **changes)
            problems = problems_fn(cfg) if problems_fn else []
            if problems:
                rejected.append(f"{cfg.label}: {'; '.join(problems)}")
            else:
                out.append(cfg)
    return out, rejected


def build_plan(arch: str, variants: str = "declared", labels: Sequence[str] = (), grid: Sequence[str] = (),
               shapes: Sequence[str] = DEFAULT_SHAPES) -> SweepPlan:
    """The cases of one sweep, deterministic in its arguments (no GPU, no CuTe DSL import)."""
    arch = M.normalize_arch(arch)
    family, module_name = FAMILIES[arch]
    source = {"declared": "DECLARED_VARIANTS", "static": "STATIC_MATRIX"}.get(variants)
    if source is None:
        raise ValueError(f"--variants must be 'declared' or 'static', got {variants!r}")
    bases = list(_family_attr(module_name, source))
    if labels:
        known = {c.label: c for c in bases}
        missing = [l for l in labels if l not in known]
        if missing and not grid:
            raise ValueError(f"unknown variant label(s) {missing}; {variants} variants are: {sorted(known)}")
        bases = [known[l] for l in labels if l in known]
    problems_fn = None
    try:
        problems_fn = _family_attr(module_name, "config_problems")
    except AttributeError:
        pass
    configs, rejected = expand_grid(bases, parse_grid(grid), problems_fn)
    by_label: dict[str, Any] = {}
    for cfg in configs:
        by_label.setdefault(cfg.label, cfg)
    shape_sets = [floors.get_shape(s) for s in shapes]
    try:
        constraints_fn = _family_attr(module_name, "constraints")
    except AttributeError:
        constraints_fn = None
    cases, skipped = [], [(r.split(":", 1)[0], "*", "invalid config: " + r.split(":", 1)[1].strip()) for r in rejected]
    for label, cfg in by_label.items():
        cons = constraints_fn(cfg) if constraints_fn else None
        for s in shape_sets:
            why = _shape_rejection(cons, s)
            if why:
                skipped.append((label, s.name, why))
            else:
                cases.append(Case(len(cases), label, s.name))
    return SweepPlan(arch, family, module_name, by_label, shape_sets, cases, skipped)


def _shape_rejection(cons, shape: floors.ShapeSet) -> str | None:
    if cons is None:
        return None
    g = getattr(cons, "k_granularity", 1) or 1
    bad = sorted({s[2] for s in shape.sizes if s[2] % g})
    if bad:
        return f"K {bad} not a multiple of the kernel's K granularity {g}"
    if len(shape.sizes) > getattr(cons, "max_groups", 1 << 30):
        return f"{len(shape.sizes)} groups > max_groups {cons.max_groups}"
    return None


def config_axes(cfg: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(cfg):
        return {k: (("x".join(map(str, v))) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(cfg).items()}
    return {}


def floor_for(arch: str, shape: floors.ShapeSet) -> tuple[float, str]:
    """(floor_us, source): H200 roofline floor on Hopper, the organizers' B200 SOL on Blackwell."""
    if arch == "sm_100a" and shape.name in floors.B200_SOL_US:
        return floors.B200_SOL_US[shape.name], "B200 SOL (leaderboard)"
    f = floors.floor(shape)
    return f.floor_us, f"max(bytes/{f.ceilings.bandwidth / 1e12:.1f} TB/s, FLOPs/{f.ceilings.tensor_flops / 1e12:.0f} TFLOP/s)"


def case_records(plan: SweepPlan, status: dict[int, dict] | None = None) -> list[dict]:
    """What build_table needs per case: flops, floor, axes, status from the child's records."""
    status = status or {}
    shapes = {s.name: s for s in plan.shapes}
    out = []
    for c in plan.cases:
        s = shapes[c.shape]
        fl, src = floor_for(plan.arch, s)
        st = status.get(c.index, {})
        out.append({"variant": c.variant, "shape": c.shape, "flops": floors.shape_flops(s), "floor_us": fl,
                    "floor_source": src, "axes": config_axes(plan.configs[c.variant]),
                    "status": st.get("status", "ok")})
    for variant, shape, why in plan.skipped:
        if shape != "*":
            out.append({"variant": variant, "shape": shape, "flops": 0, "floor_us": math.nan,
                        "axes": config_axes(plan.configs.get(variant)), "status": f"skipped: {why}"})
    return out
