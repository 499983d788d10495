"""tools/profile_scopes.py's interval union, which measures how much of the worker threads' busy time
the thunks fill: overlapping and nested intervals count once, gaps not at all; and its reading of the
optimised HLO text (each instruction's scope path and shape, its loops)."""

from conftest import load_tool


def _tool():
    return load_tool("profile_scopes")


def test_covered_counts_each_instant_once():
    covered = _tool().covered
    assert covered([]) == 0.0
    assert covered([(0, 10)]) == 10
    assert covered([(0, 10), (2, 3), (5, 12)]) == 12            # nested and overlapping: [0, 12]
    assert covered([(20, 25), (0, 10), (10, 11)]) == 16         # unsorted; touching ends join
    assert covered([(0, 1), (3, 4), (6, 8)]) == 4               # gaps are not counted


def test_instructions_reads_names_shapes_scopes_and_loops():
    hlo = "\n".join([
        "  %gather_fusion.3 = f32[52,3,64]{2,1,0} fusion(%p.1, %p.2), kind=kLoop, calls=%fc.3, "
        'metadata={op_name="jit(run)/while/body/constraints/collide/gather" stack_frame_id=9}',
        "  ROOT %while.7 = (s32[], f32[8,64]{1,0}) while(%t.2), condition=%c, body=%b, "
        'metadata={op_name="jit(run)/constraints/iterations/while" stack_frame_id=3}',
        "  %p.1 = f32[18,3,64]{2,1,0} parameter(0)",                     # no metadata: left out
    ])
    op_name, shape, loops = _tool().instructions(hlo)
    assert op_name == {"gather_fusion.3": "jit(run)/while/body/constraints/collide/gather",
                       "while.7": "jit(run)/constraints/iterations/while"}
    assert shape["gather_fusion.3"] == "f32[52,3,64]{2,1,0}" and shape["while.7"] == "(s32[], f32[8,64]{1,0})"
    assert loops == {"while.7"}
    assert _tool().scope_of(op_name["gather_fusion.3"]) == "constraints/collide"
