"""scenec.runtime's XLA flags are CPU flags: they are set only where jax will run on its CPU backend.

An accelerator plugin parses XLA_FLAGS as well and stops the process at the first flag it does not
know (seen on an H200 with jax-cuda13-plugin 0.11.2: "Unknown flag in XLA_FLAGS:
--xla_cpu_use_fusion_emitters=false"), so `cpu_backend_expected` decides before jax starts."""

import os
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


@pytest.mark.parametrize("defaults, small_loops, hoisted", [("1", "1", True), ("1", None, False),
                                                          ("0", "1", False)])
def test_small_loops_become_single_kernels_when_asked(defaults, small_loops, hoisted):
    # A loop over 16 kB a turn: over XLA's own 1 kB threshold, under the runtime's SMALL_LOOP_BYTES.
    # Proves this jaxlib still reads the option (an unknown key is ignored silently), and that it is
    # opt-in (SCENEC_SMALL_LOOPS=1) and off with the rest of the defaults.
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "SCENEC_SMALL_LOOPS")}
    env.update(JAX_PLATFORMS="cpu", SCENEC_XLA_DEFAULTS=defaults)
    if small_loops is not None:
        env["SCENEC_SMALL_LOOPS"] = small_loops
    out = subprocess.run([sys.executable, "-c", _HOISTED], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(hoisted)
