"""Subjects: anything with ``custom_kernel(data)`` plus the constraints it declares.

``resolve_subject(name)`` turns ``--subject`` into a list of :class:`SubjectVariant`, one per
declared kernel variant, each with a ``skip_reason`` when it cannot run on this machine:

* ``model``: the CPU model (kernel.model), always runnable;
* ``hopper`` / ``blackwell``: the CuTe DSL kernels, one variant per DECLARED_VARIANTS entry;
* ``auto``: ``hopper`` on sm_90, ``blackwell`` on sm_100, ``model`` elsewhere;
* a path to a ``.py`` file defining ``custom_kernel(data)``, optionally ``CONSTRAINTS``
  (a :class:`kernel.validation.KernelConstraints`) and ``LIMITS`` (a :class:`SizeLimits`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from kernel.device import cuda_capability
from kernel.validation import KernelConstraints


@dataclass(frozen=True)
class SizeLimits:
    """How large the strategies draw problems for a subject (speed, not correctness)."""

    max_groups: int = 6
    max_m: int = 300
    max_n: int = 300
    max_k_blocks: int = 6  # K is drawn as k_granularity * [1, max_k_blocks]


CPU_LIMITS = SizeLimits(max_groups=5, max_m=260, max_n=260, max_k_blocks=5)
GPU_LIMITS = SizeLimits(max_groups=6, max_m=640, max_n=800, max_k_blocks=8)  # G is a compile-time constant: few compiles


@dataclass(frozen=True)
class SubjectVariant:
    subject: str
    label: str
    run: Callable[[Any], list] = field(compare=False)
    constraints: KernelConstraints
    limits: SizeLimits
    skip_reason: str | None = None
    # the --subject value that resolves to this variant again (in a worker process, in a repro
    # line); "" for variants built in code (properties.wrong_subjects), which cannot be re-resolved
    source: str = field(default="", compare=False)

    @property
    def repro_subject(self) -> str:
        return self.source or self.subject

    @property
    def device(self) -> str:
        return self.constraints.device_type

    @property
    def test_id(self) -> str:
        return f"{self.subject}:{self.label}"


def _family_variants(subject: str, module_name: str, limits: SizeLimits) -> list[SubjectVariant]:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:  # the family is not importable on this machine
        return [SubjectVariant(subject, "unavailable", _unavailable, KernelConstraints(), limits, f"{module_name}: {exc}")]
    reason = module.unavailable_reason()
    return [
        SubjectVariant(
            subject=subject,
            label=config.label,
            run=functools.partial(module.custom_kernel, config=config),
            constraints=module.constraints(config),
            limits=limits,
            skip_reason=reason,
        )
        for config in module.DECLARED_VARIANTS
    ]


def _unavailable(data):
    raise RuntimeError("subject unavailable")


def _file_variants(path: Path) -> list[SubjectVariant]:
    spec = importlib.util.spec_from_file_location(f"subject_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot load subject file {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "custom_kernel"):
        raise ValueError(f"subject file {path} defines no custom_kernel(data)")
    constraints = getattr(module, "CONSTRAINTS", None) or KernelConstraints(
        device_type="cuda" if cuda_capability() else "cpu"
    )
    limits = getattr(module, "LIMITS", None) or (GPU_LIMITS if constraints.device_type == "cuda" else CPU_LIMITS)
    reason = None
    if constraints.device_type == "cuda" and cuda_capability() is None:
        reason = f"subject {path.name} needs a CUDA device and there is none"
    return [SubjectVariant(path.stem, path.stem, module.custom_kernel, constraints, limits, reason)]


def auto_subject_name() -> str:
    cap = cuda_capability()
    if cap is not None and cap[0] == 9:
        return "hopper"
    if cap is not None and cap[0] == 10:
        return "blackwell"
    return "model"


def resolve_subject(name: str) -> list[SubjectVariant]:
    if "~" in name:  # BASE~PERTURBATION (properties.perturbed)
        from properties.perturbed import resolve_perturbed

        return resolve_perturbed(name)
    if name == "auto":
        name = auto_subject_name()
    return [dataclasses.replace(v, source=name) for v in _resolve(name)]


def _resolve(name: str) -> list[SubjectVariant]:
    if name == "model":
        return _family_variants("model", "kernel.model", CPU_LIMITS)
    if name == "hopper":
        return _family_variants("hopper", "kernel.hopper", GPU_LIMITS)
    if name == "blackwell":
        return _family_variants("blackwell", "kernel.blackwell", GPU_LIMITS)
    path = Path(name)
    if path.suffix == ".py" and path.exists():
        return _file_variants(path)
    raise ValueError(f"unknown subject {name!r}: use model, hopper, blackwell, auto or a path to a .py file")
