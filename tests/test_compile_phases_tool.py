"""tools/compile_phases.py: its sums of profiler spans (each phase the union of its spans on the
timeline, by profile_scopes.covered, tested in test_profile_scopes_tool.py; the rest what the top-level
phases leave of the compile), and the span names it reads as this jaxlib's XLA writes them."""

import pathlib

import pytest

from conftest import load_tool

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _tool():
    return load_tool("compile_phases")


def _span(name, start, stop, tid=1):
    return {"ph": "X", "name": name, "ts": start, "dur": stop - start, "tid": tid}


def test_phases_are_unions_and_the_rest_is_the_compile_outside_them():
    tool = _tool()
    events = [
        _span("PjRtCpuClient::Compile", 0, 100),
        _span("spmd-partitioner (jit_f)", 5, 25), _span("shardy-xla", 10, 20),
        _span("HLO passes through layout assignment (jit_f)", 25, 35),
        _span("HLO passes after layout assignment (jit_f)", 40, 50),
        _span("Codegen", 50, 90),
        # codegen's tasks on two threads, one of them partly outside the span (not a codegen task)
        _span("TaskDispatcher::dispatch", 50, 80, tid=2), _span("TaskDispatcher::dispatch", 55, 90, tid=3),
        _span("TaskDispatcher::dispatch", 85, 95, tid=2),
        {"ph": "i", "name": "Codegen", "ts": 0},                   # not a complete span: ignored
    ]
    s = tool.phase_seconds(events)
    us = 1e-6
    assert s["compile"] == pytest.approx(100 * us)
    assert s["spmd partitioner"] == pytest.approx(20 * us) and s["of it, Shardy"] == pytest.approx(10 * us)
    assert s["HLO passes"] == pytest.approx(20 * us) and s["LLVM codegen"] == pytest.approx(40 * us)
    assert s["rest"] == pytest.approx((100 - 20 - 20 - 40) * us)       # Shardy is inside the partitioner
    assert tool.codegen_tasks(events) == pytest.approx([35 * us, 30 * us])


def test_module_size_counts_instructions_and_fusions():
    text = ("HloModule m\n\n%fused_computation (p: f32[4]) -> f32[4] {\n  %p = f32[4]{0} parameter(0)\n"
            "  ROOT %m = f32[4]{0} multiply(%p, %p)\n}\n\nENTRY %main (x: f32[4]) -> f32[4] {\n"
            "  %x = f32[4]{0} parameter(0)\n  ROOT %f = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused_computation\n}\n")
    assert _tool().module_size(text) == {"instructions": 4, "fusions": 1}


def test_scope_sizes_count_instructions_by_the_stage_they_came_from():
    # Three instructions with a jax scope (two of the kinematics, one of the constraints' collide), one
    # without (a parameter XLA made): counted by profile_scopes' stage keys, largest first.
    meta = 'metadata={{op_name="jit(step)/shard_map/while/body/{}"}}'
    text = ("ENTRY %main (x: f32[4]) -> f32[4] {\n  %x = f32[4]{0} parameter(0)\n"
            f"  %a = f32[4]{{0}} multiply(%x, %x), {meta.format('constraints/collide/mul')}\n"
            f"  %b = f32[4]{{0}} add(%a, %x), {meta.format('kinematics/add')}\n"
            f"  ROOT %c = f32[4]{{0}} sine(%b), {meta.format('kinematics/sin')}\n}}\n")
    sizes = _tool().scope_sizes(text)
    assert sizes == {"kinematics": 2, "constraints/collide": 1}
    assert list(sizes) == ["kinematics", "constraints/collide"]


@pytest.mark.slow   # a real compile under the profiler, with the slow checks
def test_this_jaxlib_writes_the_spans_the_tool_reads():
    # A real compile of the pendulum's step: the compile and codegen spans must be found under these
    # names (a jaxlib that renames them would make the tool print nothing for them).
    r = _tool().measure(str(ROOT / "scenes" / "pendulum.yaml"), batch=4, steps=1, rollout=False)
    assert {"compile", "LLVM codegen", "rest"} <= set(r["phases"])
    assert 0 < r["phases"]["LLVM codegen"] <= r["phases"]["compile"] <= r["compile_wall_s"]
    assert r["codegen_tasks"] >= 1 and r["instructions"] > 0
    assert sum(r["by_scope"].values()) <= r["instructions"] and r["by_scope"].get("kinematics", 0) > 0
