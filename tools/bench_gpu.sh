#!/usr/bin/env bash
# The speed benchmark on a GPU machine, with the peer engines, in one short run (< 8 minutes).
#
#   tools/bench_gpu.sh                  # GPU: venv with jax[cuda12] + scenec (+ mujoco-mjx, brax)
#   OUT=/some/dir tools/bench_gpu.sh    # results go to $OUT/bench_gpu.json and $OUT/bench_gpu.log
#   BENCH_CPU=1 BENCH_BATCH=1,2 BENCH_STEPS=2 tools/bench_gpu.sh    # the CPU path, tiny sizes
#   BENCH_PYTHON=python3 tools/bench_gpu.sh     # a machine whose python3 has jax with a GPU plugin
#
# On a machine without network whose image has jax with a GPU plugin (the H200 of
# tools/results/bench_gpu.txt: jax 0.11.2, jax-cuda13-plugin), carry the rest as wheels (python 3.12:
# scenec itself from `pip wheel --no-deps .`, lark, trimesh, protobuf>=7.35.1, mujoco, mujoco-core,
# mujoco-studio, mujoco-mjx, brax and Brax's import-time needs: flask, flask-cors, itsdangerous, blinker,
# jaxopt, ml-collections, tensorboardx), `pip install --no-deps --target DIR` them, put DIR on
# PYTHONPATH and set BENCH_PYTHON=python3. scenec sets no CPU XLA flags where a GPU plugin is installed
# (runtime/__init__.py), and the JAX peers run with JAX_DEFAULT_MATMUL_PRECISION=highest there
# (compiler/bench_peers.py says why).
#
# What it does, in order:
#   1. a virtual environment ($BENCH_VENV, default .venv-bench-gpu at the repository root; reused
#      when it exists) with jax[cuda12] (plain jax with BENCH_CPU=1) at $BENCH_JAX_VERSION (default
#      0.10.2, the version the project is tested with), the project with its test extra (for mujoco) and, if
#      it installs, the bench extra (mujoco-mjx, brax). Extra pip arguments come from $PIP_ARGS
#      (e.g. "--no-index --find-links /wheels" on a machine without network). BENCH_PYTHON=/path/to/python
#      skips the environment and uses that interpreter as it is.
#   2. checks that jax sees the GPU (unless BENCH_CPU=1), prints nvidia-smi's one-line summary;
#   3. `scenec bench $BENCH_SCENES --batch
#      1,1024,4096,16384 --steps 100 --json $OUT/bench_gpu.json --compare mujoco,mjx,brax` (BENCH_SCENES
#      defaults to the Ant, Humanoid and HalfCheetah scenes; BENCH_COMPARE to mujoco,mjx,brax) under a
#      deadline: the whole script stops at $BENCH_DEADLINE_S seconds (default 470, under 8 minutes).
#      `scenec bench` rewrites the JSON after every point and peer, so a run cut short keeps what it
#      measured ("complete": false in the file). The run is compile-bound: each scene and batch size compiles
#      our step and each JAX peer (MJX, Brax's three pipelines) once, ~10-20 s apiece on a CPU host,
#      so the full matrix (3 scenes x 4 batch sizes x 6 JAX programs) may not fit the deadline; the
#      XLA cache ($JAX_COMPILATION_CACHE_DIR, default beside the venv) makes a second run cheaper.
#      Each peer runs in its own process and is stopped after $BENCH_PEER_TIMEOUT s (default 240).
#      BENCH_SETTLE=N (default 0) times every engine from the states N control steps of random
#      controls reach (`scenec bench --settle`).
# Exit status: the bench's (124 when the deadline cut it short), or 2 when the setup failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-.}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
START=$SECONDS
DEADLINE_S="${BENCH_DEADLINE_S:-470}"
BATCH="${BENCH_BATCH:-1,1024,4096,16384}"
STEPS="${BENCH_STEPS:-100}"
REPEATS="${BENCH_REPEATS:-2}"
SETTLE="${BENCH_SETTLE:-0}"
COMPARE="${BENCH_COMPARE:-mujoco,mjx,brax}"
SCENES="${BENCH_SCENES:-scenes/ant.yaml scenes/humanoid.yaml scenes/half_cheetah.yaml}"
VENV="${BENCH_VENV:-$ROOT/.venv-bench-gpu}"
LOG="$OUT/bench_gpu.log"
PIP_ARGS="${PIP_ARGS:-}"

