"""Shared by the training benchmarks (tools/train_*.py): run a learner on a shipped scene for a
wall-clock budget, then write the metrics, a reward curve (PNG) and a summary.

Each benchmark writes into tools/results/<name>/: metrics.jsonl (one line per iteration, from the
runner), curve.png (episode and evaluation return against environment steps and against wall-clock
minutes), summary.json (settings, throughput, final and best returns, the machine's load), policy.npz.
These are benchmarks, not tests: they take minutes to an hour and are reported, not asserted.

Reproduce one with, e.g., `python tools/train_ant.py` (see each script's --help).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "tools" / "results"


def arguments(description: str, minutes: float, envs: int, seed: int = 0) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--minutes", type=float, default=minutes, help=f"wall-clock budget (default {minutes})")
    parser.add_argument("--envs", type=int, default=envs, help=f"parallel environments (default {envs})")
    parser.add_argument("--seed", type=int, default=seed)
    parser.add_argument("--out", default=None, help="output folder (default tools/results/<name>)")
    return parser.parse_args()


def compile_scene(path, edit=None):
    """Compile a shipped scene, after `edit(scene_message)` when given (the Python message API)."""
    from scenec.compiler.api import compile
    from scenec.schema import load

    loaded = load(str(path))
    if edit is None:
        return compile(str(path), measure_jit=False)
    scene = loaded.scene
    edit(scene)
    return compile(scene, measure_jit=False)


def run(name: str, compiled, algo: str, settings: dict, args, *, eval_every: int, eval_envs: int = 16,
        steps: float = 1e10, notes: str = "", env_options: dict | None = None,
        train_label: str = "training episodes (stochastic policy)") -> dict:
    """Train, then write metrics, curve and summary into the output folder; return the summary."""
    import jax

    from scenec.runtime import envs
    from scenec.runtime.train import runner

    out = pathlib.Path(args.out) if args.out else RESULTS / name
    out.mkdir(parents=True, exist_ok=True)
    env = envs.from_model(compiled.model, compiled.task, **(env_options or {}))
    learner = runner.make_learner(algo, env, args.envs, settings)
    load_before = os.getloadavg()
    t0 = time.monotonic()
    result = runner.train(learner, total_steps=int(steps), out_dir=out, seed=args.seed, eval_every=eval_every,
                          eval_envs=eval_envs, checkpoint_seconds=300, time_limit_s=60 * args.minutes,
                          meta={"scene": compiled.model.name, "benchmark": name})
    wall = time.monotonic() - t0
    load_after = os.getloadavg()
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    evals = [(r["wall_s"], r["env_steps"], r["eval_return"]) for r in records if "eval_return" in r]
    train_returns = [(r["wall_s"], r["env_steps"], r["episode_return"]) for r in records if "episode_return" in r]
    steady = [r for r in records[1:]]
    rate = ((steady[-1]["env_steps"] - steady[0]["env_steps"]) / max(steady[-1]["wall_s"] - steady[0]["wall_s"], 1e-9)
            if len(steady) > 1 else None)
    summary = {
        "benchmark": name, "scene": compiled.model.name, "algo": algo, "settings": runner.config_json(learner),
        "observation_size": env.observation_size, "action_size": env.action_size,
        "episode_length": env.length, "seed": args.seed, "minutes": args.minutes,
        "iterations": result.iterations, "env_steps": result.env_steps, "wall_s": round(wall, 1),
        "first_iteration_s": records[0]["wall_s"] if records else None,
        "env_steps_per_s_after_compile": round(rate, 1) if rate else None,
        "final_eval_return": evals[-1][2] if evals else None,
        "best_eval_return": max(e[2] for e in evals) if evals else None,
        "final_episode_return": train_returns[-1][2] if train_returns else None,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(), "platform": platform.platform(), "jax": jax.__version__,
        "command": "python " + " ".join(sys.argv), "notes": notes,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    for stale in ("checkpoint.npz",):  # large and only useful to resume; not part of the results
        if (out / stale).exists():
            (out / stale).unlink()
    plot(out, name, evals, train_returns, train_label=train_label)
    thin(out)
    print(json.dumps(summary, indent=2))
    return summary


def thin(out: pathlib.Path, keep: int = 400) -> None:
    """metrics_thinned.jsonl: every evaluation and about `keep` evenly spaced iterations (the full
    metrics.jsonl can hold tens of thousands of lines; this one is small enough to commit)."""
    lines = (out / "metrics.jsonl").read_text().splitlines()
    every = max(1, len(lines) // keep)
    kept = [line for i, line in enumerate(lines)
            if i % every == 0 or i == len(lines) - 1 or "eval_return" in line]
    (out / "metrics_thinned.jsonl").write_text("".join(line + "\n" for line in kept))


def plot(out: pathlib.Path, title: str, evals, train_returns, threshold: float | None = None,
         train_label: str = "training episodes (stochastic policy)") -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install scenec[bench]); no curve drawn", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, index, label in ((axes[0], 1, "environment steps"), (axes[1], 0, "wall-clock minutes")):
        scale = 1 / 60 if index == 0 else 1.0
        if train_returns:
            ax.plot([r[index] * scale for r in train_returns], [r[2] for r in train_returns], lw=0.8,
                    alpha=0.6, label=train_label)
        if evals:
            ax.plot([e[index] * scale for e in evals], [e[2] for e in evals], "o-", ms=3,
                    label="evaluation (deterministic policy)")
        if threshold is not None:
            ax.axhline(threshold, color="grey", ls="--", lw=0.8)
        ax.set_xlabel(label)
        ax.set_ylabel("episode return")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out / "curve.png", dpi=110)
    plt.close(fig)
