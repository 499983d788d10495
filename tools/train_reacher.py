"""Benchmark: Reacher with PPO, or with APG (analytic policy gradients through the step).

    python tools/train_reacher.py --algo ppo      # 10 minutes, results in tools/results/reacher_ppo
    python tools/train_reacher.py --algo apg      # 10 minutes, results in tools/results/reacher_apg

The task is scenes/reacher.yaml's (Gym's Reacher: 50-step episodes, reward −distance − Σa²), with
one change made through the Python message API: the goal starts each episode at a random point of
[−0.2, 0.2]² (`random_start`), as Gym draws a new goal at every reset, instead of at its fixed
`pos`. For scale: Gym's Reacher counts as solved at an average return of −3.75 per 50-step episode.
"""

from __future__ import annotations

import sys

from train_common import ROOT, compile_scene, run

ALGO = "apg" if "--algo" in sys.argv and sys.argv[sys.argv.index("--algo") + 1] == "apg" else "ppo"
if "--algo" in sys.argv:
    i = sys.argv.index("--algo")
    del sys.argv[i:i + 2]

from train_common import arguments  # noqa: E402

SETTINGS = {
    "ppo": {"unroll_length": 16, "num_minibatches": 16, "update_epochs": 4, "learning_rate": 1e-3,
            "entropy_cost": 1e-3, "discount": 0.95, "policy_hidden": (64, 64), "value_hidden": (64, 64)},
    "apg": {"horizon": 50, "learning_rate": 1e-3, "discount": 0.99, "hidden": (64, 64)},
}
ENVS = {"ppo": 512, "apg": 32}


def random_goal(scene):
    for target in scene.task.targets:
        if target.name == "goal":
            target.random_start = True


def main() -> int:
    args = arguments(f"Reacher with {ALGO.upper()}", minutes=10.0, envs=ENVS[ALGO])
    compiled = compile_scene(ROOT / "scenes" / "reacher.yaml", random_goal)
    run(f"reacher_{ALGO}", compiled, ALGO, SETTINGS[ALGO], args, eval_every=50 if ALGO == "ppo" else 20,
        eval_envs=64, notes="goal drawn at random each episode (random_start), Gym-style 50-step episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
