"""The optional native probe of the host fast path: :func:`kernel.fast_path.FastPath.probe`'s walk
over the problem in one C++ pass (``kernel/native/fast_probe.cpp``), and the same module's
helpers for a first call on new tensors of seen shapes (:data:`SEEN_TABLES`: the seen-shape
path's address checks and table block in one pass, see
:meth:`kernel.host_pipeline.HostPipeline.seen_tables`; :data:`SIZES_KEY`; :data:`REFS`;
:data:`METADATA`: :func:`kernel.fast_path.metadata`'s bytes).

``probe(data, config)`` returns ``(key, versions, tensors)``: the very bytes
:func:`kernel.fast_path.identity_key` returns for ``data``, the sum of the tensors' version
counters (read with the C++ API) and ``flatten(data)``; or None for anything but the plain
problem shape (lists/tuples of lists/tuples of exact tensors, size tuples, readable version
counters), and then the Python probe decides. Same key, same sum, same dictionary: the
decisions are the Python probe's by construction (properties/test_native_probe_properties.py
checks it on random structures and mutations).

It is built with torch's own extension mechanism (``torch.utils.cpp_extension.load``; a C++
compiler and torch's headers, no CUDA) and cached on disk, keyed by the source, the torch and
the Python version: ``$NVFP4_NATIVE_CACHE`` or ``~/.cache/nvfp4_harness/native``. Nothing waits
for it: :func:`start` (called by the first :class:`kernel.fast_path.FastPath`) loads the cached
module, or builds it in a child process, from a background thread; until it is ready, or when
the build fails (no compiler, no headers), the Python probe and the Python seen-shape path are
used. ``NVFP4_NATIVE_PROBE=0`` turns all of it off.

The seen-shape pass uploads its table block to a CUDA device with the CUDA driver's
``cuMemcpyHtoDAsync_v2`` from a reused pageable host buffer (why that is safe: the comment
"Upload" in ``fast_probe.cpp``), else with torch's copy from a fresh pinned buffer, as the
Python path does; ``NVFP4_DRIVER_COPY=0`` (read when the module loads) or :func:`driver_copy` ``(False)``
forces torch's copy. :func:`driver_copy` also says which is in use and counts them.

    python kernel/native_probe.py --build    # build (or find) it now; prints where and how long
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

ENV = "NVFP4_NATIVE_PROBE"
DRIVER_COPY_ENV = "NVFP4_DRIVER_COPY"
CACHE_ENV = "NVFP4_NATIVE_CACHE"
SOURCE = Path(__file__).resolve().parent / "native" / "fast_probe.cpp"
CFLAGS = ["-O2"]
FAILURE_RETRY_S = 3600

# the probe function once loaded, else None; read by FastPath.probe on every call
PROBE: Callable[[Any, Any], Any] | None = None
# the module's other helpers once loaded (None before, or where the loaded module lacks them):
# the seen-shape first call's pass (kernel.host_pipeline.HostPipeline._prepare_seen), the shape
# template key (kernel.seen_shapes.ShapeTemplates.find), the fast-path entry's weak references
# (kernel.fast_path.FastPath.store) and its metadata (kernel.fast_path.FastPath.metadata); each
# returns None where the Python code must decide
SEEN_STATE: Callable[..., Any] | None = None
SEEN_TABLES: Callable[[Any, Any, Any], Any] | None = None
SIZES_KEY: Callable[[Any], Any] | None = None
REFS: Callable[[Any, Any], Any] | None = None
METADATA: Callable[[Any], Any] | None = None
_module: Any = None  # the loaded module (driver_copy)

_lock = threading.Lock()
_load_lock = threading.Lock()  # one load at a time (a background start and a test's load())
_state = {"status": "not started", "thread": None, "seconds": None}


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def driver_copy_enabled() -> bool:
    """``NVFP4_DRIVER_COPY``: the seen-shape upload by the driver's copy (default), or torch's (0)."""
    return os.environ.get(DRIVER_COPY_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def driver_copy(on: bool | None = None, *, resolve: bool = False) -> dict | None:
    """The seen-shape pass's upload to a CUDA device: with ``on`` given, the driver copy on or off
    for this process (``NVFP4_DRIVER_COPY`` set it at load); returns the module's state (``enabled``,
    ``resolved``: None before the first CUDA upload tried libcuda, ``reason`` when unavailable or
    turned off, ``failed``: the CUresult that turned it off, counts of ``driver_copies``,
    ``torch_copies``, ``no_context`` (not the device's context current) and ``capturing`` (a stream
    under CUDA-graph capture: torch's copy)), or None without a loaded module that has it (an older
    build: torch's copy). ``resolve=True`` resolves libcuda now."""
    module = _module
    if module is None or not hasattr(module, "upload_status"):
        return None
    if on is not None:
        module.set_driver_copy(bool(on))
    return module.upload_status(resolve)


def _torch_version() -> str:
    import torch

    return torch.__version__


def module_name() -> str:
    """The extension's name: the source, the flags, torch's and Python's versions in a hash
    (another torch on the same machine builds its own)."""
    h = hashlib.sha256()
    h.update(SOURCE.read_bytes())
    h.update(repr((CFLAGS, _torch_version(), sys.version, sys.platform)).encode())
    return "nvfp4_fast_probe_" + h.hexdigest()[:16]


def cache_dir() -> Path:
    root = os.environ.get(CACHE_ENV)
    return Path(root) if root else Path.home() / ".cache" / "nvfp4_harness" / "native"


def library_path(name: str | None = None) -> Path:
    name = name or module_name()
    return cache_dir() / (name + ".so")  # the name torch's build gives it


def _import(path: Path, name: str):
    import torch  # noqa: F401  (the library resolves torch's symbols from the loaded torch)

    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def build(verbose: bool = False) -> Path:
    """Compile the extension into the cache (unless it is there) and return the library's path.
    Blocking; one build at a time per cache (a file lock); the library appears atomically, so a
    build killed half way leaves nothing a later process would load."""
    import fcntl

    name = module_name()
    target = library_path(name)
    if target.exists():
        return target
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released by the OS if this process dies
        if target.exists():  # another process built it meanwhile
            return target
        for stale in root.glob("build-*"):  # left by a killed build (we hold the lock)
            shutil.rmtree(stale, ignore_errors=True)
        work = root / f"build-{os.getpid()}"
        work.mkdir()
        try:
            from torch.utils import cpp_extension

            if cpp_extension.is_ninja_available() and os.environ.get("NVFP4_NATIVE_NO_NINJA") != "1":
                cpp_extension.load(name=name, sources=[str(SOURCE)], extra_cflags=CFLAGS, build_directory=str(work),
                                   verbose=verbose, is_python_module=True)
            else:  # torch's JIT build needs ninja; one compiler command needs only the compiler
                _build_without_ninja(name, work, verbose)
            built = work / (name + ".so")
            if not built.exists():
                raise RuntimeError(f"the build left no {built.name}")
            os.replace(built, target)
            _failure_marker(name).unlink(missing_ok=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


def _build_without_ninja(name: str, work: Path, verbose: bool) -> None:
    """One ``c++`` command with the include and library paths of torch's extension mechanism
    (``cpp_extension.include_paths``/``library_paths``), for a machine without ninja."""
    import sysconfig

    import torch
    from torch.utils import cpp_extension

    compiler = os.environ.get("CXX", "c++")
    abi = getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", None)
    flags = [f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H", "-fPIC", "-shared", *CFLAGS]
    if abi is not None:
        flags.append(f"-D_GLIBCXX_USE_CXX11_ABI={int(abi)}")
    includes = [f"-isystem{p}" for p in (*cpp_extension.include_paths(), sysconfig.get_paths()["include"])]
    libs = [f"-L{p}" for p in cpp_extension.library_paths()] + ["-lc10", "-ltorch_cpu", "-ltorch", "-ltorch_python"]
    errors = []
    for std in ("-std=c++20", "-std=c++17"):
        cmd = [compiler, std, *flags, *includes, str(SOURCE), "-o", str(work / (name + ".so")), *libs]
        if verbose:
            print(" ".join(cmd), file=sys.stderr)
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if proc.returncode == 0:
            return
        errors.append((proc.stderr or proc.stdout).strip())
    raise RuntimeError(f"{compiler} failed: {errors[-1][-2000:]}")


def load(*, build_if_missing: bool = True, verbose: bool = False, force: bool = False) -> Callable | None:
    """Load the probe now (building it first if asked and needed), blocking; returns it, or None
    (then :func:`describe` says why). Sets :data:`PROBE`. A failure is not retried in this
    process unless ``force``."""
    if not enabled():
        _state["status"] = f"disabled ({ENV}=0)"
        return None
    with _load_lock:
        if PROBE is not None or (_state.get("failed") and not force):
            return PROBE
        return _load(build_if_missing, verbose)


def _failure_marker(name: str | None = None) -> Path:
    return cache_dir() / ((name or module_name()) + ".failed")


def _mark_failed(reason: str) -> None:
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        _failure_marker().write_text(reason + "\n")
    except OSError:
        pass


def _recent_failure() -> str | None:
    """The reason of a build of this very source that failed in the last hour (any process):
    background starts do not retry it (an explicit build does)."""
    try:
        marker = _failure_marker()
        if time.time() - marker.stat().st_mtime < FAILURE_RETRY_S:
            return marker.read_text().strip()
    except OSError:
        pass
    return None


def build_native(verbose: bool = True) -> bool:
    """Build (unless cached) and load the native probe now, blocking, with a line on stderr;
    True when :class:`kernel.fast_path.FastPath` now probes natively."""
    if not enabled():
        print(f"kernel.fast_path: native probe disabled ({ENV}=0)", file=sys.stderr, flush=True)
        return False
    if PROBE is None and verbose and not library_path().exists():
        print(f"kernel.fast_path: building the native probe into {cache_dir()} (torch cpp_extension, "
              f"about 20 s on 2 cores)", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    fn = load(force=True)
    if verbose:
        print(f"kernel.fast_path: {describe()} probe ({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
    return fn is not None


def _load(build_if_missing: bool, verbose: bool) -> Callable | None:
    global PROBE, SEEN_STATE, SEEN_TABLES, SIZES_KEY, REFS, METADATA, _module
    t0 = time.perf_counter()
    try:
        name = module_name()
        path = library_path(name)
        if not path.exists():
            if not build_if_missing:
                _state["status"] = "not built"
                return None
            build(verbose=verbose)
        module = _import(path, name)
        fn = module.probe
    except Exception as err:  # no compiler, no headers, a broken cache: the Python probe stays
        last = (str(err).strip().splitlines() or [""])[-1]
        _state["status"] = f"build failed: {type(err).__name__}: {last}"
        _state["failed"] = True
        _mark_failed(_state["status"])
        return None
    _state["seconds"] = time.perf_counter() - t0
    _state["status"] = "ready"
    SEEN_STATE, SEEN_TABLES = getattr(module, "seen_state", None), getattr(module, "seen_tables", None)
    if SEEN_STATE is None or SEEN_TABLES is None:
        SEEN_STATE = SEEN_TABLES = None
    SIZES_KEY, REFS = getattr(module, "sizes_key", None), getattr(module, "refs", None)
    METADATA = getattr(module, "metadata", None)
    if hasattr(module, "set_driver_copy"):
        module.set_driver_copy(driver_copy_enabled())
    _module = module
    PROBE = fn
    return fn


def _background() -> None:
    try:
        name = module_name()
        path = library_path(name)
        if not path.exists():
            failed = _recent_failure()
            if failed is not None:
                _state["status"] = f"{failed} (an earlier build; kernel.fast_path.build_native() retries)"
                _state["failed"] = True
                return
            # a child process builds it: no GIL shared with the caller's first calls, and a
            # build that outlives this process still lands in the cache
            print(f"kernel.fast_path: building the native probe in the background into {cache_dir()} "
                  f"(torch cpp_extension; the Python probe is used until it is ready)", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--build", "--quiet"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
            if proc.returncode != 0 or not path.exists():
                tail = (proc.stdout or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
                _state["status"] = f"build failed: {tail[0]}"
                _state["failed"] = True
                _mark_failed(_state["status"])
                print(f"kernel.fast_path: native probe build failed ({tail[0]}); the Python probe stays",
                      file=sys.stderr, flush=True)
                return
            print(f"kernel.fast_path: native probe built in {time.perf_counter() - t0:.0f} s", file=sys.stderr,
                  flush=True)
        load(build_if_missing=False)
    except Exception as err:
        _state["status"] = f"build failed: {type(err).__name__}: {err}"


def start() -> None:
    """Load (or build, then load) the probe in a background thread, once per process; nothing
    when disabled or already started."""
    if PROBE is not None or not enabled():
        return
    with _lock:
        if _state["thread"] is not None:
            return
        _state["status"] = "loading"
        thread = threading.Thread(target=_background, name="nvfp4-native-probe", daemon=True)
        _state["thread"] = thread
        thread.start()


def wait(timeout: float | None = None) -> Callable | None:
    """Wait for a background :func:`start` (tests, profiling); returns :data:`PROBE`."""
    thread = _state["thread"]
    if thread is not None:
        thread.join(timeout)
    return PROBE


def describe() -> str:
    """Which probe :class:`kernel.fast_path.FastPath` uses now, in words."""
    if PROBE is not None:
        return "native"
    if not enabled():
        return f"python (native disabled: {ENV}=0)"
    return f"python (native {_state['status']})"


def _main(argv: list[str]) -> int:
    quiet = "--quiet" in argv
    if "--build" not in argv:
        print(__doc__)
        return 2
    t0 = time.perf_counter()
    try:
        path = build(verbose=not quiet)
    except Exception as err:
        last = (str(err).strip().splitlines() or [""])[-1]
        print(f"{type(err).__name__}: {last}", file=sys.stderr)
        return 1
    print(f"native probe: {path} ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
