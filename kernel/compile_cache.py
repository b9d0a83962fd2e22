"""Compiled-kernel cache shared by the kernels: one compile per (config, group count).

Shapes, pointers and tile totals are run-time arguments of the compiled kernels, so a fuzzing
run over many shape sets compiles each variant once; the statistics make that testable.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Generic, Hashable, TypeVar

T = TypeVar("T")


@dataclass
class CacheStats:
    hits: int = 0
    compiles: int = 0
    compile_seconds: float = 0.0


class CompileCache(Generic[T]):
    def __init__(self, name: str):
        self.name = name
        self.stats = CacheStats()
        self._entries: dict[Hashable, T] = {}
        self._lock = threading.Lock()

    def get_or_compile(self, key: Hashable, build: Callable[[], T]) -> T:
        with self._lock:
            if key in self._entries:
                self.stats.hits += 1
                return self._entries[key]
            start = time.perf_counter()
            value = build()
            self.stats.compile_seconds += time.perf_counter() - start
            self.stats.compiles += 1
            self._entries[key] = value
            return value

    def keys(self) -> list[Hashable]:
        return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.stats = CacheStats()
