"""compiler/hlo_cost.py: XLA's cost analysis with loops weighted by their trip counts, checked against
programs whose operation counts are known by hand."""

import jax
import jax.numpy as jnp
import pytest

from scenec.compiler.hlo_cost import loop_weighted_cost

N = 1000


def test_nested_scans_count_every_iteration():
    # Outer scan of 10: an inner scan of 4 multiplications, then a multiply-add (2 flops) per element.
    # True count: 10 × (4·N + 2·N) = 60 N flops; XLA's plain analysis says about 3 N.
    def body(c, _):
        c = jax.lax.scan(lambda d, _: (d * 3.0, None), c, None, length=4)[0]
        return c * 2.0 + 1.0, None

    compiled = jax.jit(lambda x: jax.lax.scan(body, x, None, length=10)[0]).lower(jnp.ones(N)).compile()
    plain = compiled.cost_analysis()
    plain = plain[0] if isinstance(plain, (list, tuple)) else plain
    cost = loop_weighted_cost(compiled)
    assert plain["flops"] < 4 * N
    # Loop counters add a few integer adds per iteration: allow 1% over the elementwise count.
    assert 60 * N <= cost["flops"] <= 60 * N * 1.01
    assert cost["unknown_trip_counts"] == 0
    # Each iteration reads and writes the carry at least once: 4 bytes each way per element.
    assert cost["bytes accessed"] >= 40 * 8 * N


def test_program_without_loops_is_unchanged():
    compiled = jax.jit(lambda x: jnp.sin(x) * x + 1.0).lower(jnp.ones(N)).compile()
    plain = compiled.cost_analysis()
    plain = plain[0] if isinstance(plain, (list, tuple)) else plain
    cost = loop_weighted_cost(compiled)
    assert cost["flops"] == plain["flops"]
    assert cost["bytes accessed"] == plain["bytes accessed"]


def test_loops_inside_a_conditional_are_weighted():
    # The step's substeps run inside a cond on the loop's counter (runtime/step.py): a scan of 5
    # multiplications in the taken branch, 3 outer iterations: 15 N flops, not 3 N.
    def body(c, i):
        heavy = lambda d: jax.lax.scan(lambda e, _: (e * 3.0, None), d, None, length=5)[0]  # noqa: E731
        return jax.lax.cond(i < 100, heavy, lambda d: d, c), None

    compiled = jax.jit(lambda x: jax.lax.scan(body, x, jnp.arange(3))[0]).lower(jnp.ones(N)).compile()
    cost = loop_weighted_cost(compiled)
    assert 15 * N <= cost["flops"] <= 15 * N * 1.01
    assert cost["unknown_trip_counts"] == 0


def test_loops_inside_a_hoisted_call_are_weighted():
    # XLA's CPU backend turns a while loop that touches under its byte threshold (1 kB by default) into
    # a `call` compiled as one kernel: the loops inside that call are weighted as well. The outer scan
    # of the first test on 16 floats: 10 × (4 + 2) × 16 flops.
    def body(c, _):
        c = jax.lax.scan(lambda d, _: (d * 3.0, None), c, None, length=4)[0]
        return c * 2.0 + 1.0, None

    compiled = jax.jit(lambda x: jax.lax.scan(body, x, None, length=10)[0]).lower(jnp.ones(16)).compile()
    if "xla_cpu_small_call" not in compiled.as_text():
        pytest.skip("this XLA did not hoist the loop into a call")
    cost = loop_weighted_cost(compiled)
    assert 60 * 16 <= cost["flops"] <= 60 * 16 * 1.1      # loop counters: a few integer adds each
    assert cost["unknown_trip_counts"] == 0
