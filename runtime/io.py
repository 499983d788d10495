"""Saving and loading compiled models (`<scene>.npz`), and loading generated step modules.

Where it sits: `compiler/emit` writes a model with `save_model`; a generated `<scene>_step.py` calls
`load_model` on the file next to it; `load_module` imports a generated module by path. The file holds
only numpy arrays (strings as unicode arrays, structure as JSON text), so it loads without pickle.
Writes are atomic: a temporary file in the same folder, then a rename.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys

import jax.numpy as jnp
import numpy as np

from .collision_data import ConvexData, HeightFieldData
from .files import atomic_write_bytes  # noqa: F401  (the writers of compiled files use it from here)
from .types import Model, PairGroup, Static

FORMAT = 3   # 2: Model.pair_bounce; 3: Model.contact_budget, limit_budget
TASK_KEY = "task"  # the scene's lowered task as JSON text (runtime/task.py); absent without a task


def model_arrays(m: Model) -> dict[str, np.ndarray]:
    """Every array of the model under a stable name, plus `meta` (JSON) for the scalars."""
    arrays: dict[str, np.ndarray] = {}
    meta = {"format": FORMAT, "scalars": {}, "groups": []}
    for name in Model.static_fields:
        v = getattr(m, name)
        if isinstance(v, Static):
            arrays[f"static/{name}"] = v.array
        elif name == "pair_groups":
            for k, g in enumerate(v):
                meta["groups"].append({"kernel": g.kernel, "ncon": g.ncon})
                arrays[f"group/{k}/geom1"] = g.geom1.array
                arrays[f"group/{k}/geom2"] = g.geom2.array
        elif isinstance(v, tuple):
            meta["scalars"][name] = list(v)
        else:
            meta["scalars"][name] = v
    for name in Model.leaf_fields:
        v = getattr(m, name)
        if name in ("geom_mesh", "geom_hfield"):
            for g, d in enumerate(v):
                if d is not None:
                    for field, a in zip(d._fields, d):
                        arrays[f"{name}/{g}/{field}"] = np.asarray(a)
        else:
            arrays[f"value/{name}"] = np.asarray(v)
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    return arrays


def save_model(m: Model, path) -> None:
    import io

    buf = io.BytesIO()
    arrays = model_arrays(m)
    np.savez(buf, **{k: arrays[k] for k in sorted(arrays)})
    atomic_write_bytes(path, buf.getvalue())


def load_model(path) -> Model:
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    meta = json.loads(str(data["meta"]))
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: model format {meta.get('format')} is not {FORMAT}; recompile the scene")
    kw = {}
    for name in Model.static_fields:
        if f"static/{name}" in data:
            kw[name] = Static(data[f"static/{name}"])
        elif name == "pair_groups":
            kw[name] = tuple(
                PairGroup(g["kernel"], Static(data[f"group/{k}/geom1"]), Static(data[f"group/{k}/geom2"]),
                          g["ncon"]) for k, g in enumerate(meta["groups"]))
        else:
            v = meta["scalars"][name]
            kw[name] = tuple(v) if isinstance(v, list) else v
    ngeom = kw["ngeom"]
    for name in Model.leaf_fields:
        if name in ("geom_mesh", "geom_hfield"):
            cls = ConvexData if name == "geom_mesh" else HeightFieldData
            per = []
            for g in range(ngeom):
                keys = [f"{name}/{g}/{f}" for f in cls._fields]
                per.append(cls(*(data[k] for k in keys)) if keys[0] in data else None)
            kw[name] = tuple(per)
        else:
            kw[name] = jnp.asarray(data[f"value/{name}"])
    return Model(**kw)


def load_task(path):
    """The task stored in a model file (a runtime.task.TaskSpec), or None when the scene has none."""
    from .task import TaskSpec

    with np.load(path, allow_pickle=False) as z:
        if TASK_KEY not in z.files:
            return None
        return TaskSpec.from_json(str(z[TASK_KEY]))


def load_module(path):
    """Import a generated `<scene>_step.py` by path (its model loads from the .npz beside it)."""
    path = pathlib.Path(path).resolve()
    name = f"scenec_generated_{path.stem}_{abs(hash(str(path))):x}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
