"""Shared fixtures for the test suite (others may add theirs here).

The scene fixtures are plain paths and texts, so tests of any layer can use them without
importing jax.
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile

import pytest

# One XLA compilation cache for the whole test session, shared with the subprocesses the CLI tests
# start (they inherit the environment): the same step compiled by several tests is compiled once.
# Set before any test imports jax; a user's own cache setting wins.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="scenec-tests-xla-cache-")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")


# The default run (`-m 'not slow'`, pyproject's addopts) is mostly XLA compiling small programs, and
# most of XLA's CPU compile time is LLVM optimising the machine code. At LLVM's level 0 (XLA's default
# is 2) the HLO is the same (the fusions, loops and thunks some tests look at are chosen before LLVM
# runs); the machine code runs ~25x slower (Ant's rollout at batch 1024, tools/bench_flags.py) and
# rounds differently in its last bits. Whole default run on this 2-core machine: 11:33 at level 2,
# 6:07 at level 0, 11:46 at level 1 (half the speed of level 2 for little less compile). One test
# is sensitive to that rounding, the stack of three boxes' 10 s creep (2.8 mm at level 2, 12.4 mm at
# level 0, 10 mm allowed); it runs with the slow checks. The slow checks (`-m slow`) run long
# rollouts and keep XLA's default, so CI still runs every scene at the level users get; a run
# where the user set the level keeps theirs.
FAST_COMPILE_FLAG = "--xla_backend_optimization_level=0"


def pytest_configure(config):
    markexpr = (config.getoption("markexpr", "") or "").replace(" ", "")
    if markexpr == "notslow" and "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + FAST_COMPILE_FLAG).strip()


ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENES_DIR = ROOT / "scenes"
CATALOGUE_DIR = pathlib.Path(__file__).resolve().parent / "catalogue"
SCENE_PATHS = sorted(SCENES_DIR.glob("*.yaml"))


def load_tool(name: str):
    """tools/<name>.py as a module (the tools are scripts, not part of the package), with tools/ on
    sys.path as when it runs as a script (a tool may import a sibling)."""
    import importlib.util

    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))

    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    return ROOT


@pytest.fixture(scope="session")
def scenes_dir() -> pathlib.Path:
    return SCENES_DIR


@pytest.fixture(scope="session")
def scene_paths() -> list[pathlib.Path]:
    """Every shipped scene (scenes/*.yaml)."""
    return SCENE_PATHS


@pytest.fixture(scope="session")
def catalogue_dir() -> pathlib.Path:
    return CATALOGUE_DIR


@pytest.fixture
def write_scene(tmp_path):
    """write_scene(text, name="scene.yaml") -> path of a scene file in a fresh folder."""
    def write(text: str | bytes, name: str = "scene.yaml") -> pathlib.Path:
        path = tmp_path / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path
    return write
