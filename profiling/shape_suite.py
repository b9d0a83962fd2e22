"""The shape suite: every named problem the benchmarks, the speed table, the dispatch sweep and
the dispatch tests use, declared once here (plain Python: no torch).

Each shape has a name, a family and a provenance:

* ``leaderboard-test``: the public leaderboard's ten test cases (as ``oracle.leaderboard.TEST_CASES``),
  ``lbtest1`` .. ``lbtest10`` in its order; per-group N and K differ.
* ``leaderboard-bench``: its four ranked benchmarks (as ``oracle.leaderboard.BENCHMARK_CASES``),
  ``bench1`` .. ``bench4``.
* ``moe``: routed-expert layers of released mixture-of-experts models, one group per expert a
  GPU holds, each group's M the tokens the router sent to it. The M lists were drawn once from a
  seeded router model and written out here (so they never change): every token picks top-k
  distinct experts with probabilities proportional to ``exp(N(0, sigma))`` expert weights
  (``random.Random(seed)``), and the first ``G`` experts' counts are the GPU's groups.
* ``dense``: one group with M in the thousands (a dense layer on a prefill chunk).
* ``decode``: M of 1 to 16 per group (a few tokens per expert while generating), drawn
  uniformly with ``random.Random(seed).randint(1, 16)``.
* ``ragged``: N not a multiple of the 128-wide tile and M off the tile edges.

What the Hopper kernel takes (kernel.hopper.constraints, kernel.validation.KernelConstraints):
K a multiple of 256 (every production build's ``tile_k``), at most 64 groups, any M and N. A
model whose K is not a multiple of 256 (gpt-oss's 2880, DeepSeek-V2-Lite's down projection
with K = 1408) appears with a K it does have elsewhere, and the provenance says so.

A Hopper build compiles once per (config, group count), so the suite's shapes share six group
counts (1, 2, 3, 4, 8, 32): a build costs six compiles over the whole suite. :data:`QUICK` is a
subset of nine shapes over five group counts (1, 2, 3, 8, 32), one or more of every family but
the leaderboard's tests.
"""

from __future__ import annotations

import json
from pathlib import Path

from profiling.floors import ShapeSet, shape_set

FAMILIES = ("leaderboard-test", "leaderboard-bench", "moe", "dense", "decode", "ragged")

# MoE token counts per local expert (see the module docstring for how they were drawn)
# seed 1: 2048 tokens, top-8 of 256 experts, sigma 0.6
_DSV3_ROWS = (129, 122, 65, 36, 23, 57, 34, 20, 53, 48, 78, 29, 56, 61, 23, 71,
              80, 220, 59, 37, 113, 52, 85, 45, 63, 114, 85, 59, 20, 61, 50, 66)
# seed 2: 512 tokens, top-6 of 64 experts, sigma 0.6
_V2LITE_ROWS = (168, 25, 66, 55, 73, 21, 41, 25, 22, 28, 45, 41, 32, 59, 38, 8,
                99, 38, 32, 54, 50, 49, 28, 47, 13, 130, 26, 37, 58, 62, 43, 63)
_MIXTRAL_ROWS = (114, 155, 89, 158, 102, 96, 195, 115)  # seed 3, 512 tokens, top-2 of 8, sigma 0.3
_DECODE_32 = (8, 10, 4, 13, 16, 5, 3, 3, 1, 13, 10, 2, 8, 12, 9, 6,
              4, 9, 7, 1, 9, 9, 7, 6, 10, 10, 12, 3, 11, 13, 8, 6)  # seed 4
_DECODE_8 = (9, 12, 1, 15, 8, 2, 6, 4)  # seed 5


# The leaderboard's cases, (M, N, K) per group, in its order: oracle.leaderboard's data file, read
# here directly because importing the oracle imports torch and this module must not (the Nsight
# Compute sweep's parent process plans from it).
_CASES = json.loads((Path(__file__).resolve().parents[1] / "oracle" / "leaderboard_cases.json").read_text())
_LEADERBOARD_BENCHMARKS = tuple(tuple(map(tuple, row)) for row in _CASES["benchmarks"])
_LEADERBOARD_TESTS = tuple(tuple(map(tuple, row)) for row in _CASES["tests"])


def _leaderboard(cases, prefix: str, family: str, source: str) -> tuple[ShapeSet, ...]:
    return tuple(shape_set(f"{prefix}{i}", m, n, k, family, f"the leaderboard's {source} {i} (oracle.leaderboard)")
                 for i, (m, n, k) in enumerate(cases, 1))


