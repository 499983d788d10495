"""scenec.runtime: everything that is traced — the step, kernels, envs — in jax and numpy only.

Importing this package sets XLA flags for the CPU backend, unless the user has already chosen them or
set SCENEC_XLA_DEFAULTS=0 (each is measured with `scenec bench`; Ant at batch 1024 on 2 cores):
- `--xla_cpu_use_fusion_emitters=false`: XLA's newer CPU fusion emitters compile scenec's step 2×
  slower and run it 1.6× slower (XLA compile 16.9 s → 7.4 s, 12.5k → 20.2k physics steps/s); again
  with jaxlib 0.10.2 and today's step (2-core Intel Xeon, 2026-12-07, `python tools/bench_flags.py
  scenes/ant.yaml --pairs 2 --flags= --flags=--xla_cpu_use_fusion_emitters=true`): the rollout's XLA
  compile 3.15–3.17 s without them, 4.61–4.78 s with them, run speed ×0.99 (rounds 0.92 and 1.06);
- `--xla_cpu_experimental_ynn_fusion_type=` (empty: no YNNPACK fusions; jaxlib 0.10 and later): the
  reductions and small products it takes over run 1.2–1.6× slower than XLA's own loops here, with
  the batch as the fastest-varying axis;
- `--xla_cpu_prefer_vector_width=512`, only on a CPU with AVX-512 (`has_avx512`): XLA's loops then
  take 16 environments per vector instruction instead of 8. On a 2-core AMD EPYC with AVX-512, batch
  1024, one process per run: Humanoid 191k → 215k physics steps/s, Ant 662k → 730k, half_cheetah and
  hopper ×1.19, fetch ×1.12, grasp ×1.05; compile time unchanged. On a 2-core Intel Xeon with
  AVX-512 and AVX512-FP16 (2026-12-06, `python tools/bench_flags.py scenes/humanoid.yaml scenes/ant.yaml
  --pairs 2 --flags= --flags=--xla_cpu_prefer_vector_width=256`), 256 ran Humanoid ×0.80 and Ant ×0.90
  of 512 (every round within 0.01 of that). XLA's default stays 256 on a CPU without AVX-512;
- `--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=700000` (`SMALL_LOOP_BYTES`;
  SCENEC_SMALL_LOOPS=0 leaves it out): XLA's CPU backend runs a program as a sequence of thunks, one
  per fused operation, and pays for dispatching each; a while loop whose body touches fewer bytes
  than this threshold (1 kB by default) is compiled into a single kernel instead (a `call` XLA marks
  `xla_cpu_small_call`). At 700 kB the step's inner loops (the solver's iterations and its block loop,
  contact choice, limit rows, kinematic walk; Ant's mass-matrix elimination too) are single kernels
  for a CPU tile of environments, Ant's tile of 128 as well as Humanoid's of 64. Against no threshold,
  fresh processes taken in turn, batch 1024, median ratio of 2–3 rounds (`python tools/bench_flags.py`),
  four runs over two sessions at 300 kB: Humanoid ×1.04–1.15, half_cheetah ×1.14–1.31, hopper
  ×1.14–1.19, grasp ×1.03, Ant ×0.97–1.01, fetch ×0.83–1.09 (this shared machine's speed moved by up
  to ±30% between rounds), XLA compile time at batch 1024 unchanged. 300 kB kept Ant's loops (all but
  the contact choice) and Humanoid's iteration loop as thunks; 700 kB against 300 kB, the same way:
  Humanoid ×1.036 and ×1.060 (six rounds of two runs, each 1.03–1.08), Ant ×1.14 (1.03–1.14), fetch
  ×1.15, half_cheetah ×1.10, walker2d ×1.02, hopper ×0.99 (three rounds), grasp ×0.96 and ×1.01
  (rounds 0.90–1.36); 1.5 MB: Humanoid ×1.03, Ant ×1.09, noisier. The threshold is in bytes and
  knows nothing of loops, so at small batches it would also take in the substep loop and a caller's
  scan over control steps, whose single kernels compile slowly (a gradient through a 500-step scan of
  one environment, tests/test_contacts_physics.py: 166 s instead of 35 s). XLA leaves alone any loop
  that contains a sort, so the step puts a sort of two integers in each substep (outside its inner
  loops) and one in the step, while the flag is set (`step.keep_out_of_small_loops`): the inner loops
  are single kernels, the loops around them stay thunks, and that gradient's XLA compile takes ×1.16
  its time without the threshold instead of ×8.8 (18.4–19.0 s against 16.1 s, unmarked 91.9 s against
  10.4 s; fresh processes in turn);
- `--xla_force_host_platform_device_count=N`, N the CPU cores this process may use (or
  SCENEC_HOST_DEVICES): one XLA CPU device per core, and `step` splits a large batch over them
  (step.py, `split_devices`). One XLA CPU device runs scenec's step on one core in effect (taskset to a
  single core runs it as fast); two devices on the 2-core machine run Ant at batch 1024 2.0× as fast
  (`python tools/bench_devices.py`). SCENEC_HOST_DEVICES=1 keeps one device (needed when your own
  code maps over the host devices with `pmap` or `shard_map` and calls `step` inside).
Tried and not set: the whole substep as one kernel (2-core Intel Xeon, 2026-12-07; a scratch script
like tools/bench_flags.py, fresh processes in turn, `scenec run`'s rollout at batch 1024, 20 control
steps): the threshold at 20 MB and no `step.keep_out_of_small_loops` marks, so that the substep loop,
the tile loop and the rollout's scan each compile into one kernel, and the elimination's loop too.
Humanoid ran ×1.135, ×1.106, ×1.12 and ×1.08 as fast (four rounds) and Ant ×1.07 and ×1.12, the dispatch
of the substep's thunks gone; but the rollout's XLA compile took 9.5–10.2 s against 4.0–4.2 s
(Humanoid) and 6.7–7.0 s against 3.5 s (Ant): one LLVM function of the whole substep, which XLA's
parallel codegen cannot split, against targets of 4 s and 2 s. At 12 MB without the marks only the
elimination's loop joins the inner loops' kernels (the substep's body touches more), and Humanoid's
speed stayed within the rounds' noise (×0.93 and ×1.06; at 8 MB ×0.86–1.03).
Stacked with the branch-by-branch inverse for Humanoid (since made the default,
`dynamics.BRANCHES_FROM`; alone ×0.98–1.03 in that slower state of the machine) and timed against the
peers in the same `scenec bench --compare mujoco,brax-spring` command (2026-12-07, two rounds, a scratch
script patching both): MuJoCo C ×0.91–0.93 → ×1.16–1.17, Brax spring ×3.65–3.77 → ×4.22–4.41, the step's
XLA compile 2.26–2.33 → 8.25–8.71 s. Neither Humanoid target is met even at that compile time. Nor is
the whole-substep kernel's gain the thunks' dispatch alone: the mass matrix and forces, the inverse and
the constraint stage each as a loop that turns once (a kernel each under the 20 MB threshold, the
substep's marks kept) halved a substep's thunks (308 → 159) and ran ×1.03 (two rounds, XLA compile
2.15–2.18 → 2.79–3.67 s), where the whole substep as one kernel (with the branches) ran ×1.09–1.15 in
the same rounds. In a faster state later that day (three rounds): the whole substep as one kernel ×1.04
with the whole elimination (XLA compile 1.85–2.06 → 5.61–5.68 s; with the tile loop left a loop of
thunks ×1.04 too, 5.22–5.26 s) and ×1.10–1.11 with the branch-by-branch inverse (6.85–7.01 s): the
inverse's many small operations gain most when they are not thunks.
Tried for compile time and not set (2-core AMD EPYC, `python tools/bench_flags.py scenes/humanoid.yaml
scenes/ant.yaml --pairs 2`, 2026-12-06): `xla_cpu_disable_loop_unrolling` (a backend extra option) cut
the rollout's XLA compile by 15–25% and ran the step ×0.42 (Humanoid) and ×0.49 (Ant);
`xla_cpu_disable_slp_vectorizer` and `--xla_cpu_parallel_codegen_split_count=2` left compile time
where it was (the rounds' spread, ±15%, was larger than any change). `--xla_backend_optimization_level`
2 and 1 (LLVM's, 3 by default; 2-core Intel Xeon, `python tools/bench_flags.py scenes/ant.yaml
scenes/humanoid.yaml --pairs 2 --flags= --flags=--xla_backend_optimization_level=2 ...`, 2026-12-06):
the rollout's XLA compile 3.5–3.8 → 3.0–3.4 s (Ant) and 5.2–5.5 → 3.9–4.4 s (Humanoid), and the step
ran ×0.39–0.45 as fast. Also not set: XLA's CPU fast
math with NaNs, infinities, division and functions honoured (`--xla_cpu_enable_fast_math=true` and
the four `--xla_cpu_fast_math_honor_*=true`: reassociation alone, which changes the step's rounding):
Humanoid ×1.01 and Ant ×1.02 (rounds 0.99–1.04, 2-core Intel Xeon, 2026-12-06), no more than noise.
The flags are read when jax first starts its CPU backend, so they have no effect if jax has already
run something. An unknown flag stops XLA, so the second one is only set for jaxlib versions that know
it, and none is set where jax will run on an accelerator: an accelerator plugin parses XLA_FLAGS too
and stops the process at the first CPU flag it does not know (jax-cuda13-plugin 0.11.2:
"Unknown flag in XLA_FLAGS: --xla_cpu_use_fusion_emitters=false"). So they are set when JAX_PLATFORMS
names the CPU first, or when it is unset and no accelerator plugin is installed (`cpu_backend_expected`);
`JAX_PLATFORMS=cpu` keeps them on a machine that has a GPU plugin but should run on its CPU.
"""

