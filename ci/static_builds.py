"""Static builds shared by every test of one pytest process (the root conftest's ``static_builds``
fixture).

Many test modules inspect the same cubins: the production build of a variant is read by the
compile test, the synchronization-site rules, the perturbation rules, the PDL and timeline
checks. Each build here is compiled once per process, on first use, through the family's own
``static_build`` hook (what ``profiling.static_report`` calls), each into a folder of its own (so
the PTX kept beside a cubin is that build's only one). A build is named by everything that
changes its code: the family, the config (a frozen dataclass: every field), the group count, the
perturbation and the ablation.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

_FAMILY_OF_MODULE = {"kernel.hopper": "hopper", "kernel.blackwell": "blackwell"}


def family_of(config: Any) -> str:
    """``hopper`` or ``blackwell``: the family whose config class ``config`` is."""
    module = type(config).__module__
    for prefix, name in _FAMILY_OF_MODULE.items():
        if module == prefix or module.startswith(prefix + "."):
            return name
    raise ValueError(f"no kernel family for a {type(config).__qualname__} from {module}")


class StaticBuilds:
    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self._builds: dict[tuple, dict] = {}
        self._code: dict[tuple, list] = {}
        self._rows: dict[tuple, dict] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[tuple, threading.Lock] = {}
        self._folders = 0

    def _key_lock(self, key: tuple) -> threading.Lock:
        with self._lock:
            return self._key_locks.setdefault(key, threading.Lock())

    def build(self, config: Any, num_groups: int = 8, perturbation: Any = None, ablation: Any = None) -> dict:
        """The family's ``static_build`` dict (``cubin``, ``label``, ``compile_seconds``, ...) of this
        build: compiled now if this process has not compiled it yet. Shared: do not modify it."""
        family = family_of(config)
        key = (family, config, num_groups, perturbation, ablation)
        with self._key_lock(key):
            if key not in self._builds:
                from profiling import static_report

                module = static_report.load_family(family)
                os.environ.setdefault("CUTE_DSL_ARCH", module.ARCH)
                with self._lock:
                    self._folders += 1
                    folder = self.folder / f"build{self._folders:03d}"
                if perturbation is None and ablation is None:
                    build = module.static_build(config, folder, num_groups=num_groups)
                else:
                    build = module.static_build(config, folder, num_groups=num_groups, perturbation=perturbation,
                                                ablation=ablation)
                self._builds[key] = build
            return self._builds[key]

    def cubin(self, config: Any, num_groups: int = 8, perturbation: Any = None, ablation: Any = None) -> str:
        return self.build(config, num_groups, perturbation, ablation)["cubin"]

    def code(self, config: Any, num_groups: int = 8, perturbation: Any = None, ablation: Any = None) -> list:
        """The instructions of the build's main kernel (``profiling.sass.kernel_code``), disassembled
        once. Shared: do not modify the list."""
        key = (family_of(config), config, num_groups, perturbation, ablation)
        cubin = self.cubin(config, num_groups, perturbation, ablation)
        with self._key_lock(("code",) + key):
            if key not in self._code:
                from profiling import sass

                self._code[key] = sass.kernel_code(cubin)
            return self._code[key]

    def row(self, family: str, label: str) -> dict:
        """The static report's row (``profiling.static_report.inspect_build``) of ``family``'s
        ``STATIC_MATRIX`` variant ``label``, from its shared build."""
        key = (family, label)
        from profiling import static_report

        module = static_report.load_family(family)
        (config,) = [c for c in module.STATIC_MATRIX if c.label == label]
        build = self.build(config)
        with self._key_lock(("row",) + key):
            if key not in self._rows:
                self._rows[key] = static_report.inspect_build(dict(build), family)
            return self._rows[key]