# In the order the dispatch sweep runs them: the ranked benchmarks first, the tiny tests last.
SUITE: tuple[ShapeSet, ...] = (
    *_leaderboard(_LEADERBOARD_BENCHMARKS, "bench", "leaderboard-bench", "benchmark"),
    shape_set("moe_dsv3_up", _DSV3_ROWS, 4096, 7168, "moe",
              "DeepSeek-V3 routed experts, gate and up projections fused (N = 2 x 2048), K = hidden 7168; "
              "256 experts over 8 GPUs: 32 groups, a 2048-token batch routed top-8"),
    shape_set("moe_dsv3_down", _DSV3_ROWS, 7168, 2048, "moe",
              "DeepSeek-V3 routed experts, down projection: N = hidden 7168, K = expert intermediate 2048; "
              "the same 32 groups as moe_dsv3_up"),
    shape_set("moe_2048x1408_up", _V2LITE_ROWS, 2816, 2048, "moe",
              "DeepSeek-V2-Lite / Qwen1.5-MoE-A2.7B experts (hidden 2048, expert intermediate 1408), gate and "
              "up fused (N = 2816), K = 2048; DeepSeek-V2-Lite's 64 experts over 2 GPUs: 32 groups, 512 tokens "
              "top-6 (their down projection, K = 1408, is not a multiple of 256)"),
    shape_set("moe_mixtral_up", _MIXTRAL_ROWS, 7168, 4096, "moe",
              "Mixtral 8x7B experts at tensor parallelism 4 (intermediate 14336 / 4 = 3584), gate and up fused "
              "(N = 7168), K = hidden 4096; 8 groups, 512 tokens top-2"),
    shape_set("dense_4096", [4096], 4096, 4096, "dense",
              "one 4096 x 4096 x 4096 GEMM: Llama-2-7B's attention output projection (hidden 4096) on a "
              "4096-token prefill"),
    shape_set("dense_dsv3_shared", [4096], 4096, 7168, "dense",
              "DeepSeek-V3's shared expert, gate and up fused (N = 2 x 2048), K = hidden 7168: every token of a "
              "4096-token prefill, one group"),
    shape_set("dense_2320", [2320], 4096, 4096, "dense",
              "dense_4096's layer on a 2320-token prefill chunk: M just past a multiple of 256 (nine 256-row "
              "blocks and 16 rows), where a tile of 256 rows computes 240 rows of nothing"),
    shape_set("decode_dsv3_up", _DECODE_32, 4096, 7168, "decode",
              "moe_dsv3_up while generating: 32 experts of a GPU, 1-16 tokens each"),
    shape_set("decode_mixtral_down", _DECODE_8, 4096, 3584, "decode",
              "Mixtral 8x7B down projection at tensor parallelism 4 (N = hidden 4096, K = 14336 / 4 = 3584) "
              "while generating: 8 experts, 1-16 tokens each"),
    shape_set("ragged_n2880", [200, 72, 17], 2880, 2048, "ragged",
              "N = 2880, gpt-oss's hidden size (22.5 tiles of 128), with M = 200, 72, 17 off the tile edges; "
              "K = 2048 (gpt-oss's own K, 2880, is not a multiple of 256); 92 tiles: a one-round grid 70 % full"),
    shape_set("ragged_mixed", [200, 457, 33], [1408, 2880, 5120], [2048, 4096, 7168], "ragged",
              "per-group N and K differ, as in the leaderboard's tests, at layer sizes: N 1408 (expert "
              "intermediate above), 2880 (gpt-oss hidden), 5120 (Qwen2-57B-A14B gate+up); M off the tile edges"),
    *_leaderboard(_LEADERBOARD_TESTS, "lbtest", "leaderboard-test", "test case"),
)

SUITE_BY_NAME: dict[str, ShapeSet] = {s.name: s for s in SUITE}

# The dispatch sweep's --quick subset: five group counts (1, 2, 3, 8, 32)
QUICK: tuple[str, ...] = ("bench1", "bench2", "bench3", "bench4", "moe_dsv3_up", "moe_mixtral_up", "dense_4096",
                          "decode_dsv3_up", "ragged_n2880")


def get_shape(name: str) -> ShapeSet:
    try:
        return SUITE_BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown shape set {name!r}; known: {sorted(SUITE_BY_NAME)}") from None


def family_shapes(family: str) -> tuple[ShapeSet, ...]:
    if family not in FAMILIES:
        raise KeyError(f"unknown shape family {family!r}; known: {', '.join(FAMILIES)}")
    return tuple(s for s in SUITE if s.family == family)


def select(spec: str) -> list[ShapeSet]:
    """The shapes a ``--shapes`` / ``NVFP4_BENCH_SHAPES`` value names: ``suite`` (every shape),
    ``quick`` (:data:`QUICK`), or a comma list of family names and shape names, in that order,
    without repeats."""
    out: list[ShapeSet] = []
    for word in (w.strip() for w in spec.split(",")):
        if not word:
            continue
        if word == "suite":
            found = list(SUITE)
        elif word == "quick":
            found = [get_shape(n) for n in QUICK]
        elif word in FAMILIES:
            found = list(family_shapes(word))
        else:
            found = [get_shape(word)]
        out += [s for s in found if s not in out]
    return out


def group_counts(shapes) -> list[int]:
    """The distinct group counts of ``shapes``: a Hopper build compiles once for each."""
    return sorted({s.num_groups for s in shapes})