import os as _os

SMALL_LOOP_BYTES = 700_000   # XLA's small-while-loop threshold (see above)


def small_loops_set() -> bool:
    """Whether this process's XLA_FLAGS raise the CPU backend's small-while-loop threshold (ours or the
    user's own value): then `step` marks the loops that must stay loops of thunks."""
    return "xla_cpu_small_while_loop_byte_threshold" in _os.environ.get("XLA_FLAGS", "")


def cpu_backend_expected() -> bool:
    """Whether jax will run on its CPU backend, judged before it starts: JAX_PLATFORMS's first entry when
    it is set, else whether no accelerator plugin is installed (a `jax_plugins` module, an entry point
    of that group, or libtpu). A plugin that finds no device falls back to the CPU without the flags
    (slower, never wrong)."""
    platforms = _os.environ.get("JAX_PLATFORMS", "").strip()
    if platforms:
        return platforms.split(",")[0].strip().lower() == "cpu"
    import importlib.util
    import pkgutil

    try:
        spec = importlib.util.find_spec("jax_plugins")
        if spec is not None and any(True for _ in pkgutil.iter_modules(spec.submodule_search_locations or [])):
            return False
        from importlib.metadata import entry_points

        if any(True for _ in entry_points(group="jax_plugins")):
            return False
        return importlib.util.find_spec("libtpu") is None
    except Exception:  # noqa: BLE001  (a broken install: let jax decide, without our flags)
        return False


