"""Moving, copying and re-pointing problem tuples without breaking the aliasing a layout built.

A layout such as `views` or `shared_a` is a statement about storage (one buffer, one tensor
object); a per-tensor `.to(device)` would silently turn it into `separate`. These helpers move
each underlying storage once and rebuild every tensor as the same view of the moved storage.
"""

import torch


def _rebuild_on(tensors, device, copy: bool):
    """``device`` None: each tensor stays on its own device. A tensor subclass (host-memory
    plain scales, oracle.host_memory) stays in its class."""
    moved, rebuilt_by_id = {}, {}     # the same object in gives the same object out
    rebuilt = []
    for t in tensors:
        if id(t) in rebuilt_by_id:
            rebuilt.append(rebuilt_by_id[id(t)])
            continue
        storage = t.untyped_storage()
        key = (str(storage.device), storage.data_ptr())
        if key not in moved:
            whole = torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage)
            moved[key] = whole.to(t.device if device is None else device, copy=copy)
        whole = moved[key]
        rebuilt_by_id[id(t)] = whole.view(t.dtype).as_strided(t.shape, t.stride(),
                                                              t.storage_offset())
        if type(t) is not torch.Tensor:
            rebuilt_by_id[id(t)] = rebuilt_by_id[id(t)].as_subclass(type(t))
        rebuilt.append(rebuilt_by_id[id(t)])
    return rebuilt


def _map_tensors(data, fn):
    abc, sf, sf_reordered, problem_sizes = data
    flat = [t for group in (*abc, *sf, *sf_reordered) for t in group]
    new = iter(fn(flat))
    take = lambda groups: [tuple(next(new) for _ in g) for g in groups]  # noqa: E731
    return take(abc), take(sf), take(sf_reordered), [tuple(s) for s in problem_sizes]


def data_to(data, device):
    """The problem on `device`, with the same sharing and views as the input."""
    return _map_tensors(data, lambda ts: _rebuild_on(ts, torch.device(device), copy=False))


def clone_data(data):
    """A deep copy (fresh storages, each tensor on its own device) with the same sharing and
    views as the input."""
    return _map_tensors(data, lambda ts: _rebuild_on(ts, None, copy=True))


def replace_outputs(data, new_c_list):
    """The same problem with each group's c replaced by new_c_list[g] (other tensors shared)."""
    abc, sf, sf_reordered, problem_sizes = data
    if len(new_c_list) != len(abc):
        raise ValueError(f"{len(new_c_list)} outputs for {len(abc)} groups")
    return ([(a, b, c) for (a, b, _), c in zip(abc, new_c_list)], list(sf), list(sf_reordered),
            list(problem_sizes))


def output_tensors(data) -> list[torch.Tensor]:
    """Each group's c."""
    return [c for _, _, c in data[0]]
