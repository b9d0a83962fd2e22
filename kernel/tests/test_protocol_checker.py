"""The happens-before checker's plumbing (``Perturbation.checks``), on the CPU.

The device side (shadow state in shared memory, one branch-free check per synchronization site)
runs on a GPU only; here: the record's layout and decoding, the perturbation's tag and compile
form, and the host's side of :meth:`HostPipeline.run`: a harness launch whose record holds a
violation raises :class:`ProtocolViolation` naming the rule, the CTA and the warps, a clean one
returns its outputs, and a build without the checker never reads the record. The launch is a
double that writes into the device table what a kernel would (the words the kernel's
``ptx.hb_check`` atomics update). That the checks are compiled into the harness builds and not
into production: kernel/tests/test_hopper_perturbed_sass.py.
"""

from __future__ import annotations

import pytest
import torch

import oracle
from kernel.errors import ProtocolViolation
from kernel.fast_path import FastPath
from kernel.host_pipeline import HostPipeline
from kernel.model import ModelConfig
from kernel.perturbation import (CHECK_COUNT_WORD0, CHECK_FIRST_WORD, CHECK_RULE_INDEX, CHECK_RULES, CHECK_RULES_WORD,
                                 CheckRecord, Perturbation, TABLE_WORDS, check_site, runtime_perturbation)
from kernel.validation import KernelConstraints
from profiling.host_cpu import CpuMapHooks

CONSTRAINTS = KernelConstraints(k_granularity=64, device_type="cpu")
CONFIG = ModelConfig(tile_m=64, tile_n=64, tile_k=64, max_ctas=4)


class Hooks(CpuMapHooks):
    name = "cpu-double"

    def constraints(self, config):
        return CONSTRAINTS


class DeviceDouble:
    """A launch that writes ``violations`` ((rule, warp, other, cta) each) into the device table,
    as the kernel's checks do: or of the rule bits, the first site, a count per rule."""

    def __init__(self, table, violations, stream):
        self.table, self.violations, self.stream = table, violations, stream

    def launch(self):
        if self.table is None:  # a production launch: no table, nothing recorded
            return
        for rule, warp, other, cta in self.violations:
            i = CHECK_RULE_INDEX[rule]
            self.table[CHECK_RULES_WORD] |= 1 << i
            if int(self.table[CHECK_FIRST_WORD]) == 0:
                self.table[CHECK_FIRST_WORD] = check_site(i, warp, other, cta)
            self.table[CHECK_COUNT_WORD0 + i] += 1


class CheckedPipeline(HostPipeline):
    def __init__(self, violations=()):
        super().__init__(Hooks(), fast_path=FastPath(8, stream_id=lambda device_index: 0, native=False))
        self.violations = list(violations)

    def stream_handle(self, stream, device):
        return 0

    def marshal(self, prepared, handle):
        return DeviceDouble(prepared.delay_table, self.violations, handle)


def _problem(seed=0):
    return oracle.make_inputs([(64, 64, 128, 1), (40, 96, 64, 1)], seed, device="cpu")


def test_a_recorded_violation_raises_with_rule_cta_and_warps():
    pipe = CheckedPipeline([("reuse_before_peer_wait", 3, 6, 17), ("reuse_before_peer_wait", 2, 6, 40)])
    with pytest.raises(ProtocolViolation) as err:
        pipe.run(_problem(), CONFIG, perturbation=runtime_perturbation(1))
    record = err.value.record
    assert record.rules == ("reuse_before_peer_wait",)
    assert record.counts == {"reuse_before_peer_wait": 2}
    assert (record.first_rule, record.first_cta, record.first_warp, record.first_other) == (
        "reuse_before_peer_wait", 17, 3, 6)
    text = str(err.value)
    assert "reuse_before_peer_wait" in text and "CTA 17" in text and "other warp 6" in text
    assert "missing barrier" in text  # the likely cause


def test_a_clean_record_returns_the_outputs():
    data = _problem(1)
    outputs = CheckedPipeline().run(data, CONFIG, perturbation=runtime_perturbation(1))
    assert [c.data_ptr() for c in outputs] == [abc[2].data_ptr() for abc in data[0]]


def test_a_build_without_the_checker_never_reads_the_record():
    pipe = CheckedPipeline([("wgmma_without_fence", 1, 1, 0)])
    pipe.run(_problem(), CONFIG, perturbation=runtime_perturbation(1, checks=False))
    pipe.run(_problem(), CONFIG)  # production: no table at all


def test_every_rule_decodes_from_its_bit_and_site():
    for i, (name, what, cause) in enumerate(CHECK_RULES):
        words = [0] * TABLE_WORDS
        words[CHECK_RULES_WORD] = 1 << i
        words[CHECK_FIRST_WORD] = check_site(i, 31, 5, 0x3FFFF)
        words[CHECK_COUNT_WORD0 + i] = 7
        record = CheckRecord.from_words(words)
        assert record.rules == (name,) and record.counts == {name: 7} and not record.clean
        assert (record.first_rule, record.first_warp, record.first_cta) == (name, 31, 0x3FFFF)
        assert what in record.describe() and cause in record.describe()
    assert CheckRecord.from_words([0] * TABLE_WORDS).clean
    # negative words (a torch int32 table read back) decode as unsigned
    words = [0] * TABLE_WORDS
    words[CHECK_RULES_WORD] = 1 << CHECK_RULE_INDEX["producer_exit_in_flight"]
    words[CHECK_FIRST_WORD] = check_site(CHECK_RULE_INDEX["producer_exit_in_flight"], 8, 8, 0x3FFFF) - (1 << 32)
    assert CheckRecord.from_words(words).first_cta == 0x3FFFF


def test_the_record_does_not_overlap_the_delay_words():
    p = runtime_perturbation(5)
    words = p.device_words()
    assert len(words) == TABLE_WORDS
    assert not any(words[CHECK_RULES_WORD:CHECK_COUNT_WORD0 + len(CHECK_RULES)])
    assert torch.tensor(words, dtype=torch.int32).tolist() == words


def test_checks_are_part_of_the_tag_and_the_compile_form():
    p = runtime_perturbation(7)
    assert p.checks and "-hb" in p.tag and Perturbation.from_tag(p.tag) == p
    assert p.compile_form.checks and p.compile_form != runtime_perturbation(7, checks=False).compile_form
    # every seed of one kind still shares one build
    assert len({runtime_perturbation(s).compile_form for s in range(1, 40)}) == 3
    with pytest.raises(ValueError, match="checks needs a run-time perturbation"):
        Perturbation(1, checks=True)


def test_the_skewed_sites_are_delay_slots_of_the_consumers():
    from kernel.perturbation import SKEWED_SITES, SLOT_INDEX

    assert ("consumer", "decode", "before") in SKEWED_SITES and ("consumer", "wgmma_wait", "before") in SKEWED_SITES
    assert all(site in SLOT_INDEX for site in SKEWED_SITES)
