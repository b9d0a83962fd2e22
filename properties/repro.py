"""Replay one example: ``python -m properties.repro --subject=S [--variant=L] --sizes=... --seed=N
--distribution=D --layout=L [--isolate=auto|always|never] [--timeout=S]``. Prints PASS, or the failure
report, and exits non-zero on failure, and also when nothing ran (every variant skipped on this
machine: exit 3). Usage mistakes (unknown subject or variant, a --sizes that is not a list of
[m, n, k, l]) print one line with the fix and exit 2. ``--list-variants`` prints every variant. ``--isolate`` (default: GPU subjects) runs the example in a
worker process (properties.isolation), so a fault or a hang is reported rather than fatal;
``--isolate=never`` runs it in this process (for a debugger or compute-sanitizer). ``--timeout``
is the isolated example's run-phase limit, from its launch, ``--compile-timeout`` its compile
phase's."""

from __future__ import annotations

import argparse
import ast
import sys

from properties import isolation
from properties.checks import SubjectCheckFailed, check_example, install_runner
from properties.strategies import Example
from properties.subjects import resolve_subject
from properties.usage import UsageMistake, check_selection, variant_lines

EXIT_FAILED, EXIT_USAGE, EXIT_NOTHING_RAN = 1, 2, 3


def _usage_error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _parse_sizes(text: str) -> tuple[tuple[int, ...], ...]:
    try:
        sizes = tuple(tuple(int(x) for x in s) for s in ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError):
        raise UsageMistake(f"--sizes={text!r} is not a list of [m, n, k, l]: write e.g. --sizes='[[129, 64, 256, 1]]'") from None
    if not sizes or any(len(s) != 4 for s in sizes):
        raise UsageMistake(f"--sizes={text!r}: every group is [m, n, k, l] and there is at least one")
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subject", default="auto")
    parser.add_argument("--variant", default=None, help="variant label (default: every declared variant)")
    parser.add_argument("--sizes", help="list of [m, n, k, l]")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--distribution", default="uniform")
    parser.add_argument("--layout", default="separate")
    parser.add_argument("--isolate", choices=isolation.MODES, default=None,
                        help="run in a worker process: auto (GPU subjects, the default), always, never")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds the isolated example may run after its launch (JIT compiles not included)")
    parser.add_argument("--compile-timeout", type=float, default=None,
                        help="seconds the isolated example's compile phase may take (CUDA context, JIT compiles)")
    parser.add_argument("--list-variants", action="store_true", help="print every variant and exit")
    args = parser.parse_args(argv)
    if args.list_variants:
        print("\n".join(variant_lines()))
        return 0
    if args.sizes is None or args.seed is None:
        return _usage_error("--sizes and --seed are required: paste the whole 'reproduce:' line of the failure")
    try:
        check_selection(args.subject, [] if args.variant is None else [args.variant])
        sizes = _parse_sizes(args.sizes)
    except UsageMistake as exc:
        return _usage_error(str(exc))
    install_runner(isolation.IsolatingRunner(isolation.settings_from_env(
        mode=args.isolate, timeout_s=args.timeout, compile_timeout_s=args.compile_timeout)))

    example = Example(sizes, args.seed, args.distribution, args.layout)
    variants = [v for v in resolve_subject(args.subject, "production" if args.variant is None else "all")
                if args.variant in (None, v.label)]
    runnable = [v for v in variants if not v.skip_reason]
    if not runnable:
        reasons = sorted({v.skip_reason for v in variants})
        print(f"error: nothing ran: no variant of {args.subject} can run here ({'; '.join(reasons)})", file=sys.stderr)
        return EXIT_NOTHING_RAN
    status = 0
    for variant in runnable:
        try:
            check_example(variant, example)
            print(f"PASS {variant.test_id}")
        except SubjectCheckFailed as exc:
            print(f"FAIL {exc}")
            status = EXIT_FAILED
    skipped = len(variants) - len(runnable)
    if skipped:
        print(f"({skipped} variant(s) of {args.subject} cannot run on this machine and were not checked)")
    return status


if __name__ == "__main__":
    sys.exit(main())
