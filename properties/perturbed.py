"""Perturbed subjects: a kernel family's variants built with a :class:`kernel.perturbation.Perturbation`.

A perturbed subject is named ``BASE~TAG`` (``hopper~s1-d4000-p50-poison-none``): the base
subject's variants, each compiled with the perturbation of that tag (seeded delays at every sync
site, poison on release), labelled ``LABEL~TAG``. Because the name carries the perturbation, an
isolation worker, ``properties.repro`` and ``ci.sanitize`` rebuild the same variant from it
(``properties.subjects.resolve_subject`` resolves such names with :func:`split_name` and
:func:`perturbed`).

A family supports perturbation when its ``custom_kernel`` takes a ``perturbation`` argument
(and gets ``strict=True``, guarded device tables, when it takes ``strict``);
the variants of other subjects (the CPU model, subject files) come back with a ``skip_reason``.
A perturbation with ``stress`` (tag ``-t``) also launches the GPU subject beside the tensor-pipe
stressor (properties/tensor_stress.py: another stream, one small CTA per SM issuing bursts of
wgmmas), on sm_90 devices, when ``NVFP4_TENSOR_STRESS=1`` (off by default: see stress_enabled).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os

from kernel.perturbation import Perturbation
from properties.subject_variant import SubjectVariant

SEPARATOR = "~"


def split_name(name: str) -> tuple[str, Perturbation]:
    base, _, tag = name.partition(SEPARATOR)
    return base, Perturbation.from_tag(tag)


def build_name(name: str) -> str:
    """The name of the build behind a subject or label: ``BASE~TAG`` of a run-time perturbation
    (``-rt``) -> ``BASE~`` its compile form's tag, shared by every seed (an isolation worker
    serves them all with one compile per group count); any other name unchanged."""
    base, sep, tag = name.partition(SEPARATOR)
    if not sep:
        return name
    try:
        p = Perturbation.from_tag(tag)
    except ValueError:
        return name
    return f"{base}{SEPARATOR}{p.compile_form.tag}" if p.runtime else name


def supports_perturbation(variant: SubjectVariant) -> bool:
    run = variant.run
    func = run.func if isinstance(run, functools.partial) else run
    try:
        return "perturbation" in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def perturbed(variant: SubjectVariant, perturbation: Perturbation) -> SubjectVariant:
    """``variant`` built with ``perturbation`` (a skip reason when its family cannot be perturbed)."""
    source = f"{variant.repro_subject.partition(SEPARATOR)[0]}{SEPARATOR}{perturbation.tag}"
    label = f"{variant.label}{SEPARATOR}{perturbation.tag}"
    if not supports_perturbation(variant):
        return dataclasses.replace(variant, label=label, source=source,
                                   skip_reason=variant.skip_reason or f"subject {variant.subject} has no schedule to perturb")
    run = variant.run
    func = run.func if isinstance(run, functools.partial) else run
    extra = {"perturbation": perturbation}
    if "strict" in inspect.signature(func).parameters:
        extra["strict"] = True  # guarded device tables (kernel.tables)
    if isinstance(run, functools.partial):
        run = functools.partial(run.func, *run.args, **run.keywords, **extra)
    else:
        run = functools.partial(run, **extra)
    if perturbation.stress and variant.device == "cuda" and stress_enabled():
        from properties.tensor_stress import stressed

        run = stressed(run, key=variant.label.partition(SEPARATOR)[0])
    return dataclasses.replace(variant, label=label, run=run, source=source)


def stress_enabled() -> bool:
    """Stressed seeds (tag ``-t``) launch beside the stressor only with ``NVFP4_TENSOR_STRESS=1``:
    on the H200 (2026-12-01) no subject CTA of the Hopper variants (~190 KB of shared memory) ever started
    beside it (properties/tensor_stress.py), so by default it stays off and costs nothing."""
    return os.environ.get("NVFP4_TENSOR_STRESS", "0") == "1"
