"""scenec.runtime's XLA flags are CPU flags: they are set only where jax will run on its CPU backend.

An accelerator plugin parses XLA_FLAGS as well and stops the process at the first flag it does not
know (seen on an H200 with jax-cuda13-plugin 0.11.2: "Unknown flag in XLA_FLAGS:
--xla_cpu_use_fusion_emitters=false"), so `cpu_backend_expected` decides before jax starts."""

import os
import pathlib
import subprocess
import sys

import pytest

import scenec.runtime as runtime


@pytest.mark.parametrize("platforms, cpu", [("cpu", True), ("cpu,cuda", True), ("cuda", False),
                                            ("cuda,cpu", False), ("tpu", False), (" CPU ", True)])
def test_jax_platforms_decides(monkeypatch, platforms, cpu):
    monkeypatch.setenv("JAX_PLATFORMS", platforms)
    assert runtime.cpu_backend_expected() is cpu


def test_an_installed_accelerator_plugin_means_no_cpu_flags(tmp_path, monkeypatch):
    # jax finds plugins as modules of the `jax_plugins` namespace package: make one visible
    plugin = tmp_path / "jax_plugins" / "xla_scenec_test_gpu"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text("")
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert runtime.cpu_backend_expected() is False
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")       # the user asks for the CPU: the flags apply
    assert runtime.cpu_backend_expected() is True


@pytest.mark.parametrize("platforms, expect_flags", [("cpu", True), ("cuda", False)])
def test_importing_the_runtime_sets_flags_only_for_the_cpu(platforms, expect_flags):
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "SCENEC_XLA_DEFAULTS")}
    env["JAX_PLATFORMS"] = platforms
    code = "import os, scenec.runtime; print(os.environ.get('XLA_FLAGS', ''))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    flags = out.stdout.strip()
    assert ("--xla_cpu_use_fusion_emitters=false" in flags) is expect_flags
    if not expect_flags:
        assert flags == ""


def test_avx512_is_read_from_the_cpu_flags(tmp_path):
    # /proc/cpuinfo's "flags" line, as Linux writes it (one per core; the first decides)
    wide = tmp_path / "wide"
    wide.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx2 fma avx512f avx512dq\n")
    narrow = tmp_path / "narrow"
    narrow.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma avx512_vnni_lookalike\n")
    assert runtime.has_avx512(str(wide)) is True
    assert runtime.has_avx512(str(narrow)) is False            # a longer name is not the flag
    assert runtime.has_avx512(str(tmp_path / "missing")) is False


@pytest.mark.parametrize("avx512", [True, False])
def test_wide_vectors_only_where_the_cpu_has_them(monkeypatch, avx512):
    monkeypatch.setattr(runtime, "has_avx512", lambda *a: avx512)
    flags = runtime._defaults()
    assert (flags.get("--xla_cpu_prefer_vector_width") == "512") is avx512
    assert ("--xla_cpu_prefer_vector_width" in flags) is avx512


@pytest.mark.parametrize("flags, size", [("--xla_cpu_prefer_vector_width=512", 12), ("", 32),
                                         ("--xla_cpu_prefer_vector_width=256", 32)])
def test_the_elimination_unroll_follows_the_vector_width(monkeypatch, flags, size):
    # dynamics takes two elimination steps per loop iteration from a smaller block with 512-bit vectors
    # (measured faster there, slower with 256-bit ones)
    from scenec.runtime import dynamics

    monkeypatch.setenv("XLA_FLAGS", flags)
    assert dynamics._inverse_unroll_from() == size


_HOISTED = """
import scenec.runtime, jax, jax.numpy as jnp
f = jax.jit(lambda x: jax.lax.scan(lambda c, _: (jnp.sin(c) * 1.5, None), x, None, length=7)[0])
print("xla_cpu_small_call" in f.lower(jnp.ones(4096)).compile().as_text())
"""


@pytest.mark.parametrize("defaults, small_loops, hoisted", [("1", None, True), ("1", "1", True),
                                                          ("1", "0", False), ("0", None, False)])
def test_small_loops_become_single_kernels_by_default(defaults, small_loops, hoisted):
    # A loop over 16 kB a turn: over XLA's own 1 kB threshold, under the runtime's SMALL_LOOP_BYTES.
    # Proves this jaxlib still reads the option (an unknown key is ignored silently), that it is on by
    # default, off with SCENEC_SMALL_LOOPS=0 and off with the rest of the defaults.
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "SCENEC_SMALL_LOOPS")}
    env.update(JAX_PLATFORMS="cpu", SCENEC_XLA_DEFAULTS=defaults)
    if small_loops is not None:
        env["SCENEC_SMALL_LOOPS"] = small_loops
    out = subprocess.run([sys.executable, "-c", _HOISTED], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(hoisted)


# A caller's scan over 20 control steps of one pendulum, and its gradient: prints how many while loops
# of 20 turns the ENTRY computation keeps (1 forward, 2 with the gradient's backward scan), with the
# step's marker; with the marker replaced by the identity ("off"), the forward program's only (its
# hoisted single kernel compiles slowly, the point of the marker).
_CALLER_LOOP = r"""
import re, sys
import scenec.runtime, jax, jax.numpy as jnp
from scenec.compiler import api
from scenec.runtime import step as rstep
if sys.argv[1] == "off":
    rstep.keep_out_of_small_loops = lambda x: x
c = api.compile(sys.argv[2], measure_jit=False)
def final(v):
    s = c.init(qd=jnp.ones(c.model.nv) * v)
    s, _ = jax.lax.scan(lambda s, _: (rstep.step(c.model, s, jnp.zeros(c.model.nu)), None), s, None, length=20)
    return jnp.sum(s.q)
counts = []
for f in (jax.jit(final), jax.jit(jax.grad(final)))[:2 if sys.argv[1] == "on" else 1]:
    text = f.lower(jnp.float32(0.5)).compile().as_text()
    entry = text[text.index("\nENTRY "):]
    entry = entry[:entry.index("\n}")]
    counts.append(len(re.findall(r'while\(.*"known_trip_count":\{"n":"20"\}', entry)))
print(*counts)
"""


@pytest.mark.parametrize("marker, loops", [pytest.param("on", "1 2", marks=pytest.mark.slow), ("off", "0")])
def test_a_callers_loop_around_the_step_stays_a_loop(marker, loops):
    # With the small-loop threshold a single environment's whole rollout fits under it, and XLA would
    # compile the caller's scan, and its gradient's backward scan, as one kernel each (slowly: a
    # 500-step gradient 35 -> 166 s). The step's sort marker keeps both loops; without it ("off") the
    # forward one is hoisted, which shows that the count can fail.
    scene = pathlib.Path(__file__).resolve().parent.parent / "scenes" / "pendulum.yaml"
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "SCENEC_SMALL_LOOPS")}
    env.update(JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", _CALLER_LOOP, marker, str(scene)], env=env,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == loops


def test_the_marker_changes_no_value():
    # x·(1 + 0) in the marker: the same bits, and the same gradient (this process has the threshold
    # set, as by default, unless SCENEC_SMALL_LOOPS=0 or SCENEC_XLA_DEFAULTS=0).
    import jax
    import jax.numpy as jnp

    from scenec.runtime import step as rstep

    x = jnp.asarray([[-1.5, 0.0, 2.25], [3.0, -0.0, 1e-30]], jnp.float32)
    assert (jnp.asarray(rstep._marked(x)) == x).all()
    g = jax.grad(lambda v: jnp.sum(rstep._marked(v) ** 2))(x)
    assert (g == 2 * x).all()
