"""Checkpoints of a training run and saved policies: plain .npz files, written atomically.

Where it sits: runtime/train, used by the runner (`scenec train`, `--resume`) and by `scenec play`.

A checkpoint holds every leaf of the learner's state (parameters, optimizer state, observation
statistics, the environments' states, random keys, counters) in flattening order, plus a JSON `meta`
(algorithm, configuration, seed, progress). Loading rebuilds the state's structure from a fresh
`init` of the same learner and refuses a file whose leaves do not match it one for one (shape and
dtype), so a resumed run continues bit for bit where the interrupted one stopped.

A policy file holds the policy network's layers, the observation statistics and the `PolicySpec`
(JSON); `load_policy` gives back a jittable `act(obs) -> action`.
"""

from __future__ import annotations

import io
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

from ..io import atomic_write_bytes
from .networks import PolicySpec
from .normalize import normalize

# 2: PPO's and APG's optimizer state is Adam's over the parameters as one vector (optax.flatten), so a
# format-1 checkpoint of theirs no longer fits; refused by its format, with that said.
CHECKPOINT_FORMAT = 2
POLICY_FORMAT = 1


class CheckpointError(Exception):
    """A checkpoint or policy file that cannot be used (missing, damaged, or from another run)."""


def _npz_bytes(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def save_checkpoint(path, state, meta: dict) -> None:
    leaves = jax.tree_util.tree_leaves(state)
    arrays = {f"leaf_{i:05d}": np.asarray(x) for i, x in enumerate(leaves)}
    arrays["meta"] = np.array(json.dumps(dict(meta, format=CHECKPOINT_FORMAT, nleaves=len(leaves)),
                                         sort_keys=True))
    atomic_write_bytes(path, _npz_bytes(arrays))


def read_meta(path) -> dict:
    try:
        with np.load(path, allow_pickle=False) as z:
            return json.loads(str(z["meta"]))
    except (OSError, KeyError, ValueError) as e:
        raise CheckpointError(f"{path}: not a readable checkpoint ({e})") from None


def load_checkpoint(path, template) -> tuple[object, dict]:
    """(state shaped like `template` (arrays or jax.ShapeDtypeStructs, e.g. from jax.eval_shape),
    meta). Raises CheckpointError when the leaves do not match."""
    path = pathlib.Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            leaves = [z[f"leaf_{i:05d}"] for i in range(int(meta["nleaves"]))]
    except (OSError, KeyError, ValueError) as e:
        raise CheckpointError(f"{path}: not a readable checkpoint ({e})") from None
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}: checkpoint format {meta.get('format')} is not {CHECKPOINT_FORMAT} "
                              "(written by another version of scenec: start the run afresh)")
    want, treedef = jax.tree_util.tree_flatten(template)
    if len(want) != len(leaves):
        raise CheckpointError(f"{path}: the checkpoint has {len(leaves)} arrays, this run's state "
                              f"{len(want)}: it was written by another algorithm or configuration")
    out = []
    for i, (w, got) in enumerate(zip(want, leaves)):  # template leaves: arrays or ShapeDtypeStructs
        if tuple(w.shape) != got.shape or np.dtype(w.dtype) != got.dtype:
            raise CheckpointError(f"{path}: array {i} is {got.dtype}{list(got.shape)}, this run expects "
                                  f"{w.dtype}{list(w.shape)}: the configuration (environments, network "
                                  "sizes, ...) differs from the interrupted run's")
        out.append(jnp.asarray(got))
    return jax.tree_util.tree_unflatten(treedef, out), meta


def save_policy(path, spec: PolicySpec, params, stats, meta: dict | None = None) -> None:
    arrays = {}
    for i, layer in enumerate(params):
        arrays[f"layer_{i:03d}_w"] = np.asarray(layer["w"])
        arrays[f"layer_{i:03d}_b"] = np.asarray(layer["b"])
    for k, v in stats.items():
        arrays[f"normalizer_{k}"] = np.asarray(v)
    arrays["meta"] = np.array(json.dumps({"format": POLICY_FORMAT, "spec": spec.to_json(),
                                          "nlayers": len(params), **(meta or {})}, sort_keys=True))
    atomic_write_bytes(path, _npz_bytes(arrays))


def load_policy(path):
    """(spec, params, normalizer statistics, meta) of a saved policy."""
    path = pathlib.Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            params = [{"w": jnp.asarray(z[f"layer_{i:03d}_w"]), "b": jnp.asarray(z[f"layer_{i:03d}_b"])}
                      for i in range(int(meta["nlayers"]))]
            stats = {k: jnp.asarray(z[f"normalizer_{k}"]) for k in ("count", "mean", "m2")}
    except (OSError, KeyError, ValueError) as e:
        raise CheckpointError(f"{path}: not a readable policy file ({e})") from None
    if meta.get("format") != POLICY_FORMAT:
        raise CheckpointError(f"{path}: policy format {meta.get('format')} is not {POLICY_FORMAT}")
    return PolicySpec.from_json(meta["spec"]), params, stats, meta


def policy_function(spec: PolicySpec, params, stats):
    """act(obs) -> action, deterministic (jittable, vmappable)."""
    def act(obs):
        return spec.deterministic(params, normalize(stats, obs))
    return act
