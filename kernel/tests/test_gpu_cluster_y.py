"""On an sm_90 GPU: the cluster-shared Y decode (``y_cluster_decode``, label ``_c2d``) is bit for
bit the production bench4 build it is derived from, on the problems of ``ci.cluster_y_smoke``
(one K tile per tile, a ghost rank past N, several cluster tiles per cluster, ragged sizes, M = 0,
bench4, launches back to back), outputs NaN-filled before each launch. Skipped, with the reason,
where no sm_90 device runs the Hopper kernel."""

from __future__ import annotations

import pytest

from kernel.hopper.config import DECLARED_VARIANTS

BUILDS = [c for c in DECLARED_VARIANTS if c.y_cluster_decode]


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("config", BUILDS, ids=[c.label for c in BUILDS])
def test_cluster_y_build_is_bit_identical_to_its_twin(config):
    from ci.cluster_y_smoke import CASES, twin_of
    from ci.prepass_smoke import compare_with_twins
    from properties.subjects import gpu_skip_reason

    reason = gpu_skip_reason("hopper")
    if reason:
        pytest.skip(reason)

    assert compare_with_twins([(config, twin_of(config))], CASES, 400, reps=3, back_to_back_last=True) == 0
