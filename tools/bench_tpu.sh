#!/usr/bin/env bash
# The speed benchmark on a TPU machine, with the peer engines, in two short runs.
#
#   tools/bench_tpu.sh                          # python3 with jax + libtpu, scenec importable
#   BENCH_WHEELS=.whl-tpu tools/bench_tpu.sh    # first install these wheels under /tmp (no network)
#   OUT=/some/dir tools/bench_tpu.sh            # results: $OUT/bench_tpu_ours.json, $OUT/bench_tpu.json
#
# A TPU chip is held by one process at a time, and `scenec bench --compare` runs each peer engine in
# a process of its own beside ours (bench_peers.run_peer), so here the bench runs twice:
#   1. `scenec bench $BENCH_SCENES --batch $BENCH_BATCH --json $OUT/bench_tpu_ours.json`: our step on
#      the chip (compile times, physics steps/s, XLA's FLOPs and bytes);
#   2. `scenec bench ... --batch $BENCH_PEER_BATCH --ours-from $OUT/bench_tpu_ours.json --compare
#      $BENCH_COMPARE --json $OUT/bench_tpu.json`: that process stays on the CPU and takes our figures
#      from the first file; each peer's process opens the chip in turn (MuJoCo's C engine runs on
#      the host's cores) and the ratios are printed as in any `scenec bench --compare`.
# Defaults: Ant and Humanoid, ours at batch 1024 and 16384, peers at 16384, 40 control steps, 3
# repeats, peers mujoco,brax-spring,brax-positional,brax-generalized (fastest to compile first),
# one halving for an unstable peer, each peer stopped after $BENCH_PEER_TIMEOUT s (default 120), the
# whole script after $BENCH_DEADLINE_S s (default 540). Both JSON files are rewritten after every
# point and every peer, so a run cut short keeps what it measured. MJX is left out by default: on a
# TPU v5e MJX (3.17) gave no result within 170 s at 16,384 environments (its compile and first run),
# a third of the deadline; BENCH_COMPARE=mujoco,mjx,... with a larger BENCH_PEER_TIMEOUT adds it. With
# BENCH_BATCH=16384 one call of 570 s measured our step, Ant's four peers (brax-generalized: no result
# in 110 s) and Humanoid's MuJoCo C and brax-spring at its own step, not its halving nor positional
# (tools/results/bench_tpu_peers_unroll.txt; BENCH_OURS_FROM and BENCH_SCENES finish in a second
# call). JAX peers run with float32 products at full precision (JAX_DEFAULT_MATMUL_PRECISION=highest,
# compiler/bench_peers.py); our step has none.
# BENCH_WHEELS: a folder of wheels (scenec's own from `pip wheel --no-deps .`, and lark, trimesh,
# protobuf, mujoco, mujoco-mjx, brax and what they import) installed with --no-deps into
# /tmp/scenec-site, which goes last on PYTHONPATH so that the machine's own jax stays first.
# BENCH_SETTLE=N (default 0) times every engine from the states N control steps of random controls
# reach (`scenec bench --settle`), in both runs.
# BENCH_OURS_FROM=FILE skips run 1 and takes our figures from FILE (an earlier run's bench_tpu_ours.json).
# BENCH_INDEX=DIR (a local package index, e.g. the TPU image's file:///opt/pypi/simple) installs
# $BENCH_INDEX_PACKAGES (default flax, which Brax imports) from it into /tmp/scenec-index-site, also
# last on PYTHONPATH.
# Exit status: the last run's (124 when the deadline cut it short), 2 when the setup failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-.}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
START=$SECONDS
DEADLINE_S="${BENCH_DEADLINE_S:-540}"
SCENES="${BENCH_SCENES:-scenes/ant.yaml scenes/humanoid.yaml}"
BATCH="${BENCH_BATCH:-1024,16384}"
PEER_BATCH="${BENCH_PEER_BATCH:-16384}"
STEPS="${BENCH_STEPS:-40}"
REPEATS="${BENCH_REPEATS:-3}"
SETTLE="${BENCH_SETTLE:-0}"
COMPARE="${BENCH_COMPARE:-mujoco,brax-spring,brax-positional,brax-generalized}"
PY="${BENCH_PYTHON:-python3}"
LOG="$OUT/bench_tpu.log"
: > "$LOG"
say() { echo "[bench_tpu $((SECONDS - START)) s] $*" | tee -a "$LOG" >&2; }

