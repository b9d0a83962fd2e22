#!/usr/bin/env bash
# Issue 14, session 17, fourth device call (~6 min):
#   source .device/env.sh && bash ci/h200_session17d.sh      (logs under $OUT, or ./out)
# Phase 1 in its own launch with flags, second form: every phase-1 warp claims and decodes chunks
# of its own (64 items, K-chunk-major) and adds them to counters that only grow (one release add
# per touched cell, no round trip), so the first level is ready after one warp-sized chunk and the
# rest streams behind the K loop. 1. ci.schedule_smoke; 2. the chained-launch test; 3. k_slope on
# bench4's M and N; 4. profiling.ablation on the four shapes (each build checked against the
# exact oracle first).
# The steps are 17b's (the labels name the flags builds, whose phase 1 changed) without its ci
# property.
SKIP_PROPERTY=1 exec bash "$(dirname "$0")/h200_session17b.sh"
