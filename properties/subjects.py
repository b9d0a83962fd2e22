"""Subjects: anything with ``custom_kernel(data)`` plus the constraints it declares.

``resolve_subject(name)`` turns ``--subject`` into a list of :class:`SubjectVariant`, one per
declared kernel variant, each with a ``skip_reason`` when it cannot run on this machine:

* ``model``: the CPU model (kernel.model), always runnable;
* ``hopper`` / ``blackwell``: the CuTe DSL kernels; ``scope="production"`` (the default) gives the
  family's production variants (what a kernel engineer runs after every change),
  ``scope="all"`` the whole declared matrix (production, then experimental);
* ``auto``: ``hopper`` on sm_90, ``blackwell`` on sm_100, ``model`` elsewhere;
* a path to a ``.py`` file defining ``custom_kernel(data)``, optionally ``CONSTRAINTS``
  (a :class:`kernel.validation.KernelConstraints`), ``LIMITS`` (a :class:`SizeLimits`) and
  ``VALIDATES = True``.

Each variant carries its :class:`GridPlanner` (the tile shape, CTA cap and schedule its launch
plan uses) where it has one, so the strategies size problems in rounds of its own grid; a file
subject on a GPU is planned as 128 x 128 tiles on the GPU's SMs, one on the CPU has none.

A file subject is judged on its results. Only when it sets ``VALIDATES = True`` (it promises to
raise :class:`kernel.errors.InvalidProblemError` on bad input, e.g. by calling
``kernel.validation.validate_problem``) does ``test_subject_rejects_invalid_problems`` run for it;
otherwise that property is skipped with a reason naming the flag. The built-in subjects validate.

A ``--subject`` value that names nothing raises :class:`UnknownSubjectError`, whose one-line
message says what was wrong and what to use instead.
"""

from __future__ import annotations

from kernel.errors import PicklableError
import dataclasses
import functools
import importlib.util
from pathlib import Path

from kernel.device import cuda_capability
from kernel.family import FAMILIES, KernelFamily, Scope, family_for_capability, missing_dependency
from kernel.validation import KernelConstraints
from properties.perturbed import SEPARATOR, perturbed, split_name
from properties.subject_variant import GridPlanner, SizeLimits, SubjectVariant


CPU_LIMITS = SizeLimits(max_groups=5, max_m=260, max_n=260, max_k_blocks=5)
GPU_LIMITS = SizeLimits(max_groups=6, max_m=640, max_n=800, max_k_blocks=8)  # G is a compile-time constant: few compiles


class UnknownSubjectError(PicklableError, ValueError):
    """``--subject`` names no subject (or a file that does not exist or defines no custom_kernel)."""


SUBJECT_NAMES = ("model", *FAMILIES, "auto")


def _model_variants() -> list[SubjectVariant]:
    from kernel import model

    return [
        SubjectVariant("model", config.label, functools.partial(model.custom_kernel, config=config),
                       model.constraints(config), CPU_LIMITS,
                       planner=GridPlanner(config.tile_m, config.tile_n, config.tile_k, config.max_ctas, config.schedule))
        for config in model.DECLARED_VARIANTS
    ]


def _family_planner(family: KernelFamily, config) -> GridPlanner | None:
    """The plan ``family``'s host pipeline makes for ``config`` (kernel.host_pipeline
    HostPipeline.prepare: its tile shape and schedule, the CTA cap its hooks give; on a machine
    without the family's GPU the cap of a dry run, the SM count it plans for). None when the
    family cannot say (an import or config problem, reported by the variant's skip reason)."""
    try:
        hooks = family.pipeline.hooks
        resolved = hooks.resolve(config)
        max_ctas = hooks.max_ctas(resolved, dry_run=True)
        planner = GridPlanner(resolved.tile_m, resolved.tile_n, resolved.tile_k, max_ctas, resolved.schedule)
        if max_ctas is None and family.unavailable_reason() is None:  # one CTA per tile: this GPU's waves
            from kernel.device import sm_count

            planner = dataclasses.replace(planner, sms=sm_count())
        return planner
    except Exception:  # noqa: BLE001 - no planner: the multi-round draws are left out, nothing else
        return None


