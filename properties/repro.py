"""Replay one example: ``python -m properties.repro --subject=S [--variant=L] --sizes=... --seed=N
--distribution=D --layout=L [--isolate=auto|always|never] [--timeout=S]``. Prints PASS, or the failure
report, and exits non-zero on failure. ``--isolate`` (default: GPU subjects) runs the example in a
worker process (properties.isolation), so a fault or a hang is reported rather than fatal;
``--isolate=never`` runs it in this process (for a debugger or compute-sanitizer)."""

from __future__ import annotations

import argparse
import ast
import sys

from properties import isolation
from properties.checks import SubjectCheckFailed, check_example, install_runner
from properties.strategies import Example
from properties.subjects import resolve_subject


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subject", default="auto")
    parser.add_argument("--variant", default=None, help="variant label (default: every declared variant)")
    parser.add_argument("--sizes", required=True, help="list of [m, n, k, l]")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--distribution", default="uniform")
    parser.add_argument("--layout", default="separate")
    parser.add_argument("--isolate", choices=isolation.MODES, default=None,
                        help="run in a worker process: auto (GPU subjects, the default), always, never")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds the isolated example may take, JIT compiles included")
    args = parser.parse_args(argv)
    install_runner(isolation.IsolatingRunner(isolation.settings_from_env(
        mode=args.isolate, timeout_s=args.timeout, first_example_extra_s=None if args.timeout is None else 0.0)))

    sizes = tuple(tuple(int(x) for x in s) for s in ast.literal_eval(args.sizes))
    example = Example(sizes, args.seed, args.distribution, args.layout)
    variants = [v for v in resolve_subject(args.subject, "production" if args.variant is None else "all")
                if args.variant in (None, v.label)]
    if not variants:
        print(f"no variant {args.variant!r} in subject {args.subject}", file=sys.stderr)
        return 2
    status = 0
    for variant in variants:
        if variant.skip_reason:
            print(f"SKIP {variant.test_id}: {variant.skip_reason}")
            continue
        try:
            check_example(variant, example)
            print(f"PASS {variant.test_id}")
        except SubjectCheckFailed as exc:
            print(f"FAIL {exc}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
