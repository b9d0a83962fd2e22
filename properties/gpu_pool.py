"""Which GPUs this machine shows, and which worker or job runs on which of them.

Pure functions (and one small allocator) shared by the pytest-xdist glue
(``properties.xdist_plugin``: one worker per GPU) and the mutant runner (``ci.mutation_runner``:
at most ``--jobs-per-gpu`` mutant runs per GPU). Nothing here initialises CUDA: the device count
comes from ``nvidia-smi -L`` (torch only where there is no nvidia-smi), so a controller process
can enumerate GPUs and still hand each worker its own ``CUDA_VISIBLE_DEVICES``.

Environment:

* ``CUDA_VISIBLE_DEVICES``: as CUDA reads it, a comma-separated list of ordinals or ``GPU-``/
  ``MIG-`` UUIDs; the list ends at the first entry CUDA would reject (``-1``, an ordinal past the
  device count, anything else), so ``""`` and ``-1`` hide every GPU.
* ``NVFP4_WORKERS_PER_GPU``: workers (jobs) allowed to share one GPU (default 1; the
  ``--workers-per-gpu`` option wins).
* ``NVFP4_FAKE_GPU_COUNT``: the device count to assume instead of asking the driver (the CPU
  tests of this plumbing use it; nothing runs on those GPUs).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Mapping

FAKE_COUNT_ENV = "NVFP4_FAKE_GPU_COUNT"
PER_GPU_ENV = "NVFP4_WORKERS_PER_GPU"

_UUID = re.compile(r"^(GPU|MIG)-[0-9A-Za-z/-]+$")


class TooManyWorkers(ValueError):
    """More workers (or jobs) than the visible GPUs take at the allowed number per GPU."""


def parse_visible_devices(value: str) -> list[str]:
    """The devices a ``CUDA_VISIBLE_DEVICES`` value shows, in its order: ordinals and UUIDs up to
    the first entry CUDA would not accept (a negative or malformed ordinal, an empty entry), each
    once."""
    out: list[str] = []
    for raw in value.split(","):
        entry = raw.strip()
        if entry.isdigit():
            entry = str(int(entry))
        elif not _UUID.match(entry):
            break
        if entry in out:
            break
        out.append(entry)
    return out


def visible_gpus(cuda_visible_devices: str | None, device_count: int) -> list[str]:
    """The GPUs a process started with this ``CUDA_VISIBLE_DEVICES`` (None: unset) would see on a
    machine with ``device_count`` devices, as the values to give each worker: ordinals ``0..n-1``
    when unset, else the listed entries (ordinal entries stop at the first one past the count)."""
    if device_count <= 0:
        return []
    if cuda_visible_devices is None:
        return [str(i) for i in range(device_count)]
    out: list[str] = []
    for entry in parse_visible_devices(cuda_visible_devices):
        if entry.isdigit() and int(entry) >= device_count:
            break
        out.append(entry)
    return out[:device_count]


def physical_device_count(env: Mapping[str, str] | None = None) -> int | None:
    """GPUs on this machine: ``NVFP4_FAKE_GPU_COUNT`` if set, else the ``GPU`` lines of
    ``nvidia-smi -L`` (which ignores CUDA_VISIBLE_DEVICES); None when neither answers."""
    env = os.environ if env is None else env
    fake = env.get(FAKE_COUNT_ENV)
    if fake is not None and fake.strip() != "":
        try:
            return max(0, int(fake))
        except ValueError:
            raise ValueError(f"{FAKE_COUNT_ENV}={fake!r} is not a whole number") from None
    smi = env.get("NVIDIA_SMI") or shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def _torch_visible_count() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # noqa: BLE001 - no torch, no driver: no GPU
        return 0


def gpus_from_env(env: Mapping[str, str] | None = None) -> list[str]:
    """The GPUs this process may hand out: :func:`visible_gpus` of ``CUDA_VISIBLE_DEVICES`` and
    the machine's count; without nvidia-smi, the first entries of the list (or the ordinals) up to
    the count torch sees."""
    env = os.environ if env is None else env
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    count = physical_device_count(env)
    if count is not None:
        return visible_gpus(cvd, count)
    seen = _torch_visible_count()
    return parse_visible_devices(cvd)[:seen] if cvd is not None else [str(i) for i in range(seen)]


def workers_per_gpu(option: int | None, env: Mapping[str, str] | None = None) -> int:
    """The option if given, else ``NVFP4_WORKERS_PER_GPU``, else 1; at least 1."""
    env = os.environ if env is None else env
    raw = option if option is not None else env.get(PER_GPU_ENV) or 1
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{PER_GPU_ENV}={raw!r} is not a whole number") from None
    if value < 1:
        raise ValueError(f"workers per GPU must be at least 1, not {value}")
    return value


def auto_workers(gpus: list[str], per_gpu: int = 1) -> int | None:
    """What ``-n auto`` means: ``per_gpu`` workers per visible GPU; None without a GPU (then the
    CPU count, pytest-xdist's own rule, stands)."""
    return len(gpus) * per_gpu if gpus else None


def assign_workers(n_workers: int, gpus: list[str], per_gpu: int = 1) -> list[str]:
    """The GPU of each worker, by worker index: round-robin over ``gpus`` (worker i on
    ``gpus[i % len(gpus)]``), so the GPUs fill evenly. Empty without a GPU (nothing to pin).
    Raises :class:`TooManyWorkers` when ``n_workers`` exceeds ``per_gpu`` per GPU."""
    if not gpus:
        return []
    if n_workers > len(gpus) * per_gpu:
        shown = ",".join(gpus)
        raise TooManyWorkers(
            f"{n_workers} workers for {len(gpus)} visible GPU{'s' if len(gpus) != 1 else ''} ({shown}) at "
            f"{per_gpu} worker{'s' if per_gpu != 1 else ''} per GPU: use -n {len(gpus) * per_gpu} or -n auto, "
            f"or let workers share a GPU with --workers-per-gpu={-(-n_workers // len(gpus))} "
            f"(or {PER_GPU_ENV})")
    return [gpus[i % len(gpus)] for i in range(n_workers)]


def worker_label(worker_id: str, gpu: str | None) -> str:
    """How a worker is named in tables: ``gw0 (GPU 0)``, or the id alone when it has no GPU."""
    return f"{worker_id} (GPU {gpu})" if gpu is not None else worker_id


class GpuSlots:
    """At most ``per_gpu`` jobs on each GPU at once. :meth:`take` gives a GPU with a free slot
    (the least loaded one; among equals the next one round-robin after the last GPU given) or
    None when every GPU is full; :meth:`give` returns the slot. Not locked: the caller holds its
    own lock around both (``ci.mutation_runner``'s pool does)."""

    def __init__(self, gpus: list[str], per_gpu: int = 1):
        if not gpus:
            raise ValueError("GpuSlots needs at least one GPU")
        if per_gpu < 1:
            raise ValueError(f"jobs per GPU must be at least 1, not {per_gpu}")
        self.gpus = list(gpus)
        self.per_gpu = per_gpu
        self.load = {g: 0 for g in self.gpus}
        self._next = 0

    def free(self) -> bool:
        return any(n < self.per_gpu for n in self.load.values())

    def take(self) -> str | None:
        order = [self.gpus[(self._next + i) % len(self.gpus)] for i in range(len(self.gpus))]
        open_ = [g for g in order if self.load[g] < self.per_gpu]
        if not open_:
            return None
        gpu = min(open_, key=lambda g: self.load[g])  # min keeps the first of equals
        self.load[gpu] += 1
        self._next = (self.gpus.index(gpu) + 1) % len(self.gpus)
        return gpu

    def give(self, gpu: str) -> None:
        if self.load.get(gpu, 0) <= 0:
            raise ValueError(f"GPU {gpu} has no job to give back")
        self.load[gpu] -= 1
