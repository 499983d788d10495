"""`load(...)`: an environment from a compiled scene, with the standard wrappers.

Where it sits: runtime/envs, the front door of the environment layer. It takes what `scenec compile`
produced (the generated `<scene>_step.py` module, its path, the `.npz`, or the folder holding them)
or a `scenec.compiler.compile(...)` result, and returns AutoReset(EpisodeLength(ActionRepeat(TaskEnv))).
Runtime only: to start from a YAML file, compile it first (`scenec.compiler.compile(path)`).
"""

from __future__ import annotations

import os
import pathlib
import types

from .. import io as rio
from .core import Env, PythonTask, TaskEnv
from .wrappers import wrap


class NoTaskError(ValueError):
    """The scene has no task (and no PythonTask was given)."""


def _model_and_task(source):
    if isinstance(source, types.ModuleType) or (hasattr(source, "model") and hasattr(source, "task")):
        return source.model, source.task
    if isinstance(source, (str, os.PathLike)):
        path = pathlib.Path(source)
        if path.is_dir():
            modules = sorted(path.glob("*_step.py"))
            if len(modules) != 1:
                raise FileNotFoundError(f"{path}: expected one generated *_step.py, found {len(modules)}")
            path = modules[0]
        if path.suffix == ".py":
            module = rio.load_module(path)
            return module.model, getattr(module, "task", None)
        if path.suffix == ".npz":
            return rio.load_model(path), rio.load_task(path)
        raise ValueError(f"{path}: not a compiled scene (a *_step.py, a .npz or their folder); "
                         "compile a scene file with scenec.compiler.compile first")
    raise TypeError(f"cannot make an environment from {type(source).__name__}")


def load(source, *, task: PythonTask | None = None, episode_length: int | None = None,
         action_repeat: int | None = None, auto_reset: bool = True, batch: int | None = None) -> Env:
    """The environment of a compiled scene. `task` replaces the scene's own task with a Python one;
    the other arguments override the task's episode length and action repeat, turn auto-reset off, or
    batch `batch` copies (reset(key) then returns stacked states)."""
    model, scene_task = _model_and_task(source)
    chosen = task if task is not None else scene_task
    if chosen is None:
        raise NoTaskError("the scene has no task: add one to the scene file (docs/tasks.md) or pass "
                          "task=PythonTask(...)")
    return wrap(TaskEnv(model, chosen), episode_length=episode_length, action_repeat=action_repeat,
                auto_reset=auto_reset, batch=batch)


def from_model(model, task, **kw) -> Env:
    """The environment of a model and a task (a TaskSpec or a PythonTask), with the standard wrappers."""
    return wrap(TaskEnv(model, task), **kw)
