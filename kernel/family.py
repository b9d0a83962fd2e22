"""The registry of kernel families: everything that iterates over kernels asks here.

A family is a package under ``kernel/`` (``kernel.hopper``, ``kernel.blackwell``) that provides

* ``ARCH`` (the compile target), ``DEFAULT_CONFIG``, its config type's frozen configs split into
  ``PRODUCTION_VARIANTS`` (the few a kernel engineer runs after every change; the default is
  one of them) and ``EXPERIMENTAL_VARIANTS`` (the rest of the declared matrix), and
  ``STATIC_MATRIX`` (what CI compiles and inspects);
* ``constraints(config)``, ``unavailable_reason()``;
* ``PIPELINE``: its :class:`kernel.host_pipeline.HostPipeline`, which gives every family the same
  ``prepare(data, config, dry_run=...)``, ``launch(prepared, stream) -> outputs``,
  ``compile_for(config, num_groups)`` and the fast ``custom_kernel(data, config)``;
* ``static_build(config, dump_dir, num_groups)``: the static report's hook.

Profiling-only builds (ablations) are not variants of a family: :mod:`profiling.ablation` owns them.
Importing this module imports no family and no CuTe DSL; :attr:`KernelFamily.module` does, lazily
(and a family package imports CuTe DSL only when it compiles).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

Scope = Literal["production", "all"]

# the repository's own packages: an ImportError raised for one of their modules is a bug in the
# repository, never a sign that a family cannot run on this machine
PROJECT_PACKAGES = ("kernel", "oracle", "properties", "profiling", "ci")


def missing_dependency(exc: ImportError) -> bool:
    """True when ``exc`` says a third-party package is absent or of another version (CuTe DSL,
    torch): the family is unavailable here and its tests skip with that reason. False when the
    failing import names one of the repository's modules (``cannot import name 'X' from
    'kernel.hopper.dispatch'``): callers re-raise it, so a broken import fails the run instead of
    skipping every test of the family."""
    name = getattr(exc, "name", None) or ""
    return name.split(".")[0] not in PROJECT_PACKAGES


@dataclass(frozen=True)
class KernelFamily:
    name: str  # "hopper": the --subject value, benchmark and report names
    package: str  # "kernel.hopper"
    arch: str  # the compile target
    required_major: int  # compute capability major the kernels run on
    summary: str

    @property
    def module(self) -> ModuleType:
        return importlib.import_module(self.package)

    @property
    def pipeline(self):
        return self.module.PIPELINE

    @property
    def default_config(self) -> Any:
        return self.module.DEFAULT_CONFIG

    @property
    def production_variants(self) -> tuple:
        return tuple(self.module.PRODUCTION_VARIANTS)

    @property
    def experimental_variants(self) -> tuple:
        return tuple(self.module.EXPERIMENTAL_VARIANTS)

    @property
    def declared_variants(self) -> tuple:
        """Production first, then experimental: the whole declared matrix."""
        return self.production_variants + self.experimental_variants

    @property
    def static_matrix(self) -> tuple:
        return tuple(self.module.STATIC_MATRIX)

    def variants(self, scope: Scope = "production") -> tuple:
        if scope == "production":
            return self.production_variants
        if scope == "all":
            return self.declared_variants
        raise ValueError(f"unknown variant scope {scope!r}: use 'production' or 'all'")

    def find(self, label: str) -> Any:
        """The declared config whose label is ``label`` (KeyError listing the labels otherwise)."""
        for config in self.declared_variants:
            if config.label == label:
                return config
        raise KeyError(f"{self.name} has no variant {label!r}; declared: {[c.label for c in self.declared_variants]}")

    def constraints(self, config: Any):
        return self.module.constraints(config)

    def unavailable_reason(self) -> str | None:
        return self.module.unavailable_reason()

    def prepare(self, data: Any, config: Any, *, dry_run: bool = False, compile: bool | None = None):
        return self.pipeline.prepare(data, config, dry_run=dry_run, compile=compile)

    def launch(self, prepared: Any, stream: Any = None) -> list:
        return self.pipeline.launch(prepared, stream)

    def custom_kernel(self, data: Any, config: Any) -> list:
        return self.pipeline.run(data, config)

    def compile_for(self, config: Any, num_groups: int) -> Any:
        return self.pipeline.compile_for(config, num_groups)

    def static_build(self, config: Any, dump_dir, num_groups: int = 8) -> dict:
        return self.module.static_build(config, dump_dir, num_groups=num_groups)


FAMILIES: dict[str, KernelFamily] = {
    f.name: f
    for f in (
        KernelFamily("hopper", "kernel.hopper", "sm_90a", 9,
                     "sm_90a port: FP4 dequantized to fp16 in the kernel, wgmma, fp32 accumulators"),
        KernelFamily("blackwell", "kernel.blackwell", "sm_100a", 10,
                     "sm_100a: tcgen05 block-scaled MMA (mxf4nvf4), accumulators in TMEM"),
    )
}


def families() -> list[KernelFamily]:
    return list(FAMILIES.values())


def get_family(name: str) -> KernelFamily:
    try:
        return FAMILIES[name]
    except KeyError:
        raise KeyError(f"unknown kernel family {name!r}; known: {sorted(FAMILIES)}") from None


def family_for_arch(arch: str) -> KernelFamily:
    for f in FAMILIES.values():
        if f.arch == arch:
            return f
    raise KeyError(f"no kernel family compiles for {arch!r}; known: {[f.arch for f in FAMILIES.values()]}")


def family_for_capability(capability: tuple[int, int] | None) -> KernelFamily | None:
    """The family whose kernels run on a GPU of this compute capability (None: none does)."""
    if capability is None:
        return None
    for f in FAMILIES.values():
        if f.required_major == capability[0]:
            return f
    return None


def clear_caches() -> None:
    """Forget compiled kernels, tables and fast-path entries of every family already imported."""
    import sys

    for f in FAMILIES.values():
        if f.package in sys.modules:
            f.pipeline.clear()
