"""Turn Nsight Compute results into one CSV, a markdown summary and one multi-panel PNG.

Pure parts of the sweep (no ncu, no GPU; pandas only where nsight-python hands a DataFrame,
matplotlib only for the plot), tested on small recorded inputs in ``profiling/tests/data``:

* :func:`rows_from_nsight` reads nsight-python's processed DataFrame (long: one row per
  metric); :func:`rows_from_actions` reads the per-kernel records of the direct-ncu fallback
  (from ``ncu_report`` or from :func:`parse_raw_csv`, ncu's ``--csv --page raw`` export);
* :func:`build_table` adds the config axes, floors, derived figures, the static-report columns
  (:func:`load_static`) and marks the fastest variant per shape;
* :func:`write_outputs` writes ``ncu_metrics.csv``, ``summary.md``, ``ncu_panels.png`` and
  ``sweep.json``: at most 8 plain files, names of ``[A-Za-z0-9._-]``, as the device tool needs.

Not to be confused with Nsight Compute's own ``ncu_report`` Python module: this one is
``profiling.ncu_report`` and is never imported as a top-level name.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from profiling import metrics as M

CSV_NAME = "ncu_metrics.csv"
SUMMARY_NAME = "summary.md"
PLOT_NAME = "ncu_panels.png"
META_NAME = "sweep.json"
MAX_OUTPUT_FILES = 8
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
_SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
RANGE_NAME = re.compile(r"cfg(\d+)r(\d+)")

# Column order of the CSV (the rest follow alphabetically).
LEAD_COLUMNS = (
    "shape", "variant", "best", "status", "kernel", "gpu",
    "duration_us", "tflops", "floor_us", "time_over_floor", "floor_source",
    "tensor_active_pct", "tensor_elapsed_pct", "tmem_active_pct", "dram_pct", "dram_gbps",
    "l2_hit_pct", "lsu_pipe_pct", "smem_conflict_pct", "occupancy_achieved_pct", "occupancy_theoretical_pct",
    "occupancy_ratio", "regs_per_thread", "top_stalls",
)
# Panels of the PNG: (column, title); a column with no finite value is left out.
PANELS = (
    ("duration_us", "duration under ncu (us)"),
    ("tflops", "TFLOP/s"),
    ("time_over_floor", "time / floor"),
    ("tensor_active_pct", "tensor pipe active (%)"),
    ("dram_pct", "DRAM throughput (% peak)"),
    ("l2_hit_pct", "L2 hit rate (%)"),
    ("lsu_pipe_pct", "L1 data pipe, LSU wavefronts (% peak)"),
    ("smem_conflict_pct", "smem bank conflicts (% wavefronts)"),
    ("occupancy_achieved_pct", "achieved occupancy (%)"),
    ("regs_per_thread", "registers / thread"),
)


def _num(x: Any) -> float:
    if isinstance(x, str):
        x = x.strip().replace(",", "")
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# ---- inputs: nsight-python -----------------------------------------------------------------
def rows_from_nsight(df, arch: str) -> list[dict]:
    """nsight-python's processed DataFrame -> one dict per (variant, shape).

    Columns used: ``variant``, ``shape`` (the profiled function's arguments), ``Metric``,
    ``AvgValue``, ``Kernel``, ``GPU``, ``NumRuns``. Metric names become report columns.
    """
    keys = M.key_of(arch)
    rows: dict[tuple[str, str], dict] = {}
    records = df.to_dict("records") if hasattr(df, "to_dict") else list(df)
    for rec in records:
        ident = (str(rec["variant"]), str(rec["shape"]))
        row = rows.setdefault(ident, {"variant": ident[0], "shape": ident[1]})
        row.setdefault("kernel", str(rec.get("Kernel", "")))
        row.setdefault("gpu", str(rec.get("GPU", "")))
        runs = _num(rec.get("NumRuns", 1))
        row.setdefault("runs", int(runs) if math.isfinite(runs) else 1)
        name = str(rec["Metric"])
        row[keys.get(name, name)] = _num(rec.get("AvgValue"))
    return list(rows.values())


# ---- inputs: the direct-ncu fallback ---------------------------------------------------------
def parse_raw_csv(text: str) -> list[dict]:
    """ncu ``--csv --page raw`` output -> one dict per profiled kernel.

    The first row names the columns, the second gives units (skipped when it holds no ID);
    ncu's own ``==PROF==`` lines and anything before the header are ignored. Values stay
    strings except the metric columns, which become floats (NaN for ``n/a``).
    """
    lines = [l for l in text.splitlines() if l.startswith('"')]
    if not lines:
        return []
    reader = list(csv.reader(io.StringIO("\n".join(lines))))
    header, body = reader[0], reader[1:]
    if body and not body[0][0].strip().isdigit():
        body = body[1:]  # units row
    info = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
            "Block Size", "Grid Size", "Device", "CC", "Section Name", "Kernel Time", "Estimated Speedup"}
    out = []
    for values in body:
        rec = dict(zip(header, values))
        metrics = {k: _num(v) for k, v in rec.items() if k not in info and "__" in k}
        out.append({"id": int(_num(rec.get("ID", len(out)))), "kernel": rec.get("Kernel Name", ""),
                    "gpu": rec.get("Device", ""), "range": _range_of(rec.get("Kernel Name", "")),
                    "metrics": metrics})
    return out


def _range_of(name: str) -> str | None:
    m = RANGE_NAME.search(name or "")
    return m.group(0) if m else None


def assign_ranges_by_order(actions: list[dict], expected: Sequence[str]) -> list[dict]:
    """Give range names to kernels in launch order when ncu did not rename them.

    Only possible when every range holds exactly one kernel; otherwise raises ValueError.
    """
    if all(a.get("range") for a in actions):
        return actions
    if len(actions) != len(expected):
        raise ValueError(
            f"{len(actions)} profiled kernels for {len(expected)} ranges and no NVTX names: "
            "cannot tell which kernel belongs to which variant")
    ordered = sorted(actions, key=lambda a: a["id"])
    return [{**a, "range": r} for a, r in zip(ordered, expected)]


def rows_from_actions(actions: Iterable[Mapping], cases: Sequence[tuple[str, str]], arch: str) -> list[dict]:
    """Per-kernel records {range: 'cfg<i>r<run>', kernel, gpu, metrics} -> one dict per case.

    Within one range the kernel with the longest duration is the GEMM (a range may also hold
    small helper kernels); runs of one case are averaged.
    """
    keys = M.key_of(arch)
    per_range: dict[str, Mapping] = {}
    for a in actions:
        r = a.get("range")
        if not r or not RANGE_NAME.fullmatch(r):
            continue
        d = _num(a["metrics"].get(M.DURATION))
        prev = per_range.get(r)
        if prev is None or d > _num(prev["metrics"].get(M.DURATION)):
            per_range[r] = a
    per_case: dict[int, list[Mapping]] = defaultdict(list)
    for r, a in per_range.items():
        idx = int(RANGE_NAME.fullmatch(r).group(1))
        per_case[idx].append(a)
    rows = []
    for idx, (variant, shape) in enumerate(cases):
        runs = per_case.get(idx, [])
        row: dict = {"variant": variant, "shape": shape, "runs": len(runs)}
        if runs:
            row["kernel"] = runs[0].get("kernel", "")
            row["gpu"] = runs[0].get("gpu", "")
            names = sorted({n for a in runs for n in a["metrics"]})
            for n in names:
                vals = [_num(a["metrics"].get(n)) for a in runs]
                vals = [v for v in vals if not math.isnan(v)]
                row[keys.get(n, n)] = sum(vals) / len(vals) if vals else math.nan
        rows.append(row)
    return rows


# ---- static report ---------------------------------------------------------------------------
_STATIC_SKIP = ("opcodes", "spans", "cubin", "function")  # bulky or machine-local fields


def _flatten(d: Mapping, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if not prefix and k in _STATIC_SKIP:
            continue
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        elif isinstance(v, (int, float, str, bool)) or v is None:
            out[key] = v
    return out


def load_static(source: str | Path | Mapping | list | None) -> dict[str, dict]:
    """``python -m profiling.static_report --json`` output -> {variant label: flat fields}.

    That report is ``{"variants": [row, ...], "families": {...}}``, a row holding ``label``,
    ``registers``, ``stack_bytes``, ``shared_bytes``, ``spill_stores``/``spill_loads``,
    ``instructions``, the census counts (``mma_hgmma``, ``tma_load``, ...) and bulky fields
    (``opcodes``, ``spans``, ``cubin``) that are left out here. Also accepted: a bare list of
    rows, or a dict keyed by label. Nested dicts are flattened with dots. Unreadable gives {}.
    """
    if source is None:
        return {}
    if isinstance(source, (str, Path)):
        try:
            source = json.loads(Path(source).read_text())
        except (OSError, ValueError):
            return {}
    records: list = []
    if isinstance(source, list):
        records = source
    elif isinstance(source, Mapping):
        for key in ("variants", "rows", "results"):
            if isinstance(source.get(key), list):
                records = source[key]
                break
        else:
            if source and all(isinstance(v, Mapping) for v in source.values()):
                records = [{"label": k, **v} for k, v in source.items()]
    out = {}
    for rec in records:
        if not isinstance(rec, Mapping) or not rec.get("label"):
            continue
        flat = _flatten(rec)
        out[str(flat.pop("label"))] = flat
    return out


# Summary columns from static-report fields (first field present wins; spills add up).
_STATIC_PICK = (
    ("st_regs", ("registers",)),
    ("st_stack", ("stack_bytes",)),
    ("st_spills", ("spill_stores", "spill_loads")),
    ("st_smem", ("shared_bytes",)),
)
# Census counts shown in the summary's SASS column, with the opcode they count.
_STATIC_CENSUS = (
    ("mma_hgmma", "HGMMA"), ("mma_tcgen05", "UTCMMA"), ("tma_load", "UTMALDG"),
    ("mbarrier_wait", "SYNCS.PHASECHK"), ("barrier_sync", "BAR"), ("shared_load", "LDS"),
    ("shared_store", "STS"), ("convert", "F2F/I2F"), ("global_store_128", "STG.128"),
    ("instructions", "all"),
)


def static_summary(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The static columns the summary shows: registers, stack, spill sites (STL+LDL), shared
    memory, and the SASS census as "OPCODE=count" (zero counts left out)."""
    out: dict[str, Any] = {}
    for col, keys in _STATIC_PICK:
        vals = [fields[k] for k in keys if _finite(fields.get(k))]
        if vals:
            out[col] = sum(vals) if col == "st_spills" else vals[0]
    census = [f"{name}={int(fields[k])}" for k, name in _STATIC_CENSUS if _finite(fields.get(k)) and fields[k]]
    if census:
        out["st_sass"] = " ".join(census)
    return out


# ---- the table -----------------------------------------------------------------------------
def build_table(rows: Sequence[Mapping], cases: Sequence[Mapping], static: Mapping[str, Mapping] | None = None) -> list[dict]:
    """One row per case, in case order: config axes, metrics, derived figures, static columns.

    ``cases``: dicts with ``variant``, ``shape``, ``flops``, ``floor_us``, ``floor_source``,
    ``axes`` (the config's fields) and ``status`` ("ok" or why not). A case ncu did not measure
    keeps its status and NaN metrics. ``best`` marks the shortest duration per shape.
    """
    static = static or {}
    by_id = {(r["variant"], r["shape"]): r for r in rows}
    table = []
    for case in cases:
        ident = (case["variant"], case["shape"])
        measured = by_id.get(ident)
        row: dict = {"shape": case["shape"], "variant": case["variant"], "best": False}
        status = case.get("status", "ok")
        if measured is None and status == "ok":
            status = "not measured"
        row["status"] = status
        for k, v in (case.get("axes") or {}).items():
            row[f"cfg_{k}"] = v
        if measured:
            row.update({k: v for k, v in measured.items() if k not in ("variant", "shape")})
        if status != "ok":  # a placeholder kernel ran in the range: its numbers mean nothing
            for k in list(row):
                if _finite(row[k]) and k not in ("runs",) and not k.startswith("cfg_"):
                    row[k] = math.nan
        row.update(M.derive(row, float(case.get("flops", 0)), float(case.get("floor_us", math.nan))))
        row["floor_source"] = case.get("floor_source", "")
        st = static.get(case["variant"])
        if st:
            row.update(static_summary(st))
            row.update({f"static.{k}": v for k, v in st.items()})
        table.append(row)
    mark_best(table)
    return table


def mark_best(table: list[dict]) -> None:
    by_shape: dict[str, list[dict]] = defaultdict(list)
    for row in table:
        row["best"] = False
        if row.get("status") == "ok" and _finite(row.get("duration_us")):
            by_shape[row["shape"]].append(row)
    for rows in by_shape.values():
        min(rows, key=lambda r: r["duration_us"])["best"] = True


def variant_geomeans(table: Sequence[Mapping]) -> list[dict]:
    """Per variant: geomean over shapes of time/floor and of duration; shapes measured."""
    shapes = sorted({r["shape"] for r in table})
    out = []
    for variant in dict.fromkeys(r["variant"] for r in table):
        rows = [r for r in table if r["variant"] == variant and r.get("status") == "ok"
                and _finite(r.get("duration_us"))]
        out.append({
            "variant": variant,
            "shapes": f"{len(rows)}/{len(shapes)}",
            "geomean_time_over_floor": M.geomean(r.get("time_over_floor", math.nan) for r in rows),
            "geomean_us": M.geomean(r["duration_us"] for r in rows),
            "wins": sum(1 for r in rows if r.get("best")),
            "complete": len(rows) == len(shapes),
        })
    complete = [g for g in out if g["complete"] and _finite(g["geomean_us"])]
    best = min(complete, key=lambda g: g["geomean_us"]) if complete else None
    for g in out:
        g["best"] = g is best
    return out


# ---- writers -------------------------------------------------------------------------------
def columns_of(table: Sequence[Mapping]) -> list[str]:
    present = dict.fromkeys(k for row in table for k in row)
    lead = [c for c in LEAD_COLUMNS if c in present]
    cfg = sorted(c for c in present if c.startswith("cfg_"))
    st = [c for c in ("st_regs", "st_stack", "st_spills", "st_smem", "st_sass") if c in present]
    rest = sorted(c for c in present if c not in lead and c not in cfg and c not in st)
    return lead + cfg + st + rest


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return repr(round(v, 6)) if abs(v) < 1e15 else f"{v:.6g}"
    return str(v)


def write_csv(table: Sequence[Mapping], path: str | Path) -> None:
    cols = columns_of(table)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for row in table:
            w.writerow([_cell(row.get(c)) for c in cols])


def _fmt(v: Any, digits: int = 1) -> str:
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, (int, float)):
        if isinstance(v, float) and math.isnan(v):
            return "–"
        if isinstance(v, int) or float(v).is_integer() and abs(v) >= 100:
            return f"{int(v)}"
        return f"{v:.{digits}f}"
    return str(v) if v not in (None, "") else "–"


