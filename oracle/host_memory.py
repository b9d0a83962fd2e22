"""Plain scale tensors kept in host memory, as the leaderboard keeps them, on a machine without a GPU.

The leaderboard's generator leaves the plain (row-major) scales ``sfa``/``sfb`` on the CPU while
every other tensor lives on the GPU. A submission that reads them as if they were device
tensors fails there: a torch op mixing them with GPU tensors raises a device mismatch, and a
kernel handed their pointer reads host addresses. On a GPU machine the harness reproduces this
exactly (plain CPU tensors). On a machine without a GPU every tensor is a CPU tensor, so the
harness wraps the plain scales in :class:`HostOnlyTensor` instead: a tensor that behaves like a
host tensor the subject's device cannot read.

What it allows is what works on the leaderboard: metadata (shape, dtype, strides, pointer),
views, dtype conversions and arithmetic among host tensors (the result stays host memory),
reads on the host (``tolist``, ``numpy``, ``item``), and copies to a device (``.to(device)``,
``.to(other_tensor)``, ``.cuda()``, ``device_tensor.copy_(host)``, ``device_tensor[...] = host``),
whose result is an ordinary tensor. What it refuses, with :class:`HostMemoryRead`, is an op that
combines it with a device tensor (on a CPU machine: any other tensor of more than zero
dimensions), which is what raises or faults on the leaderboard.
"""

from __future__ import annotations

import torch

from kernel.errors import PicklableError

# ops that copy the host tensor into device memory when given a device (their result is an
# ordinary tensor); ``cpu`` keeps it in host memory
_DEVICE_COPIES = {"to", "cuda"}
# ops that write a host tensor into a device tensor (the device tensor is the first argument)
_WRITES_INTO_DEVICE = {"copy_", "__setitem__"}


class HostMemoryRead(PicklableError, RuntimeError):
    """A plain scale tensor kept in host memory was combined with a device tensor."""


def _tensors(values):
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors(v)


def _names_a_device(args, kwargs) -> bool:
    """``Tensor.to``'s arguments name a device (a device, a device string or index, or another
    tensor whose device it takes)."""
    if "device" in kwargs:
        return True
    return any(isinstance(a, (torch.device, str, int, torch.Tensor)) and not isinstance(a, bool)
               for a in args[1:])


class HostOnlyTensor(torch.Tensor):
    """A CPU tensor standing for host memory the subject's device cannot read (module docstring)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in _DEVICE_COPIES and (name == "cuda" or _names_a_device(args, kwargs)):
            with torch._C.DisableTorchFunctionSubclass():
                out = func(*args, **kwargs)
            return out.as_subclass(torch.Tensor)
        others = [t for t in _tensors(list(args) + list(kwargs.values()))
                  if not isinstance(t, HostOnlyTensor) and t.dim() > 0]
        if others:
            if name in _WRITES_INTO_DEVICE and not isinstance(args[0], HostOnlyTensor):
                with torch._C.DisableTorchFunctionSubclass():
                    return func(*args, **kwargs)
            raise HostMemoryRead(
                f"{name or func}: a plain scale tensor (sfa/sfb) is in host memory, as the "
                f"leaderboard keeps it, and was combined with a device tensor; read the reordered "
                f"scales (sfasfb_reordered_tensors) or copy it first with .to(device)")
        return super().__torch_function__(func, types, args, kwargs)


def host_only(t: torch.Tensor) -> torch.Tensor:
    """``t`` (a CPU tensor) as host memory the subject's device cannot read; a view, no copy."""
    if t.device.type != "cpu":
        raise ValueError(f"host_only takes a CPU tensor, got one on {t.device}")
    return t.as_subclass(HostOnlyTensor)


def plain(t: torch.Tensor) -> torch.Tensor:
    """An ordinary tensor viewing the same memory (the harness's own reads of host tensors)."""
    return t.as_subclass(torch.Tensor) if isinstance(t, HostOnlyTensor) else t
