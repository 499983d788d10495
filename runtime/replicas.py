"""One program on every host device, compiled once: XLA replicas instead of a partitioned program.

Where it sits: runtime/, beside step.py, whose `jit_step` (the generated `<scene>_step.step`, a call
from Python per control step) runs a batch split over the host's CPU devices through it, as do
`scenec run`'s rollout (compiler/cmd_run.py) and the Gym vector env (envs/gym.py). Input: a
function of arrays whose first axis is the batch and whose environments do not interact, and
arguments placed over the devices (split along the first axis, or replicated: the model). Output:
that function's results, split over the devices along their first axis as `step` returns a batch.

Why: inside a caller's jit, `step` splits a batch with `shard_map`, and the program it is part of is
an SPMD-partitioned one; XLA runs its partitioner on every such compile (the round trip of the whole
module through Shardy's dialect and the SPMD pass): 0.36 s of Ant's 2.0 s and about 0.5 s of
Humanoid's 3.4 s XLA compile. A function whose environments are independent needs nothing
partitioned: traced and compiled for one device's share of the batch with `num_replicas` = devices
and one partition, XLA compiles it once, with no partitioner, and runs one copy of it (a replica)
on each device's own buffers, at once (how `jax.pmap` compiled before jax built it on `shard_map`).
Cold compile of `jit_step`'s program at batch 1024 on the 2-core machine, fresh processes in turn
(2026-12-07): Ant 2.70–3.05 s as a partitioned program, 2.21–2.56 s as replicas (trace + lower
0.51–0.65 → 0.46–0.59 s, XLA 2.17–2.40 → 1.73–1.97 s); Humanoid 4.15–4.32 s → 3.59–3.75 s. The
per-device arithmetic is the partitioned program's (Ant at 1024: the same results bit for bit; at
64 within float32 rounding, the two compiled apart; tests/test_replicas.py). A call from Python
goes through `execute_sharded` and jax's result handlers instead of the jit's C++ dispatch: the
same speed where a call's work is a few milliseconds (Ant at 256 and 1024), about 5% slower at
1.3 ms (Ant at 64), the lightest batch `jit_step` splits.

What it uses of jax beyond its public API (pinned by pyproject's jax range): `jax._src.compiler`'s
compile options and its compile through jax's persistent cache (so a cache directory set for jax
serves these programs too), and the loaded executable's `execute_sharded`. Where any of that is
missing or refuses the program, `Replicas.compile` raises `Unavailable`, and the caller keeps its
`jax.jit` (step.jit_step does). SCENEC_REPLICAS=0 keeps the partitioned programs (`enabled`):
`SCENEC_REPLICAS=0 scenec bench scenes/ant.yaml --batch 1024` times the generated step as before.
"""

from __future__ import annotations

import dataclasses
import os
import warnings

import jax
import numpy as np


def enabled() -> bool:
    """Whether split batches run as replicas: SCENEC_REPLICAS=0 turns them off, and every split batch
    runs as one partitioned program again (to weigh the two, or to step around a problem here); so
    do jax's `jax_debug_nans` and `jax_debug_infs`, whose checks run in the jit's dispatch."""
    if jax.config.jax_debug_nans or jax.config.jax_debug_infs:
        return False
    return os.environ.get("SCENEC_REPLICAS", "1") != "0"


class Unavailable(Exception):
    """This jax cannot build or run the replicated program (its internals moved, or the function
    needs something a plain replicated program does not carry: host callbacks, hoisted constants, an
    output without the batch axis)."""


def say_unavailable(what: str, e: Unavailable, stacklevel: int = 3) -> None:
    """The one warning each user of replicas gives when it falls back to its partitioned jit."""
    warnings.warn(f"scenec: {what} runs as one partitioned program instead of replicas (it compiles "
                  f"slower): {e}", stacklevel=stacklevel)


@dataclasses.dataclass(frozen=True)
class Program:
    """A compiled replicated program: call it with the arguments' leaves in the order the function's
    arguments flatten (each a jax.Array on `split` or `whole`), get the results' pytree."""
    executable: object            # jaxlib LoadedExecutable, one replica per device
    out_tree: object
    handlers: tuple               # jax's result handlers: the replicas' buffers → one split array

    def __call__(self, leaves):
        results = self.executable.execute_sharded(leaves)
        return jax.tree_util.tree_unflatten(self.out_tree, results.consume_with_handlers(list(self.handlers)))

    def as_text(self) -> str:
        """The optimised HLO module's text (as jax's `Compiled.as_text`)."""
        return self.executable.hlo_modules()[0].to_string()

    def memory_analysis(self):
        """XLA's buffer sizes for one device's program (as jax's `Compiled.memory_analysis`)."""
        return self.executable.get_compiled_memory_stats()


@dataclasses.dataclass(frozen=True)
class Lowered:
    """fn lowered for one device's share (`Replicas.lower`); `compile()` as jax's Lowered."""
    owner: Replicas
    module: object                # the StableHLO module (an MLIR ir.Module)
    out_info: object              # one device's results: a pytree of ShapeDtypeStruct
    nargs: int                    # the arguments' leaves

    def compile(self) -> Program:
        return self.owner.compile(self)


