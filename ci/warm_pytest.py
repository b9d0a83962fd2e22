"""Warm interpreters for ``ci.mutation_runner``'s CPU runs: one fork per pytest run.

A mutant run is ``python -m pytest ...`` in a fresh copy of the repository. Most of a short run is
the interpreter's start: torch, numpy, Hypothesis and pytest imported (about 2 s of a 3.5 s run
on 2 cores). :class:`WarmPytest` starts this file as a script (not as ``ci.warm_pytest``: no
module of the project may be imported before the fork) once; the script imports those
third-party packages and nothing of the project, then forks one child per request. The child
does what a fresh ``python -m pytest`` in the copy would: it enters the copy, takes the run's
environment, puts the copy first on ``sys.path`` (so ``kernel``, ``oracle``, ``properties``,
``ci`` and ``conftest.py`` are the copy's, mutated), writes its output to two files and leaves
with pytest's exit status. Each child leads its own process group, so a run past its time limit
is killed with everything it started.

Protocol (JSON lines): requests on the script's stdin ``{"id", "args", "cwd", "env", "stdout",
"stderr"}``; answers on its stdout ``{"id", "pid"}`` once forked and ``{"id", "rc"}`` once the
child exited (``rc``: its exit status, or minus the signal that ended it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

# what the children would otherwise import each (third-party only: never the project)
PRELOAD = ("torch", "numpy", "hypothesis", "pytest", "_pytest.python", "_pytest.fixtures")


class WarmPytest:
    """The client: ``run(args, cwd, env, timeout)`` -> (exit status, stdout, stderr, timed out)."""

    def __init__(self, env: dict[str, str] | None = None):
        script = Path(__file__).resolve()
        clean = dict(env if env is not None else os.environ)
        clean.pop("PYTHONPATH", None)  # the server imports nothing of the project
        self._proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      cwd=str(script.parent.parent), env=clean, text=True, bufsize=1)
        self._lock = threading.Lock()
        self._cv = threading.Condition()
        self._answers: dict[int, dict] = {}
        self._next = 0
        ready = self._proc.stdout.readline()
        if json.loads(ready or "{}").get("ready") is not True:
            raise RuntimeError(f"ci.warm_pytest did not start: {ready!r}")
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._proc.stdout:
            msg = json.loads(line)
            with self._cv:
                self._answers.setdefault(msg["id"], {}).update(msg)
                self._cv.notify_all()
        with self._cv:  # the server is gone: every open request ends
            self._answers.setdefault(-1, {})["gone"] = True
            self._cv.notify_all()

    def _wait(self, rid: int, key: str, timeout: float | None) -> dict | None:
        """The answers to request ``rid`` once they hold ``key``; None after ``timeout`` s."""
        with self._cv:
            self._cv.wait_for(lambda: key in self._answers.get(rid, {}) or -1 in self._answers, timeout)
            if key in self._answers.get(rid, {}):
                return self._answers[rid]
            if -1 in self._answers:
                raise RuntimeError("ci.warm_pytest exited")
            return None

    def run(self, args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str, str]:
        """pytest ``args`` in ``cwd`` with ``env``: (exit status or None when killed at ``timeout``,
        stdout, stderr)."""
        with self._lock:
            rid = self._next
            self._next += 1
            out, err = Path(cwd) / ".warm-stdout", Path(cwd) / ".warm-stderr"
            self._proc.stdin.write(json.dumps({"id": rid, "args": list(args), "cwd": str(cwd), "env": dict(env),
                                               "stdout": str(out), "stderr": str(err)}) + "\n")
            self._proc.stdin.flush()
        pid = self._wait(rid, "pid", 60)["pid"]
        done = self._wait(rid, "rc", timeout)
        if done is None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._wait(rid, "rc", 60)
        text = [p.read_text(errors="replace") if p.exists() else "" for p in (out, err)]
        for p in (out, err):
            p.unlink(missing_ok=True)
        return (None if done is None else done["rc"]), text[0], text[1]

    def close(self) -> None:
        try:
            self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def _child(req: dict) -> None:
    """In the forked child: become ``python -m pytest ARGS`` run in ``req["cwd"]``."""
    os.setsid()
    out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in (out, err, null):
        os.close(fd)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    code = 1
    try:
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        extra = [p for p in req["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        # python -m puts the working directory first, then PYTHONPATH
        sys.path[:0] = [req["cwd"], *extra]
        sys.dont_write_bytecode = bool(req["env"].get("PYTHONDONTWRITEBYTECODE"))
        sys.argv = [sys.executable, *req["args"]]
        import importlib

        importlib.invalidate_caches()
        import pytest

        code = int(pytest.main(list(req["args"])))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported on the run's stderr, like an interpreter would
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _serve() -> None:
    import importlib
    import selectors

    # the script's own folder (ci/) is not a place to import from in the children
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != here]
    for name in PRELOAD:
        importlib.import_module(name)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("kernel", "oracle", "properties", "ci", "profiling",
                                                                   "conftest"))
    if leaked:
        raise SystemExit(f"ci.warm_pytest: project modules imported before the fork: {leaked}")
    reply = sys.stdout
    reply.write(json.dumps({"ready": True}) + "\n")
    reply.flush()
    running: dict[int, int] = {}  # pid -> request id
    sel = selectors.DefaultSelector()
    sel.register(sys.stdin, selectors.EVENT_READ)
    open_input = True
    while open_input or running:
        if open_input and sel.select(timeout=0.02):
            line = sys.stdin.readline()
            if not line:
                open_input = False
                sel.unregister(sys.stdin)
            else:
                req = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    _child(req)
                running[pid] = req["id"]
                reply.write(json.dumps({"id": req["id"], "pid": pid}) + "\n")
                reply.flush()
        elif not open_input:
            time.sleep(0.02)
        while running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            rid = running.pop(pid, None)
            if rid is not None:
                rc = os.waitstatus_to_exitcode(status)
                reply.write(json.dumps({"id": rid, "rc": rc}) + "\n")
                reply.flush()


if __name__ == "__main__":
    _serve()
