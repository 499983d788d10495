"""tools/flops_by_scope.py's count: on a hand-written function whose operations are counted by hand
(elementwise ops one per element, a matrix product two per multiply-add, a reduction one per input
element, a scan's body once per turn, data movement nothing), scope by scope."""

import jax
import jax.numpy as jnp

from conftest import ROOT, load_tool


def _tool():
    return load_tool("flops_by_scope")


def test_counts_match_a_hand_count_scope_by_scope():
    tool = _tool()

    def f(x, a, b, c, v):
        with jax.named_scope("kinematics"):
            y = x * 2.0 + 1.0                                        # (3, 4): 12 + 12
        with jax.named_scope("mass_matrix"):
            z = a @ b                                                # (3, 5) @ (5, 4): 2·5·12
        with jax.named_scope("forces"):
            c, _ = jax.lax.scan(lambda c, _: (jnp.sin(c) * 1.5, None), c, None, length=7)   # 7·(4 + 4)
        with jax.named_scope("constraints"):
            with jax.named_scope("iterations"):
                w = jnp.maximum(v, 0.0)                              # 6
            u = jnp.concatenate([v, v])[::2]                         # data movement: nothing
        with jax.named_scope("integration"):
            s = jnp.sum(y)                                           # a reduction over 12
        return y, z, c, w, u, s

    args = (jnp.ones((3, 4)), jnp.ones((3, 5)), jnp.ones((5, 4)), jnp.ones(4), jnp.ones(6))
    got = dict(tool.count(jax.make_jaxpr(f)(*args)))
    assert {k: v for k, v in got.items() if v} == {"kinematics": 24, "mass_matrix": 120, "forces": 56,
                                                    "constraints/iterations": 6, "integration": 12}


def test_the_tool_runs_on_a_shipped_scene(capsys):
    assert _tool().main([str(ROOT / "scenes" / "pendulum.yaml"), "--batch", "4"]) == 0
    out = capsys.readouterr().out
    assert "kFLOP per environment and control step" in out and "kinematics" in out


# A hand-written optimised module: a while loop of known trip count 5 whose body runs a fused
# multiply-add over (4, 8) in the kinematics scope and a conditional whose branch multiplies (4, 8) in
# the forces scope; after the loop a reduction of (4, 8) to (4,) (its adder not counted: the
# reduction counts one per input element) and a dot (4, 8)·(8, 3) in the mass-matrix scope.
_MODULE = """HloModule m

%fused_mul_add (p0: f32[4,8]) -> f32[4,8] {
  %p0 = f32[4,8]{1,0} parameter(0)
  %c = f32[] constant(2)
  %b = f32[4,8]{1,0} broadcast(%c), dimensions={}
  %mul.1 = f32[4,8]{1,0} multiply(%p0, %b), metadata={op_name="jit(f)/while/body/kinematics/mul"}
  ROOT %add.1 = f32[4,8]{1,0} add(%mul.1, %b), metadata={op_name="jit(f)/while/body/kinematics/add"}
}

%branch_skip (q0: f32[4,8]) -> f32[4,8] {
  ROOT %q0 = f32[4,8]{1,0} parameter(0)
}

%branch_force (q1: f32[4,8]) -> f32[4,8] {
  %q1 = f32[4,8]{1,0} parameter(0)
  ROOT %mul.2 = f32[4,8]{1,0} multiply(%q1, %q1), metadata={op_name="jit(f)/while/body/cond/branch_1_fun/forces/mul"}
}

%body (t: (s32[], f32[4,8])) -> (s32[], f32[4,8]) {
  %t = (s32[], f32[4,8]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %x = f32[4,8]{1,0} get-tuple-element(%t), index=1
  %f = f32[4,8]{1,0} fusion(%x), kind=kLoop, calls=%fused_mul_add, metadata={op_name="jit(f)/while/body/kinematics/add"}
  %one = s32[] constant(1)
  %pred = pred[] compare(%i, %one), direction=LT
  %g = f32[4,8]{1,0} conditional(%pred, %f, %f), branch_computations={%branch_skip, %branch_force}
  %j = s32[] add(%i, %one)
  ROOT %r = (s32[], f32[4,8]{1,0}) tuple(%j, %g)
}

%cond (u: (s32[], f32[4,8])) -> pred[] {
  %u = (s32[], f32[4,8]{1,0}) parameter(0)
  %k = s32[] get-tuple-element(%u), index=0
  %five = s32[] constant(5)
  ROOT %lt = pred[] compare(%k, %five), direction=LT
}

%adder (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (x0: f32[4,8], w: f32[8,3]) -> (f32[4], f32[4,3]) {
  %x0 = f32[4,8]{1,0} parameter(0)
  %w = f32[8,3]{1,0} parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4,8]{1,0}) tuple(%zero, %x0)
  %loop = (s32[], f32[4,8]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"5"}}
  %y = f32[4,8]{1,0} get-tuple-element(%loop), index=1
  %z = f32[] constant(0)
  %sum = f32[4]{0} reduce(%y, %z), dimensions={1}, to_apply=%adder, metadata={op_name="jit(f)/integration/reduce_sum"}
  %dot = f32[4,3]{1,0} dot(%y, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/mass_matrix/dot_general"}
  ROOT %out = (f32[4], f32[4,3]{1,0}) tuple(%sum, %dot)
}
"""


def test_the_optimised_count_weights_loops_and_counts_by_scope():
    got = dict(_tool().optimised_count(_MODULE))
    assert {k: v for k, v in got.items() if v} == {
        "kinematics": 5 * (32 + 32),          # the fused multiply and add, five turns
        "forces": 5 * 32,                     # the conditional's branch, as often as the body
        "integration": 32,                    # one per input element; the adder not counted
        "mass_matrix": 2 * 8 * 12,            # two per multiply-add
        "(no scope)": 5 * 2 + 6,              # the body's compare and add, the condition's (no op_name)
    }


def test_the_tool_compares_with_xla_on_a_shipped_scene(capsys):
    assert _tool().main([str(ROOT / "scenes" / "pendulum.yaml"), "--batch", "4", "--xla"]) == 0
    out = capsys.readouterr().out
    assert "XLA does" in out and "total" in out