say() { echo "[bench_gpu $((SECONDS - START)) s] $*" | tee -a "$LOG" >&2; }
: > "$LOG"

if [[ -n "${BENCH_PYTHON:-}" ]]; then
    PY="$BENCH_PYTHON"
    say "using $PY as it is (BENCH_PYTHON)"
else
    if [[ ! -x "$VENV/bin/python" ]]; then
        say "creating $VENV"
        python3 -m venv "$VENV"
    fi
    PY="$VENV/bin/python"
    if [[ "${BENCH_CPU:-0}" == 1 ]]; then JAX_REQ="jax"; else JAX_REQ="jax[cuda12]"; fi
    JAX_REQ="$JAX_REQ==${BENCH_JAX_VERSION:-0.10.2}"
    say "installing $JAX_REQ and scenec[test] (log: $LOG)"
    # shellcheck disable=SC2086  # PIP_ARGS is a list of words
    if ! "$PY" -m pip install -q $PIP_ARGS "$JAX_REQ" -e "$ROOT[test]" >> "$LOG" 2>&1; then
        say "setup failed: could not install $JAX_REQ and the project (see $LOG)"
        exit 2
    fi
    # shellcheck disable=SC2086
    if "$PY" -m pip install -q $PIP_ARGS "$JAX_REQ" -e "$ROOT[bench]" >> "$LOG" 2>&1; then
        say "bench extra installed (mujoco-mjx, brax)"
    else
        say "bench extra (mujoco-mjx, brax) did not install beside $JAX_REQ: MJX and Brax will be reported as missing"
    fi
fi

if [[ "${BENCH_CPU:-0}" != 1 ]]; then
    command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$LOG" >&2 || true
    if ! "$PY" -c 'import jax, sys; sys.exit(0 if jax.default_backend() == "gpu" else 1)' >> "$LOG" 2>&1; then
        say "setup failed: jax does not see a GPU (BENCH_CPU=1 runs the CPU path)"
        exit 2
    fi
fi

LEFT=$((DEADLINE_S - (SECONDS - START)))
if (( LEFT < 60 )); then
    say "setup took $((SECONDS - START)) s: under a minute left for the bench, stopping"
    exit 124
fi
say "running the bench (deadline in $LEFT s)"
cd "$ROOT"
# a persistent XLA cache beside the environment: a second run skips the compiles the first one did
export JAX_COMPILATION_CACHE_DIR="${JAX_COMPILATION_CACHE_DIR:-${VENV}-xla-cache}"
set +e
# -u: unbuffered, so the log keeps every line printed before a deadline cut; SIGINT first, then KILL
# shellcheck disable=SC2086  # SCENES is a list of words
PYTHONUNBUFFERED=1 timeout --signal=INT --kill-after=15 "$LEFT" \
    "$PY" -u -m scenec.compiler.cli bench $SCENES \
    --batch "$BATCH" --steps "$STEPS" --repeats "$REPEATS" --settle "$SETTLE" --json "$OUT/bench_gpu.json" \
    --compare "$COMPARE" --peer-timeout "${BENCH_PEER_TIMEOUT:-240}" 2>&1 | tee -a "$LOG"
RC=${PIPESTATUS[0]}
set -e
if (( RC == 124 || RC == 130 )); then
    say "deadline reached: $OUT/bench_gpu.json holds the points measured so far"
    RC=124
fi
say "done (exit $RC): $OUT/bench_gpu.json, $LOG"
exit "$RC"
