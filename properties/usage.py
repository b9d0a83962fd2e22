"""Command-line usage of the property suite: check --subject/--variant up front, list variants.

Everything here turns a usage mistake into one line that says what is wrong and how to fix it
(conftest.py raises it as ``pytest.UsageError``; ``python -m properties.repro`` prints it).
"""

from __future__ import annotations

from kernel.errors import PicklableError
import dataclasses

from kernel.family import FAMILIES, missing_dependency


class UsageMistake(PicklableError, ValueError):
    """A --subject / --variant value that names nothing; the message is one line with the fix."""


def check_selection(subject: str, variants: list[str]) -> None:
    """Raise UsageMistake when ``subject`` names no subject or a ``variants`` label is not declared."""
    from properties.subjects import UnknownSubjectError, resolve_subject

    try:
        resolved = resolve_subject(subject, "all")  # --variant=LABEL may name an experimental variant
    except UnknownSubjectError as exc:
        raise UsageMistake(str(exc)) from None
    labels = [v.label for v in resolved]
    unknown = [v for v in variants if v not in labels]
    if unknown:
        raise UsageMistake(
            f"subject {subject} has no variant {', '.join(map(repr, unknown))}; valid labels: "
            f"{', '.join(labels)} (--list-variants describes them)"
        )


def _describe(config, default) -> str:
    """One line: the config's own describe() if it has one, else its fields that differ from the default."""
    if hasattr(config, "describe"):
        text = config.describe()
        return text.split(": ", 1)[1] if text.startswith(config.label + ": ") else text
    if dataclasses.is_dataclass(config) and dataclasses.is_dataclass(default):
        changed = [
            f"{f.name}={getattr(config, f.name)!r}"
            for f in dataclasses.fields(config)
            if getattr(config, f.name) != getattr(default, f.name)
        ]
        return "the default config" if not changed else "default config with " + ", ".join(changed)
    return repr(config)


def variant_lines() -> list[str]:
    """One line per declared variant of every subject: subject, label, production or experimental, what it is."""
    from kernel import model

    lines = [f"model  {c.label}  [cpu model]  {_describe(c, model.DEFAULT_CONFIG)}" for c in model.DECLARED_VARIANTS]
    for family in FAMILIES.values():
        try:
            production, experimental = family.production_variants, family.experimental_variants
            default = family.default_config
        except ImportError as exc:
            if not missing_dependency(exc):
                raise
            lines.append(f"{family.name}  (not importable here: {exc})")
            continue
        for scope, configs in (("production", production), ("experimental", experimental)):
            lines += [f"{family.name}  {c.label}  [{scope}]  {_describe(c, default)}" for c in configs]
    return lines
