"""The test helper that tells a data-dependent branch from one on a loop counter (jaxpr_util), on
small functions whose answer is known by construction."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxpr_util import data_dependent_branches


def _on_value(x):
    return jax.lax.cond(x.sum() > 0, lambda y: y + 1, lambda y: y, x)


def _on_counter(x):
    """The step's form: a scan over an iota, a cond on the scanned counter."""
    def body(c, i):
        return jax.lax.cond(i < 3, lambda y: y * 2, lambda y: y, c), None
    return jax.lax.scan(body, x, jnp.arange(4))[0]


def _on_carried_counter(x):
    """A counter carried by the loop: the helper does not follow carries, so it counts as a value."""
    def body(c, _):
        j, y = c
        return (j + 1, jax.lax.cond(j < 3, lambda y: y * 2, lambda y: y, y)), None
    return jax.lax.scan(body, (0, x), None, length=4)[0][1]


def _on_counter_and_value(x):
    def body(c, i):
        return jax.lax.cond((i < 3) & (c.sum() < 5), lambda y: y * 2, lambda y: y, c), None
    return jax.lax.scan(body, x, jnp.arange(4))[0]


def test_branches_on_values_are_found_and_on_counters_are_not():
    x = jnp.ones(3)
    found = lambda f: data_dependent_branches(jax.make_jaxpr(f)(x))     # noqa: E731
    assert found(_on_value) == {"cond"}
    assert found(_on_counter) == set()
    assert found(_on_carried_counter) == {"cond"}
    assert found(_on_counter_and_value) == {"cond"}
    assert found(lambda x: jax.lax.while_loop(lambda y: y.sum() < 10, lambda y: y + 1, x)) == {"while"}
    assert found(lambda x: jax.lax.switch(jnp.argmax(x), [lambda y: y, lambda y: -y, lambda y: 2 * y], x)) == {"cond"}
    # through jit, vmap and reverse-mode gradients (the backward loop reads the counter's residuals)
    assert found(jax.jit(_on_counter)) == set()
    assert data_dependent_branches(jax.make_jaxpr(jax.vmap(_on_counter))(jnp.ones((2, 3)))) == set()
    assert found(jax.grad(lambda x: _on_counter(x).sum())) == set()
    assert found(jax.grad(lambda x: _on_value(x).sum())) == {"cond"}