def _family_variants(family: KernelFamily, limits: SizeLimits, scope: Scope = "production") -> list[SubjectVariant]:
    """The variants of a kernel family (``kernel.family``) in ``scope``, run through its pipeline."""
    try:
        reason = family.unavailable_reason()
        configs = family.variants(scope)
    except ImportError as exc:  # the family is not importable on this machine
        if not missing_dependency(exc):
            raise
        return [SubjectVariant(family.name, "unavailable", _unavailable, KernelConstraints(), limits,
                               f"{family.package}: {exc}")]
    return [
        SubjectVariant(
            subject=family.name,
            label=config.label,
            # the family package's entry point: its signature says which build options it takes
            # (properties.perturbed reads it)
            run=functools.partial(family.module.custom_kernel, config=config),
            constraints=family.constraints(config),
            limits=limits,
            skip_reason=reason,
            planner=_family_planner(family, config),
        )
        for config in configs
    ]


def _unavailable(data):
    raise RuntimeError("subject unavailable")


def _file_variants(path: Path) -> list[SubjectVariant]:
    spec = importlib.util.spec_from_file_location(f"subject_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise UnknownSubjectError(f"cannot load subject file {path}: is it a Python source file?")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "custom_kernel", None)):
        raise UnknownSubjectError(f"subject file {path} defines no custom_kernel(data): add one that returns the outputs")
    constraints = getattr(module, "CONSTRAINTS", None) or KernelConstraints(
        device_type="cuda" if cuda_capability() else "cpu"
    )
    limits = getattr(module, "LIMITS", None) or (GPU_LIMITS if constraints.device_type == "cuda" else CPU_LIMITS)
    reason = None
    if constraints.device_type == "cuda" and cuda_capability() is None:
        reason = f"subject {path.name} needs a CUDA device and there is none"
    validates = getattr(module, "VALIDATES", False)
    if not isinstance(validates, bool):
        raise UnknownSubjectError(f"subject file {path}: VALIDATES must be True or False, not {validates!r}")
    planner = None
    if constraints.device_type == "cuda" and reason is None:
        # its tiles are unknown: the multi-round draws count 128 x 128 tiles, one CTA per SM
        from kernel.device import sm_count

        planner = GridPlanner(128, 128, constraints.k_granularity, sm_count())
    return [SubjectVariant(path.stem, path.stem, module.custom_kernel, constraints, limits, reason,
                           validates_input=validates, planner=planner)]


def auto_subject_name() -> str:
    family = family_for_capability(cuda_capability())
    return "model" if family is None else family.name


def resolve_subject(name: str, scope: Scope = "production") -> list[SubjectVariant]:
    """``scope`` picks a kernel family's production variants or its whole declared matrix ("all");
    the model and file subjects have one scope. ``BASE~TAG`` names a perturbed build of BASE's
    variants (properties.perturbed)."""
    if SEPARATOR in name:  # BASE~PERTURBATION (properties.perturbed)
        base, perturbation = split_name(name)
        return [perturbed(v, perturbation) for v in resolve_subject(base, scope)]
    if name == "auto":
        name = auto_subject_name()
    return [dataclasses.replace(v, source=name) for v in _resolve(name, scope)]


def _resolve(name: str, scope: Scope) -> list[SubjectVariant]:
    if name == "model":
        return _model_variants()
    if name in FAMILIES:
        return _family_variants(FAMILIES[name], GPU_LIMITS, scope)
    path = Path(name)
    if path.suffix == ".py":
        if not path.is_file():
            raise UnknownSubjectError(
                f"subject file {name} does not exist (looked in {Path.cwd()}): check the path"
            )
        return _file_variants(path)
    raise UnknownSubjectError(
        f"unknown subject {name!r}: use one of {', '.join(SUBJECT_NAMES)} or a path to a .py file "
        f"defining custom_kernel(data)"
    )


def gpu_skip_reason(name: str = "hopper") -> str | None:
    """Why ``name``'s GPU kernel cannot run on this machine (None where it can): what a GPU test
    of that kernel skips with."""
    return next(iter(resolve_subject(name))).skip_reason