def _md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in r) + " |")
    return lines


def render_summary(table: Sequence[Mapping], meta: Mapping[str, Any]) -> str:
    """The markdown summary: header facts, one row per variant and shape, per-variant geomeans."""
    lines = [f"# Nsight Compute sweep: {meta.get('family', '?')} ({meta.get('arch', '?')})", ""]
    facts = [
        ("GPU", meta.get("gpu")), ("backend", meta.get("backend")), ("ncu", meta.get("ncu_version")),
        ("runs per case", meta.get("runs")), ("when", meta.get("started")),
        ("wall time", f"{meta['wall_s']:.0f} s" if _finite(meta.get("wall_s")) else None),
        ("floor", meta.get("floor_note")),
        ("metrics dropped (unknown to this ncu)", ", ".join(meta.get("metrics_dropped") or []) or None),
        ("static report", meta.get("static_note")),
    ]
    lines += [f"- {k}: {v}" for k, v in facts if v not in (None, "")]
    for note in meta.get("notes") or []:
        lines.append(f"- note: {note}")
    lines += ["", "Times are ncu's (kernel serialized, caches flushed before each replay, clocks "
              "not locked): compare variants with them, quote benchmark times as headline figures.", ""]
    has_static = any("st_regs" in r or "st_sass" in r for r in table)
    header = ["shape", "variant", "best", "us", "TFLOP/s", "x floor", "tensor %", "DRAM %",
              "L2 hit %", "LSU pipe %", "smem confl %", "occ %", "regs", "top stalls (warps/issue)"]
    if has_static:
        header += ["st regs", "stack", "spills", "SASS"]
    header.append("status")
    body = []
    for r in sorted(table, key=lambda r: (r["shape"], r.get("duration_us") if _finite(r.get("duration_us")) else math.inf)):
        cells = [r["shape"], f"`{r['variant']}`", "**best**" if r.get("best") else "",
                 _fmt(r.get("duration_us"), 2), _fmt(r.get("tflops")), _fmt(r.get("time_over_floor"), 2),
                 _fmt(r.get("tensor_active_pct")), _fmt(r.get("dram_pct")), _fmt(r.get("l2_hit_pct")),
                 _fmt(r.get("lsu_pipe_pct")), _fmt(r.get("smem_conflict_pct")), _fmt(r.get("occupancy_achieved_pct")),
                 _fmt(r.get("regs_per_thread"), 0), r.get("top_stalls") or "–"]
        if has_static:
            cells += [_fmt(r.get("st_regs"), 0), _fmt(r.get("st_stack"), 0), _fmt(r.get("st_spills"), 0),
                      r.get("st_sass") or "–"]
        cells.append(r.get("status", ""))
        body.append(cells)
    lines += _md_table(header, body)
    compile_only = meta.get("backend") == "compile-only"
    geo = [] if compile_only else variant_geomeans(table)
    if geo:
        lines += ["", "## Per variant, over the shapes", ""]
        lines += _md_table(
            ["variant", "best", "shapes", "geomean us", "geomean x floor", "shape wins"],
            [[f"`{g['variant']}`", "**best**" if g["best"] else "", g["shapes"], _fmt(g["geomean_us"], 2),
              _fmt(g["geomean_time_over_floor"], 2), str(g["wins"])] for g in geo])
    failures = [] if compile_only else [r for r in table if r.get("status") != "ok"]
    if failures:
        lines += ["", "## Cases without numbers", ""]
        lines += [f"- {r['shape']} `{r['variant']}`: {r['status']}" for r in failures]
    lines += ["", f"Files: `{CSV_NAME}` (every metric, one row per case), `{PLOT_NAME}` (when anything was "
              f"measured), `{META_NAME}` (what ran, per-case status, ncu settings).", ""]
    return "\n".join(lines)


