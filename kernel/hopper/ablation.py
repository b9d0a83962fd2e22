"""Ablated builds of the Hopper kernel: one part of a variant left out, to time the rest alone
(profiling only; :mod:`profiling.ablation` owns them). Pure Python.

An :class:`Ablation` is a harness build option like :class:`kernel.perturbation.Perturbation`:
passed to the build next to the variant's config (never a field of it), part of the compile-cache
key, never present in a production build (``ablation=None`` traces exactly the production code)
and never served by the fast path (``custom_kernel`` takes none). Its results are wrong by
design: only timings are read from it.

The part of a ``roles="split"`` config (``part``):

* ``no_fence``: the dequant warps skip the generic -> async proxy fence (a race: timing only).

Parts of a cooperative ``x_operand="regs"`` config (its consumers decode their own X fragment
and, together, Y into shared memory):

* ``no_y_dequant``: the consumers skip Y's decode (the fence and both named barriers stay);
* ``no_y_sync``: the consumers skip Y's decode, its proxy fence and both named barriers (what
  is left when Y arrives in shared memory ready to use, e.g. from a pre-pass);
* ``no_x_dequant``: the X fragment is a fixed register fragment (no shared reads, no decode);
* ``mma_only``: ``no_x_dequant`` and ``no_y_sync``: waits, wgmma and the epilogue only.

A ``y_source="prepass"`` config (Y arrives in shared memory by TMA, already fp16) takes
``no_x_dequant`` and the parts of its Y ring:

* ``no_y_load``: the producer fetches no Y box; it completes each buffer's expected bytes
  itself (``mbarrier.complete_tx``), so every wait, release and handshake of the ring stays:
  what moving Y's fp16 bytes costs;
* ``no_y_ring``: no Y box, no wait for one, no release: the ring's handshakes as well;
* ``mma_only``: ``no_x_dequant`` and ``no_y_ring``: X stage waits, wgmma and the epilogue only;
* ``no_prepass``: phase 1 decodes nothing (no claim, no item; the
  completion barrier stays, passed at once): what decoding Y into the workspace and waiting for
  every CTA's chunks cost (the Y boxes read stale rows);
* ``no_chunk_wait`` (``phase1_beside`` builds): the producer warp issues each K stage's Y boxes
  without waiting for the chunk flags that publish them (phase 1 still runs beside the tiles;
  the boxes may read rows not yet decoded): what the per-stage flag acquire costs;
* ``phase1_only``: phase 1 and its completion barrier, then nothing
  (no X, no Y box, no wgmma, no C): what phase 1 takes alone.
* ``uniform_split`` (``y_tail64`` builds): the producer warp takes the balanced schedule's
  fallback split (ceil(full / CTAs) full and ceil(light / CTAs) light tiles per CTA) without its
  ~1200-instruction search. Every tile still runs once (results are right); on a shape with no
  light tiles and at most one full tile per CTA (bench4) the assignment is the balanced one, so
  the time difference is what computing the split costs.

Any config:

* ``no_epilogue``: the consumers write no C at all (no conversion, no staging, no store; the
  wgmmas and every wait stay): what the epilogue costs, ``direct`` or ``smem``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Part = Literal["no_fence", "no_y_dequant", "no_y_sync", "no_x_dequant", "mma_only",
               "no_y_load", "no_y_ring", "no_prepass", "no_chunk_wait", "phase1_only", "uniform_split",
               "no_epilogue"]
SPLIT_PARTS: tuple[str, ...] = ("no_fence",)
REGS_PARTS: tuple[str, ...] = ("no_y_dequant", "no_y_sync", "no_x_dequant", "mma_only")
PREPASS_PARTS: tuple[str, ...] = ("no_x_dequant", "no_y_load", "no_y_ring", "mma_only", "no_prepass", "no_chunk_wait",
                                  "phase1_only", "uniform_split")
ANY_PARTS: tuple[str, ...] = ("no_epilogue",)  # every config takes these
PARTS: tuple[str, ...] = tuple(dict.fromkeys(SPLIT_PARTS + REGS_PARTS + PREPASS_PARTS + ANY_PARTS))
# what the kernel may leave out -> the parts that leave it out
LEAVES_OUT: dict[str, tuple[str, ...]] = {
    "fence": ("no_fence",),
    "y_dequant": ("no_y_dequant", "no_y_sync", "mma_only"),
    "y_sync": ("no_y_sync", "mma_only"),
    "x_dequant": ("no_x_dequant", "mma_only"),
    # the prepass Y ring (y_source="prepass" configs only)
    "y_load": ("no_y_load", "no_y_ring", "mma_only"),
    "y_ring": ("no_y_ring", "mma_only"),
    "prepass": ("no_prepass",),
    "chunk_wait": ("no_prepass", "no_chunk_wait"),
    "phase2": ("phase1_only",),
    "balanced_split": ("uniform_split",),
    "epilogue": ("no_epilogue",),
}


@dataclass(frozen=True)
class Ablation:
    part: Part

    def __post_init__(self):
        if self.part not in PARTS:
            raise ValueError(f"ablation part must be one of {PARTS}, got {self.part!r}")

    @property
    def tag(self) -> str:
        """A printable name: ``LABEL~TAG`` names an ablated build (tables, cubin folders)."""
        return f"ablate-{self.part}"

    def skips(self, what: str) -> bool:
        """Whether this ablation leaves ``what`` out of the build (``LEAVES_OUT``'s keys)."""
        return self.part in LEAVES_OUT[what]

    def problems(self, config) -> list[str]:
        """Why ``config`` cannot be built with this ablation (empty: it can)."""
        if self.part in ANY_PARTS:
            return []
        prepass = getattr(config, "y_source", "smem_decode") == "prepass"
        if self.part in REGS_PARTS + PREPASS_PARTS:
            if config.roles != "cooperative" or config.x_operand != "regs":
                return [f"ablation {self.part!r} needs roles='cooperative' and x_operand='regs'"]
            if prepass and self.part not in PREPASS_PARTS:
                return [f"ablation {self.part!r} leaves out parts of the shared-memory Y decode, which "
                        f"y_source={config.y_source!r} does not have (only {', '.join(PREPASS_PARTS)} apply)"]
            if not prepass and self.part not in REGS_PARTS:
                return [f"ablation {self.part!r} leaves out parts of the prepass Y ring (y_source='prepass'), "
                        f"which y_source={config.y_source!r} does not have"]
            if self.part == "no_chunk_wait" and not getattr(config, "phase1_beside", False):
                return ["ablation 'no_chunk_wait' leaves out the chunk-flag waits of phase1_beside builds"]
            if self.part == "uniform_split" and not getattr(config, "y_tail64", False):
                return ["ablation 'uniform_split' replaces the balanced schedule of y_tail64 builds"]
            return []
        if config.roles != "split":
            return [f"ablation {self.part!r} needs roles='split' (the parts are separate warp roles only there)"]
        return []


def check_ablation(config, ablation: Ablation | None) -> None:
    """Raise UnsupportedConfigError when ``ablation`` is not an Ablation that ``config`` can take."""
    from kernel.errors import UnsupportedConfigError

    if ablation is None:
        return
    if not isinstance(ablation, Ablation):
        raise UnsupportedConfigError(config.label, [f"ablation must be a kernel.hopper.ablation.Ablation, got {ablation!r}"])
    problems = ablation.problems(config)
    if problems:
        raise UnsupportedConfigError(f"{config.label}~{ablation.tag}", problems)