def has_avx512(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU has AVX-512 (the `avx512f` flag in Linux's /proc/cpuinfo; False where that
    file is missing or unreadable)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return "avx512f" in line.split(":", 1)[-1].split()
    except OSError:
        return False
    return False


def _defaults():
    flags = {"--xla_cpu_use_fusion_emitters": "false"}
    if _os.environ.get("SCENEC_SMALL_LOOPS", "1") != "0":
        flags["--xla_backend_extra_options"] = f"xla_cpu_small_while_loop_byte_threshold={SMALL_LOOP_BYTES}"
    if has_avx512():
        flags["--xla_cpu_prefer_vector_width"] = "512"
    try:
        from importlib.metadata import version

        major, minor = (int(x) for x in version("jaxlib").split(".")[:2])
        if (major, minor) >= (0, 10):
            flags["--xla_cpu_experimental_ynn_fusion_type"] = ""
    except Exception:  # noqa: BLE001  (no metadata: keep the flag every version knows)
        pass
    try:
        cores = len(_os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = _os.cpu_count() or 1
    wanted = _os.environ.get("SCENEC_HOST_DEVICES", "")
    devices = int(wanted) if wanted.strip().isdigit() and int(wanted) > 0 else cores
    if wanted and str(devices) != wanted.strip():
        import warnings

        warnings.warn(f"SCENEC_HOST_DEVICES={wanted!r} is not a positive integer; using {cores} (the cores)",
                      stacklevel=2)
    if devices > 1:
        flags["--xla_force_host_platform_device_count"] = str(devices)
    return flags


if _os.environ.get("SCENEC_XLA_DEFAULTS", "1") != "0" and cpu_backend_expected():
    _current = _os.environ.get("XLA_FLAGS", "")
    _extra = [f"{k}={v}" for k, v in _defaults().items() if k not in _current]
    if _extra:
        _os.environ["XLA_FLAGS"] = " ".join([_current] + _extra).strip()
