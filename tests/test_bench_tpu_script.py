"""tools/bench_tpu.sh off a TPU: it must stop at its setup check with exit status 2 and say why, before
running anything (the script's benchmark itself needs the chip; tools/results/bench_tpu.txt holds a run)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_without_a_tpu_the_script_stops_at_setup_with_status_2(tmp_path):
    env = dict(os.environ, OUT=str(tmp_path), BENCH_PYTHON=sys.executable, JAX_PLATFORMS="cpu")
    done = subprocess.run(["bash", str(ROOT / "tools" / "bench_tpu.sh")], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "jax does not see a TPU" in done.stderr
    assert not (tmp_path / "bench_tpu_ours.json").exists() and not (tmp_path / "bench_tpu.json").exists()
