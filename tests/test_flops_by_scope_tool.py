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
