"""Deliberately wrong subjects: each breaks one promise a kernel makes. The property suite must
catch every one (properties/test_wrong_subjects.py); they wrap the CPU model."""

from __future__ import annotations

import itertools

import torch

from kernel import model
from kernel.plan import make_plan
from properties.subjects import CPU_LIMITS, SubjectVariant


def _drop_last_k_block(data):
    """Accumulates every K block but the last 16 elements (a dropped tail K tile)."""
    abc, sfs, sfs_r, sizes = data
    patched = []
    for (sfa_r, sfb_r), (m, n, k, l) in zip(sfs_r, sizes):
        last = k // 16 - 1
        sfa2 = sfa_r.clone()
        sfa2[:, :, :, last % 4, last // 4, :] = 0
        patched.append((sfa2, sfb_r))
    return model.custom_kernel((abc, sfs, patched, sizes))


def _caller_order_not_restored(data):
    """Returns the outputs in launch (work-sorted) order instead of the caller's."""
    out = model.custom_kernel(data)
    plan = make_plan(data[3], tile_m=128, tile_n=128, tile_k=256, max_ctas=8)
    return [out[g] for g in plan.group_order]


def _writes_past_c(data):
    """Stores one element past the end of the last non-empty output."""
    out = model.custom_kernel(data)
    for c in reversed(out):
        if c.numel():
            c.as_strided((c.numel() + 1,), (1,), c.storage_offset())[-1] = 0.0
            break
    return out


def _skips_last_row(data):
    """An off-by-one residue predicate: the last row of every group with M % 128 != 0 is not stored."""
    abc, sfs, sfs_r, sizes = data
    saved = []
    for (a, b, c), (m, n, k, l) in zip(abc, sizes):
        if m % 128 and n:
            saved.append((c, c[m - 1].clone()))
    out = model.custom_kernel(data)
    for c, row in saved:
        c[c.shape[0] - 1].copy_(row)
    return out


_calls = itertools.count()


def _nondeterministic(data):
    """Flips the lowest bit of one element on every other call."""
    out = model.custom_kernel(data)
    if next(_calls) % 2:
        for c in out:
            if c.numel():
                bits = c.view(torch.int16)
                bits[0, 0, 0] ^= 1
                break
    return out


def _swapped_scale_subblocks(data):
    """Reads the blocked scale layout with the 32-row and 4-row sub-blocks swapped."""
    abc, sfs, sfs_r, sizes = data
    patched = []
    for sfa_r, sfb_r in sfs_r:
        # element (i%32, (i%128)//32) read as if stored at ((i%128)//32, i%32) within the 128-row block:
        # rows r = 32*q + p are read from row 4*p + q (p < 32, q < 4)
        def swap(t):
            flat = t.permute(2, 1, 0, 3, 4, 5).reshape(t.shape[2], 128, *t.shape[3:])  # (rm, 128, 4, rk, 1)
            idx = torch.arange(128)
            src = 4 * (idx % 32) + idx // 32
            moved = flat[:, src]
            out = t.clone()
            out.copy_(moved.reshape(t.shape[2], 4, 32, *t.shape[3:]).permute(2, 1, 0, 3, 4, 5))
            return out
        patched.append((swap(sfa_r), swap(sfb_r)))
    return model.custom_kernel((abc, sfs, patched, sizes))


WRONG_SUBJECTS = {
    "drop_last_k_block": _drop_last_k_block,
    "caller_order_not_restored": _caller_order_not_restored,
    "writes_past_c": _writes_past_c,
    "skips_last_row": _skips_last_row,
    "nondeterministic": _nondeterministic,
    "swapped_scale_subblocks": _swapped_scale_subblocks,
}


def wrong_variant(name: str) -> SubjectVariant:
    return SubjectVariant(f"wrong-{name}", name, WRONG_SUBJECTS[name], model.constraints(), CPU_LIMITS)
