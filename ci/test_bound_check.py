"""ci.bound_check on the CPU: the honest model is within its declared bound, a wrong one is not."""

from ci import bound_check
from properties.wrong_subjects import wrong_variant


def test_the_model_is_within_its_declared_bound(capsys):
    assert bound_check.main(["--subject=model", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "declares accumulation_chunk=256" in out and "OK:" in out.splitlines()[-1]


def test_a_dropped_k_block_fails_the_check(capsys):
    assert not bound_check.check(wrong_variant("drop_last_k_block"), quick=True)
    assert "FAIL:" in capsys.readouterr().out.splitlines()[-1]
