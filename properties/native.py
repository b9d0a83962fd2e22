"""The native probe (kernel.native_probe) for the tests: built once per machine (cached), or a
skip that says why it cannot be (no compiler, no headers, ``NVFP4_NATIVE_PROBE=0``)."""

from __future__ import annotations

import pytest

from kernel import native_probe


def native_or_skip():
    """The native probe function, building it now if it is not cached (about 20 s on 2 cores),
    or a skip naming the reason."""
    fn = native_probe.load()
    if fn is None:
        pytest.skip(f"the native probe is not available here: {native_probe.describe()}")
    return fn


class Counting:
    """Wraps the native probe to count the walks it decided (not None): a test that claims to run
    the native probe shows that it did."""

    def __init__(self, fn):
        self.fn = fn
        self.decided = 0
        self.declined = 0

    def __call__(self, data, config):
        r = self.fn(data, config)
        if r is None:
            self.declined += 1
        else:
            self.decided += 1
        return r
