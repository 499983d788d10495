"""Learners on top of the environments: PPO, evolution strategies, analytic policy gradients, and
open-loop trajectory optimisation, in pure JAX with optax (see docs/training.md).

Where it sits: runtime/, above runtime/envs. Every training iteration (rollout + update) is one
jitted function; the Python loop around it (runner.py) only logs, evaluates and checkpoints.
"""
