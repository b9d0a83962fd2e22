"""profiling.benchmarks.speed_table on a synthetic pytest-benchmark JSON (CPU only)."""

from profiling.benchmarks import speed_table


def _bench(name, us, floor):
    return {"name": name, "extra_info": {"device_median_us": us, "time_over_floor": us / floor}}


FLOORS = {"bench1": 76.1, "bench2": 38.1, "bench3": 16.3, "bench4": 8.2}
PEER = {"bench1": 180.0, "bench2": 90.0, "bench3": 32.0, "bench4": 16.0}
A = {"bench1": 170.0, "bench2": 110.0, "bench3": 30.0, "bench4": 15.0}
B = {"bench1": 120.0, "bench2": 80.0, "bench3": 40.0, "bench4": 20.0}


def _data():
    out = [_bench(f"test_peer_cublas_bf16[{s}]", t, FLOORS[s]) for s, t in PEER.items()]
    out += [_bench(f"test_kernel[hopper:h90_a-{s}]", t, FLOORS[s]) for s, t in A.items()]
    out += [_bench(f"test_kernel[hopper:h90_b_r160-{s}]", t, FLOORS[s]) for s, t in B.items()]
    out.append({"name": "test_cpu_thing", "extra_info": {}, "stats": {"median": 1.0}})
    return {"benchmarks": out}


def test_medians_and_floors():
    rows, floors = speed_table.medians(_data())
    assert rows["cuBLAS bf16"] == PEER and rows["h90_a"] == A and rows["h90_b_r160"] == B
    assert all(abs(floors[s] - FLOORS[s]) < 1e-9 for s in FLOORS)


def test_table_best_per_shape_and_verdicts():
    lines = speed_table.table(_data())
    text = "\n".join(lines)
    row = {ln.split("|")[1].strip(): ln for ln in lines if ln.startswith("| ")}
    assert row["h90_a"].rstrip().endswith("| no |")  # slower than cuBLAS on bench2
    assert row["h90_b_r160"].rstrip().endswith("| no |")
    # best per shape: B on bench1/2, A on bench3/4 -> faster than cuBLAS everywhere
    assert "120.00 (0.67)" in row["best per shape"] and "15.00 (0.94)" in row["best per shape"]
    assert row["best per shape"].rstrip().endswith("| yes |")
    assert "best per shape: bench1 h90_b_r160, bench2 h90_b_r160, bench3 h90_a, bench4 h90_a" in text


def test_missing_shapes_leave_dashes():
    data = _data()
    data["benchmarks"] = [b for b in data["benchmarks"] if not b["name"].endswith("h90_a-bench4]")]
    row = {ln.split("|")[1].strip(): ln for ln in speed_table.table(data) if ln.startswith("| ")}
    assert "| - |" in row["h90_a"]


def test_both_floors_the_runs_and_the_reference():
    """/floor (run) divides by the floors the JSON carries, /floor (ref) by profiling.floors' fixed
    reference floors, whatever the run measured: a run on a slower machine (floors 10 % higher)
    moves the first and not the second."""
    import math

    data = _data()
    for b in data["benchmarks"]:
        e = b["extra_info"]
        if "time_over_floor" in e:
            e["time_over_floor"] /= 1.1  # this run's floors 1.1x the reference
    row = {ln.split("|")[1].strip(): ln.split("|") for ln in speed_table.table(data) if ln.startswith("| ")}
    g = math.exp(sum(math.log(B[s]) for s in B) / 4)
    ref = math.exp(sum(math.log(f) for f in speed_table.reference_floors().values()) / 4)
    assert abs(ref - 24.9) < 0.1  # bench1-4 76.1 / 38.1 / 16.3 / 8.2 us
    cells = row["h90_b_r160"]
    assert cells[7].strip() == f"{g / ref / 1.1:.2f}" and cells[8].strip() == f"{g / ref:.2f}"


def _suite_data():
    """The default run's entries on two suite shapes: the peer, the per-shape default (with the
    leaderboard's timing) and two builds."""
    out = []
    for shape, peer, per_shape, a, b in (("bench4", 16.0, 15.0, 18.0, 15.2), ("moe_dsv3_up", 200.0, 220.0, 220.0, 240.0)):
        out.append(_bench(f"test_peer_cublas_bf16[{shape}]", peer, 10.0))
        e = _bench(f"test_kernel[hopper:per-shape-{shape}]", per_shape, 10.0)
        e["extra_info"].update(config_run="h90_b" if shape == "bench4" else "h90_a", leaderboard_mean_us=per_shape + 4.5,
                               host_us_per_call=9.25)
        out += [e, _bench(f"test_kernel[hopper:h90_a-{shape}]", a, 10.0), _bench(f"test_kernel[hopper:h90_b-{shape}]", b, 10.0)]
    return {"benchmarks": out}


def test_suite_table_one_row_per_shape_with_the_leaderboard_and_host_columns():
    lines = speed_table.suite_table(_suite_data())
    rows = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]] for ln in lines if ln.startswith("| ")}
    head = rows.pop("shape")
    assert head[:6] == ["family", "cuBLAS us", "per-shape us (/cuBLAS)", "runs", "leaderboard mean us", "host us/call"]
    assert head[6:] == ["A us (/cuBLAS)", "B us (/cuBLAS)", "fastest"]
    assert list(rows) == ["bench4", "moe_dsv3_up"]  # the suite's order
    assert rows["bench4"] == ["leaderboard-bench", "16.00", "15.00 (0.94)", "B", "19.50", "9.2", "18.00 (1.12)",
                              "15.20 (0.95)", "B"]
    assert rows["moe_dsv3_up"] == ["moe", "200.00", "220.00 (1.10)", "A", "224.50", "9.2", "220.00 (1.10)",
                                   "240.00 (1.20)", "A"]
    assert "A: h90_a" in lines and "B: h90_b" in lines
    assert "leaderboard-bench: per-shape / cuBLAS geomean 0.94, faster than cuBLAS on 1 of 1" in lines
    assert "moe: per-shape / cuBLAS geomean 1.10, faster than cuBLAS on 0 of 1" in lines


def test_the_full_table_has_both_parts():
    text = "\n".join(speed_table.table({"benchmarks": _data()["benchmarks"] + _suite_data()["benchmarks"]}))
    assert "| variant | bench1 us (/cuBLAS)" in text and "| shape | family |" in text
    assert "| per-shape |" in text  # the per-shape default is a row of the leaderboard's table too
