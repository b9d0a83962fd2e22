"""pytest-xdist across GPUs: one worker per visible GPU, each pinned to its own device.

Registered by the root conftest (``pytest_plugins``); every hook is inert without ``-n``.

* ``-n auto`` on a machine with GPUs starts ``--workers-per-gpu`` (default 1) workers per visible
  GPU (``properties.gpu_pool``); without a GPU it stays pytest-xdist's CPU count.
* ``-n N`` with GPUs: worker i gets GPU ``i % GPUs`` as its ``CUDA_VISIBLE_DEVICES``, set in the
  worker's environment before its interpreter starts (the execnet spec's ``env:``; a replacement
  for a crashed worker inherits it) and again from ``workerinput`` in the worker's
  ``pytest_configure``. More workers than GPUs x ``--workers-per-gpu`` is a usage error (exit 4).
* The distribution defaults to ``--dist loadgroup`` when ``-n`` is given without ``--dist``; each
  subject property item is in the ``xdist_group`` of its variant, so all tests of one variant run
  on one worker (one CUDA context and one set of compiled kernels per variant, and the progress
  plugin's per-variant worker release still follows the variant's last test).
* Each worker sends its per-variant tallies (``properties.progress_plugin``) back in
  ``workeroutput``; the controller prints one table with a worker column.
* ``--benchmark-only`` with ``-n`` is a usage error: timings need the machine to themselves
  (pytest-benchmark would otherwise switch itself off and report nothing).
"""

from __future__ import annotations

import os

import pytest

from properties import gpu_pool

GPU_KEY = "nvfp4_gpu"  # workerinput: the worker's CUDA_VISIBLE_DEVICES
DIST_KEY = "nvfp4_dist"  # workerinput: the controller's --dist
TALLIES_KEY = "nvfp4_tallies"  # workeroutput: the worker's per-variant tallies
_ASSIGNMENT = pytest.StashKey[list]()


def pytest_addoption(parser):
    parser.getgroup("nvfp4 harness").addoption(
        "--workers-per-gpu",
        type=int,
        default=None,
        help="with -n: xdist workers allowed on one GPU (default 1, or NVFP4_WORKERS_PER_GPU); "
        "-n auto starts this many per visible GPU",
    )


def is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _distributing(config) -> bool:
    return config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))


def _per_gpu(config) -> int:
    try:
        return gpu_pool.workers_per_gpu(config.getoption("workers_per_gpu"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _gpus() -> list[str]:
    try:
        return gpu_pool.gpus_from_env()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(hookwrapper=True)
def pytest_cmdline_main(config):
    """``-n`` without ``--dist`` (or ``-d``) means ``--dist loadgroup``: set before pytest-xdist's
    own hook would make it ``load``."""
    option = config.option
    if (getattr(option, "numprocesses", None) and getattr(option, "dist", None) == "no"
            and not getattr(option, "distload", False)):
        option.dist = "loadgroup"
    yield


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own override of -n auto stands
    return gpu_pool.auto_workers(_gpus(), _per_gpu(config))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if is_worker(config):
        gpu = config.workerinput.get(GPU_KEY)
        if gpu is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = gpu
        if config.workerinput.get(DIST_KEY) == "loadgroup":
            # pytest-xdist's worker reads --dist from the command line, which may not name it
            config.option.loadgroup = True
        return
    if not _distributing(config):
        return
    if config.getoption("benchmark_only", False):
        raise pytest.UsageError(
            "--benchmark-only does not run under pytest-xdist (-n): timings need the GPU and the CPU "
            "to themselves; run the benchmarks without -n")
    from xdist.workermanage import parse_tx_spec_config

    workers = len(parse_tx_spec_config(config))
    try:
        config.stash[_ASSIGNMENT] = gpu_pool.assign_workers(workers, _gpus(), _per_gpu(config))
    except gpu_pool.TooManyWorkers as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config, specs):
    assignment = config.stash.get(_ASSIGNMENT, [])
    for spec, gpu in zip(specs, assignment):
        spec.env["CUDA_VISIBLE_DEVICES"] = gpu


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    gpu = node.gateway.spec.env.get("CUDA_VISIBLE_DEVICES") if node.config.stash.get(_ASSIGNMENT, []) else None
    if gpu is not None:
        node.workerinput[GPU_KEY] = gpu
    node.workerinput[DIST_KEY] = node.config.getoption("dist")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(session, config, items):
    """In a worker: every subject property item joins the ``xdist_group`` of its variant, before
    any other implementation runs (pytest-xdist's own reads the marks to name the groups)."""
    if is_worker(config):
        from properties.progress_plugin import variant_of

        if config.workerinput.get(DIST_KEY) == "loadgroup":
            config.option.loadgroup = True
        for item in items:
            variant = variant_of(item)
            if variant is not None:
                item.add_marker(pytest.mark.xdist_group(variant.test_id))
    return (yield)


def pytest_sessionfinish(session):
    config = session.config
    progress = config.pluginmanager.get_plugin("nvfp4-progress")
    if is_worker(config) and progress is not None:
        config.workeroutput[TALLIES_KEY] = progress.tally_records()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    progress = node.config.pluginmanager.get_plugin("nvfp4-progress")
    output = getattr(node, "workeroutput", None) or {}
    if progress is None or TALLIES_KEY not in output:
        return
    label = gpu_pool.worker_label(node.gateway.id, node.workerinput.get(GPU_KEY))
    progress.add_worker_tallies(label, output[TALLIES_KEY])


def plain_nodeid(item) -> str:
    """The item's node id as ``pytest NODEID`` takes it: without the ``@group`` suffix that
    pytest-xdist's loadgroup appends in a worker."""
    nodeid = item.nodeid
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")})
    suffix = "@" + "_".join(names)
    return nodeid[: -len(suffix)] if names and nodeid.endswith(suffix) else nodeid
