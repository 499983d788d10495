"""Benchmark: Ant with PPO for 30 minutes of wall-clock time on this machine, with the reward curve
against time and the time to reach an episode return of 1000 (Brax v1's Ant reward: forward velocity
+ 1 − 0.5·Σa² − 5e-4·Σclip(contact force)², episodes of 1000 steps ending early when the torso
leaves 0.2 m ≤ z ≤ 1 m; scenes/ant.yaml).

    python tools/train_ant.py                 # 30 minutes, results in tools/results/ant_ppo
    python tools/train_ant.py --minutes 120   # longer
"""

from __future__ import annotations

import json
import sys

from train_common import ROOT, arguments, compile_scene, plot, run

SETTINGS = {"unroll_length": 10, "num_minibatches": 8, "update_epochs": 4, "learning_rate": 3e-4,
            "entropy_cost": 1e-2, "discount": 0.97, "reward_scaling": 10.0, "clip_epsilon": 0.3,
            "policy_hidden": (64, 64), "value_hidden": (128, 128), "activation": "swish"}
THRESHOLD = 1000.0


def main() -> int:
    args = arguments("Ant with PPO (Brax v1 reward)", minutes=30.0, envs=256)
    compiled = compile_scene(ROOT / "scenes" / "ant.yaml")
    summary = run("ant_ppo", compiled, "ppo", SETTINGS, args, eval_every=40, eval_envs=8)
    out = ROOT / "tools" / "results" / "ant_ppo" if not args.out else __import__("pathlib").Path(args.out)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    reached = [r for r in records if r.get("eval_return", -1e9) >= THRESHOLD
               or r.get("episode_return", -1e9) >= THRESHOLD]
    summary["threshold"] = THRESHOLD
    summary["time_to_threshold_s"] = reached[0]["wall_s"] if reached else None
    summary["steps_to_threshold"] = reached[0]["env_steps"] if reached else None
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    evals = [(r["wall_s"], r["env_steps"], r["eval_return"]) for r in records if "eval_return" in r]
    train = [(r["wall_s"], r["env_steps"], r["episode_return"]) for r in records if "episode_return" in r]
    plot(out, "Ant, PPO (dashed: return 1000)", evals, train, threshold=THRESHOLD)
    print(f"time to an episode return of {THRESHOLD:.0f}: "
          f"{summary['time_to_threshold_s'] if reached else 'not reached'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
