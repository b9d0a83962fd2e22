"""pytest-benchmark files: `python3 -m pytest profiling/benchmarks --benchmark-only` (see docs/benchmarks.md)."""