if [[ -n "${BENCH_WHEELS:-}" ]]; then
    SITE=/tmp/scenec-site
    say "installing $(ls "$BENCH_WHEELS"/*.whl | wc -l) wheels from $BENCH_WHEELS into $SITE"
    if ! PIP_CONFIG_FILE=/dev/null "$PY" -m pip install --isolated -q --no-index --no-deps --no-compile \
            --no-cache-dir --upgrade --target "$SITE" "$BENCH_WHEELS"/*.whl >> "$LOG" 2>&1; then
        say "setup failed: the wheels did not install (see $LOG)"
        exit 2
    fi
    export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$SITE"
fi
if [[ -n "${BENCH_INDEX:-}" ]]; then
    say "installing ${BENCH_INDEX_PACKAGES:-flax} from $BENCH_INDEX"
    # shellcheck disable=SC2086  # a list of package names
    if ! PIP_CONFIG_FILE=/dev/null "$PY" -m pip install --isolated -q --only-binary=:all: --no-compile \
            --upgrade --index-url "$BENCH_INDEX" --target /tmp/scenec-index-site \
            ${BENCH_INDEX_PACKAGES:-flax} >> "$LOG" 2>&1; then
        say "setup failed: ${BENCH_INDEX_PACKAGES:-flax} did not install from $BENCH_INDEX (see $LOG)"
        exit 2
    fi
    export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}/tmp/scenec-index-site"
fi
if ! "$PY" -c 'import jax, sys; d = jax.devices(); print(d[0].device_kind, len(d)); sys.exit(d[0].platform != "tpu")' 2>> "$LOG" | tee -a "$LOG" >&2; then
    say "setup failed: jax does not see a TPU"
    exit 2
fi

cd "$ROOT"
left() { echo $((DEADLINE_S - (SECONDS - START))); }
bench() {   # the bench with a deadline: SIGINT first (the JSON keeps the points so far), then KILL
    PYTHONUNBUFFERED=1 timeout --signal=INT --kill-after=15 "$(left)" \
        "$PY" -u -m scenec.compiler.cli bench "$@" 2>&1 | tee -a "$LOG"
    local rc=${PIPESTATUS[0]}
    (( rc == 130 )) && rc=124
    return "$rc"
}
OURS="${BENCH_OURS_FROM:-$OUT/bench_tpu_ours.json}"
if [[ -n "${BENCH_OURS_FROM:-}" ]]; then
    say "run 1 skipped: our figures from $OURS (BENCH_OURS_FROM)"
else
    say "run 1: our step on the chip (deadline in $(left) s)"
    # shellcheck disable=SC2086  # SCENES is a list of words
    bench $SCENES --batch "$BATCH" --steps "$STEPS" --repeats "$REPEATS" --settle "$SETTLE" --json "$OURS"
    RC=$?
    if (( RC != 0 )); then
        say "run 1 ended with exit $RC: no peer run"
        exit "$RC"
    fi
fi
say "run 2: the peers, one process each, against run 1's figures (deadline in $(left) s)"
# shellcheck disable=SC2086
bench $SCENES --batch "$PEER_BATCH" --steps "$STEPS" --repeats "$REPEATS" --settle "$SETTLE" \
    --ours-from "$OURS" --compare "$COMPARE" --stable-halvings "${BENCH_HALVINGS:-1}" \
    --peer-timeout "${BENCH_PEER_TIMEOUT:-120}" --json "$OUT/bench_tpu.json"
RC=$?
say "done (exit $RC): $OURS, $OUT/bench_tpu.json, $LOG"
exit "$RC"
