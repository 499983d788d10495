"""`scenec bench`'s memory figures (compiler/cmd_bench.py): what XLA allocates for one call of the
step, and the process's peak resident memory. Checked against sizes worked out from the arrays the
step takes and returns, and against the machine's memory (a unit mix-up of kB and bytes would put the
resident figure a thousand times off)."""

from __future__ import annotations

import os
import pathlib

import jax
import numpy as np
import pytest

from scenec.compiler import api, cmd_bench
from scenec.runtime import step as rstep

PENDULUM = pathlib.Path(__file__).resolve().parent.parent / "scenes" / "pendulum.yaml"
JAX_PYTHON_MB = 50     # a process that has imported jax and run a program is larger than this


@pytest.fixture(scope="module")
def pendulum():
    return api.compile(PENDULUM, measure_jit=False).model


def _state_bytes(model, batch: int) -> int:
    state = rstep.init(model)
    per_env = sum(np.asarray(x).nbytes for x in jax.tree_util.tree_leaves(state))
    return batch * (per_env + model.nu * 4)


@pytest.mark.parametrize("batch", [4, 256])
def test_step_memory_holds_at_least_its_arguments_and_results(pendulum, batch):
    p = cmd_bench.bench_point(pendulum, batch, steps=2, repeats=1)
    # arguments: the batch of states and actions; results: a batch of states (some may reuse an
    # argument's buffer, so at least the larger of the two)
    assert p["step_memory_bytes"] >= _state_bytes(pendulum, batch)
    rss = p["peak_rss_bytes"]
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert JAX_PYTHON_MB * 1e6 < rss < physical
    assert rss >= p["step_memory_bytes"]


def test_the_table_prints_both_memory_columns(pendulum, capsys):
    assert cmd_bench.run(cmd_bench_args(str(PENDULUM))) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "batch" in line and "trace s" in line)
    assert header.split()[-4:] == ["step", "MB", "RSS", "MB"]


def cmd_bench_args(scene: str):
    import argparse

    parser = argparse.ArgumentParser()
    cmd_bench.add_arguments(parser)
    return parser.parse_args([scene, "--batch", "4", "--steps", "2", "--repeats", "1"])
