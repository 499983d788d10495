"""Benchmark: HalfCheetah with evolution strategies (scenes/half_cheetah.yaml's task: forward velocity
− 0.1·Σa², 1000-step episodes).

    python tools/train_halfcheetah.py           # 15 minutes, results in tools/results/halfcheetah_es

Each ES member is scored on its first 300 steps (to fit many iterations into the budget); the
evaluation runs the full 1000-step episode with the deterministic policy.
"""

from __future__ import annotations

import sys

from train_common import ROOT, arguments, compile_scene, run

TRAIN_LABEL = "population mean, first 300 steps (perturbed policies)"
SETTINGS = {"episode_length": 300, "sigma": 0.05, "learning_rate": 0.02, "weight_decay": 0.005,
            "hidden": (32, 32)}


def main() -> int:
    args = arguments("HalfCheetah with ES", minutes=15.0, envs=64)
    compiled = compile_scene(ROOT / "scenes" / "half_cheetah.yaml")
    run("halfcheetah_es", compiled, "es", SETTINGS, args, eval_every=10, eval_envs=8,
        notes="ES fitness over the first 300 steps; evaluation over full 1000-step episodes",
        train_label=TRAIN_LABEL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
