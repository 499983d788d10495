"""The task compiler: task expressions → checked, typed trees → the runtime's `TaskSpec`.

Where it sits: compiler/. `check_task(loaded)` (parse.py + check.py, no jax) runs inside `check()` and
`analyse()`, so `scenec check` reports every task problem; `lower_task` (lower.py, imports the
runtime) runs inside `compile()` once the model exists. The language is documented in docs/tasks.md.
"""

from .check import CheckedTask, check_task, with_task_diagnostics

__all__ = ["CheckedTask", "check_task", "compile_task", "with_task_diagnostics"]


def compile_task(loaded, scene_ir, model):
    """The `runtime.task.TaskSpec` of a checked scene, or None when it has no task. The scene must
    check without errors."""
    diagnostics, checked = check_task(loaded)
    if checked is None:
        return None
    from .lower import lower_task

    return lower_task(checked, loaded.scene, scene_ir, model)
