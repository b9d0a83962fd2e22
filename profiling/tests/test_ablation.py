"""profiling.ablation's config handling (the timing itself needs the H200)."""

import json

import pytest

from kernel.errors import UnsupportedConfigError
from profiling import ablation

SPLIT = "h90_m128n128k256_s3_wg1_dq1b3_fp16_prmt"


def test_ablate_adds_three_twins_of_split_configs_only():
    configs = ablation.parse_configs([SPLIT, "h90_m128n128k256_s3_wg1_fp16"], [], ablate=True)
    labels = [c.label for c in configs]
    assert labels[:2] == [SPLIT, "h90_m128n128k256_s3_wg1_fp16"]
    assert sorted(labels[2:]) == sorted(f"{SPLIT}_ablate-{a}" for a in ablation.ABLATIONS)


def test_configs_from_json_are_checked():
    (c,) = ablation.parse_configs([], [json.dumps({"tile_n": 256, "consumer_warpgroups": 2, "num_ab_stages": 2})], False)
    assert c.label == "h90_m128n256k256_s2_wg2_fp16"
    with pytest.raises(UnsupportedConfigError):
        ablation.parse_configs([], [json.dumps({"tile_n": 256})], False)  # 256 accumulators per thread


def test_unknown_label_is_refused():
    with pytest.raises(SystemExit, match="unknown variant"):
        ablation.parse_configs(["h90_nope"], [], False)
