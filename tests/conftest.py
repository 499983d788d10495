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
