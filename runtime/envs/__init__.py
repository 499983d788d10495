"""Environments: a functional API over compiled scenes and their tasks.

Where it sits: runtime/, between the compiled step and the learners (runtime/train), the CLI
(`scenec train`, `scenec play`) and the Gymnasium adapter (`scenec.runtime.envs.gym`, optional).

    env = scenec.runtime.envs.load("out/ant_step.py")     # or a compile() result, or its folder
    state = env.reset(jax.random.PRNGKey(0))
    state = env.step(state, action)                        # state.obs, .reward, .done, .metrics
    batch = jax.vmap(env.reset)(jax.random.split(key, 4096)); jax.vmap(env.step)(batch, actions)
"""

from .core import Env, EnvState, PythonTask, TaskEnv
from .loading import NoTaskError, from_model, load
from .wrappers import (ActionRepeat, AutoReset, Batched, EpisodeLength, Wrapper, differentiable,
                       without_auto_reset, wrap)

__all__ = ["ActionRepeat", "AutoReset", "Batched", "Env", "EnvState", "EpisodeLength", "NoTaskError",
           "PythonTask", "TaskEnv", "Wrapper", "differentiable", "from_model", "load", "without_auto_reset",
           "wrap"]
