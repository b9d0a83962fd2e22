#!/usr/bin/env bash
# Issue 14, next device call (~4 min): why the shared-memory tables shorten a stream launch by
# 0.6-1.1 us but not the benchmark's graph replay (session 13). The timeline of the default
# dispatch's builds and their _st twins on bench4 and bench3, replayed from a CUDA graph as the
# benchmark does (period, gap to the previous launch, each point), then on a stream for contrast:
#   source .device/env.sh && bash ci/h200_session14a.sh      (logs under $OUT, or ./out)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); SWS=$(label SPLIT_WARP_ST_CONFIG)
RP=$(label FASTEST_STAGED_PDL_CONFIG); RPS=$(label FASTEST_STAGED_PDL_ST_CONFIG)
for SHAPE in bench4 bench3; do
  for MODE in --graph ""; do
    F="$OUT/timeline_${SHAPE}${MODE:+_graph}.md"
    timeout ${T_TL:-100} python3 -m profiling.timeline --variant "$RP" --variant "$RPS" --variant "$SW" --variant "$SWS" \
      --shape $SHAPE --launches 24 $MODE > "$F"
    echo "== $SHAPE ${MODE:-stream}"; grep -E "^\`|tables_read|phase1_|producer_first_commit|epilogue_last_end|period|gap" "$F"
  done
done
