"""Freeing an object for the host-path state machines, without a full collection per step.

CPython frees an object the moment its last reference goes, and runs its weak-reference callbacks
then (what evicts a fast-path entry); only an object held by a reference cycle waits for the
cycle collector. ``gc.collect()`` after every freeing step would make it certain, but one collection
walks the whole heap: about 0.1 s on a CPU machine and more in a process that has imported CUDA
and CuTe DSL, which would be most of the host state machines' time in the property command.
"""

from __future__ import annotations

import gc
import weakref


def ensure_freed(ref: weakref.ref) -> bool:
    """Collect cycles only while ``ref``'s object is still alive, the young generations first (a
    cycle made during the last step, such as a caught exception's traceback frames that hold the
    object, is young); True when it is gone now."""
    for generation in (1, 2):
        if ref() is None:
            return True
        gc.collect(generation)
    return ref() is None
