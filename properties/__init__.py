"""Hypothesis properties that aim the exact NVFP4 oracle at any grouped-GEMM subject.

* ``properties.subjects``: what can be tested (``model``, ``hopper``, ``blackwell``, ``auto``, or a
  file with ``custom_kernel``) and the constraints each declares;
* ``properties.strategies``: problem sets, value distributions and pointer layouts;
* ``properties.checks``: the checks applied to every subject run (poison, canaries, bound,
  bitwise on exact-sum inputs, determinism, caller order) and the one-line reproduction;
* ``properties.repro``: ``python -m properties.repro ...`` replays one failing example.
"""