def plot_panels(table: Sequence[Mapping], path: str | Path, title: str = "") -> bool:
    """One PNG, one panel per metric, shapes on x, variants side by side. False if nothing to plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = list(dict.fromkeys(r["shape"] for r in table))
    variants = list(dict.fromkeys(r["variant"] for r in table))
    panels = [(c, t) for c, t in PANELS if any(_finite(r.get(c)) and r.get("status") == "ok" for r in table)]
    if not panels or not shapes:
        return False
    ncols = 3
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.4 * nrows + 1.2), squeeze=False)
    width = 0.8 / max(1, len(variants))
    cmap = plt.get_cmap("tab10" if len(variants) <= 10 else "tab20")
    lookup = {(r["variant"], r["shape"]): r for r in table}
    for ax, (col, ttl) in zip(axes.flat, panels):
        for i, v in enumerate(variants):
            ys = []
            for s in shapes:
                r = lookup.get((v, s))
                y = r.get(col) if r and r.get("status") == "ok" else math.nan
                ys.append(y if _finite(y) else math.nan)
            xs = [j - 0.4 + width * (i + 0.5) for j in range(len(shapes))]
            ax.bar(xs, ys, width=width, color=cmap(i % cmap.N), label=v)
        if col == "time_over_floor":
            ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_title(ttl, fontsize=10)
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(shapes, fontsize=9)
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(variants)), fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=12)
    legend_rows = math.ceil(len(variants) / 3)
    fig.tight_layout(rect=(0, min(0.4, 0.03 + 0.025 * legend_rows * 4 / nrows), 1, 0.97 if title else 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def _json_safe(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, Mapping):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    return str(x)


def write_outputs(out_dir: str | Path, table: Sequence[Mapping], meta: Mapping[str, Any],
                  extra_files: Mapping[str, str | bytes] | None = None) -> list[str]:
    """Write the CSV, summary, plot, ``sweep.json`` and ``extra_files`` ({name: content}).

    Returns the file names written. Refuses names the device tool would not bring back and
    more than MAX_OUTPUT_FILES files; content beyond MAX_OUTPUT_BYTES is cut (keeping the tail).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []

    def put(name: str, data: str | bytes) -> None:
        if not _SAFE_NAME.match(name):
            raise ValueError(f"output name {name!r} has characters the device tool drops")
        if len(written) >= MAX_OUTPUT_FILES:
            raise ValueError(f"more than {MAX_OUTPUT_FILES} output files")
        raw = data.encode() if isinstance(data, str) else data
        if len(raw) > MAX_OUTPUT_BYTES - 1024:
            raw = b"[...cut...]\n" + raw[-(MAX_OUTPUT_BYTES - 2048):]
        (out / name).write_bytes(raw)
        written.append(name)

    if table:
        write_csv(table, out / CSV_NAME)
        written.append(CSV_NAME)
    put(SUMMARY_NAME, render_summary(table, meta))
    if table:
        try:
            if plot_panels(table, out / PLOT_NAME, title=f"{meta.get('family', '')} {meta.get('gpu', '')}".strip()):
                written.append(PLOT_NAME)
        except Exception as exc:  # a plot failure must not lose the CSV and summary
            meta = {**meta, "notes": [*(meta.get("notes") or []), f"plot failed: {exc!r}"]}
    for name, data in (extra_files or {}).items():
        put(name, data)
    put(META_NAME, json.dumps(_json_safe({**meta, "files": written + [META_NAME]}), indent=1))
    return written


def check_output_dir(path: str | Path) -> list[str]:
    """What in ``path`` the device tool would not bring back (empty when all is well)."""
    problems = []
    files = [p for p in Path(path).rglob("*")]
    plain = [p for p in files if p.is_file()]
    if len(plain) > MAX_OUTPUT_FILES:
        problems.append(f"{len(plain)} files > {MAX_OUTPUT_FILES}")
    for p in files:
        rel = p.relative_to(path)
        if len(rel.parts) > 2:
            problems.append(f"{rel}: deeper than 2 levels")
        if not all(_SAFE_NAME.match(part) for part in rel.parts):
            problems.append(f"{rel}: name outside [A-Za-z0-9._-]")
        if p.is_symlink() or (not p.is_file() and not p.is_dir()):
            problems.append(f"{rel}: not a plain file")
        elif p.is_file() and p.stat().st_size >= MAX_OUTPUT_BYTES:
            problems.append(f"{rel}: {p.stat().st_size} B >= 16 MiB")
    return problems


def tail_text(path: str | Path, max_bytes: int = 200_000) -> str:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            if size > max_bytes:
                f.seek(size - max_bytes)
            return f.read().decode(errors="replace")
    except OSError:
        return ""