class Replicas:
    """`fn` compiled once per signature for one device's share of the batch, run on every device.

    `devices`: the host devices, in the order of the batch's parts; `split` and `whole` are where its
    arguments lie (the batch split along the first axis / replicated). `lower` traces and lowers,
    `compile` compiles (the two stages `scenec bench` times); calling compiles what it has not seen."""

    def __init__(self, fn, devices):
        self.fn = fn
        self.devices = tuple(devices)
        mesh = jax.sharding.Mesh(np.asarray(self.devices), ("envs",))
        self.split = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("envs"))
        self.whole = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
        self._programs: dict = {}

    def _share(self, x):
        """The aval of one device's part of argument leaf x (split: the first axis divided)."""
        aval = jax.typeof(x)
        n = len(self.devices)
        if x.sharding == self.split:
            if x.ndim == 0 or x.shape[0] % n:
                raise ValueError(f"a split argument of shape {x.shape} does not divide over {n} devices")
            shape = (x.shape[0] // n,) + x.shape[1:]
        elif x.sharding == self.whole:
            shape = x.shape
        else:
            raise ValueError(f"an argument lies on {x.sharding}, neither split nor replicated over "
                             f"{len(self.devices)} devices")
        return jax.ShapeDtypeStruct(shape, aval.dtype, weak_type=aval.weak_type)

    def first_rows(self, batch: int):
        """Each device's first row in a batch of `batch` split over the devices: an int32 array split
        one per device, for a function that computes something for the whole batch (random keys or
        controls) and takes its own share's rows."""
        n = len(self.devices)
        return jax.device_put(np.arange(n, dtype=np.int32) * (batch // n), self.split)

    def _key(self, leaves, tree):
        return tree, tuple((x.shape, x.dtype, x.sharding == self.split) for x in leaves)

    def lower(self, *args) -> Lowered:
        """fn traced and lowered for one device's share of args."""
        leaves, tree = jax.tree_util.tree_flatten(args)
        shares = jax.tree_util.tree_unflatten(tree, [self._share(x) for x in leaves])
        lowered = jax.jit(self.fn, keep_unused=True).trace(*shares).lower()
        lowering = getattr(lowered, "_lowering", None)
        compile_args = getattr(lowering, "compile_args", None)
        if compile_args is None or not hasattr(lowering, "const_args"):
            raise Unavailable("jax's Lowered object has no compile_args (its internals moved)")
        if (compile_args.get("host_callbacks") or compile_args.get("ordered_effects")
                or compile_args.get("tuple_args") or lowering.const_args):
            raise Unavailable("the function needs host callbacks, effects, tupled or hoisted arguments")
        return Lowered(self, lowered.compiler_ir("stablehlo"), lowered.out_info, len(leaves))

    def compile(self, lowered: Lowered) -> Program:
        """One replicated executable from `lower`'s result."""
        module, out_info, nargs = lowered.module, lowered.out_info, lowered.nargs
        n = len(self.devices)
        out_leaves, out_tree = jax.tree_util.tree_flatten(out_info)
        if any(len(o.shape) == 0 for o in out_leaves):
            raise Unavailable("a result has no batch axis to join the replicas' parts along")
        try:
            from jax._src import compiler
            from jax._src.lib import xla_client

            client = self.devices[0].client
            ids = np.asarray([[d.id] for d in self.devices])
            options = compiler.get_compile_options(num_replicas=n, num_partitions=1,
                                                   device_assignment=ids, backend=client)
            executable = compiler.compile_or_get_cached(
                client, module, np.asarray(self.devices, dtype=object).reshape(n, 1), options, [],
                xla_client.DeviceList(self.devices))
            params = len(executable.get_parameter_layouts())
        except (ImportError, AttributeError, TypeError) as e:
            raise Unavailable(f"jax's compile internals moved: {e}") from e
        if params != nargs:
            raise Unavailable(f"the program takes {params} arguments, the function {nargs}")
        try:
            from jax._src.interpreters import pxla

            handlers = tuple(pxla.global_aval_to_result_handler(
                jax.core.ShapedArray((n * o.shape[0],) + tuple(o.shape[1:]), o.dtype), self.split, True)
                for o in out_leaves)
        except (ImportError, AttributeError, TypeError) as e:
            raise Unavailable(f"jax's result handlers moved: {e}") from e
        return Program(executable, out_tree, handlers)

    def program(self, *args) -> Program:
        """The program for args' signature (their pytree, shapes, dtypes and placements), compiled
        the first time it is asked for."""
        leaves, tree = jax.tree_util.tree_flatten(args)
        key = self._key(leaves, tree)
        if key not in self._programs:
            self._programs[key] = self.compile(self.lower(*args))
        return self._programs[key]

    def __call__(self, *args):
        return self.program(*args)(jax.tree_util.tree_leaves(args))
