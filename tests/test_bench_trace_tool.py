"""tools/bench_trace.py times the step's trace and lowering with the garbage collector paused (as `step`
does) and running, and undoes the second variant afterwards."""

import gc
import pathlib

import pytest

from scenec.runtime import step as rstep

from conftest import load_tool

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.slow   # a tool's check (14 s), with the slow checks
def test_each_variant_traces_as_it_says_and_the_pause_is_restored(monkeypatch):
    tool = load_tool("bench_trace")
    paused = rstep.gc_paused
    original = rstep.split_devices
    during = []           # the collector's state while the step is traced
    monkeypatch.setattr(rstep, "split_devices", lambda batch, m: (during.append(gc.isenabled()), original(batch, m))[1])
    for variant in (True, False):
        out = tool._once(str(ROOT / "scenes" / "pendulum.yaml"), 4, variant)
        assert set(out) == {"trace_s", "lower_s"} and all(v > 0 for v in out.values())
        assert rstep.gc_paused is paused
    assert during == [False, True] and gc.isenabled()
