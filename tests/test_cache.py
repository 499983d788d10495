"""The on-disk compile cache (runtime/cache.py): where it goes, when it is off, and that a second
`scenec run` reads the program the first one wrote instead of compiling it again."""

from __future__ import annotations

import os
import subprocess
import sys

from scenec.runtime import cache

SCENEC = [sys.executable, "-m", "scenec.compiler.cli"]


def test_default_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("SCENEC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.default_dir() == str(tmp_path / "scenec" / "xla")
    monkeypatch.setenv("SCENEC_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.default_dir() == str(tmp_path / "mine")
    for off in ("off", "0", "", "OFF"):
        monkeypatch.setenv("SCENEC_CACHE_DIR", off)
        assert cache.default_dir() is None


def _run(args, env, cwd):
    return subprocess.run(SCENEC + args, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")
           and not k.startswith("JAX_PERSISTENT_CACHE")}   # the test session's own JAX cache
    return {**env, **extra}


def test_a_second_run_reads_the_compiled_rollout(tmp_path, repo_root):
    # Ant's rollout takes over a second to compile on any CPU, above the cache's 0.5 s threshold.
    folder = tmp_path / "xla"
    args = ["run", str(repo_root / "scenes" / "ant.yaml"), "--batch", "4", "--steps", "2"]
    first = _run(args, _env(SCENEC_CACHE_DIR=str(folder)), tmp_path)
    assert first.returncode == 0, first.stderr
    assert "read from the compile cache" not in first.stdout
    written = sorted(os.listdir(folder))
    assert written, "the first run wrote no cache entry"
    second = _run(args, _env(SCENEC_CACHE_DIR=str(folder)), tmp_path)
    assert second.returncode == 0, second.stderr
    assert "read from the compile cache" in second.stdout
    # The message above counts cache hits during the rollout's own compile. Every entry of the first
    # run is still there; a small program near the cache's 0.5 s threshold (init, the action draw) may
    # cross it in one run and not the other on a loaded machine, so the folder may gain an entry.
    assert set(written) <= set(os.listdir(folder))
    # The same rollout: identical final figures apart from the timings.
    same = lambda out: [ln for ln in out.splitlines() if "non-finite" in ln or "budget" in ln]  # noqa: E731
    assert same(first.stdout) == same(second.stdout)


def test_off_writes_nothing_and_an_unwritable_folder_only_warns(tmp_path, repo_root):
    args = ["run", str(repo_root / "scenes" / "pendulum.yaml"), "--batch", "2", "--steps", "2"]
    off = _run(args, _env(SCENEC_CACHE_DIR="off", XDG_CACHE_HOME=str(tmp_path / "xdg")), tmp_path)
    assert off.returncode == 0, off.stderr
    assert not (tmp_path / "xdg").exists()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    bad = _run(args, _env(SCENEC_CACHE_DIR=str(blocker / "xla")), tmp_path)
    assert bad.returncode == 0, bad.stderr
    assert "not writable" in bad.stderr and "Traceback" not in bad.stderr
    assert blocker.read_text() == "not a folder"


def test_scenec_compile_reports_a_cold_compile(tmp_path, repo_root):
    # `scenec compile` times the step's jit for its report: that figure must be a cold compile.
    folder = tmp_path / "xla"
    r = _run(["compile", str(repo_root / "scenes" / "pendulum.yaml"), "-o", str(tmp_path / "out")],
             _env(SCENEC_CACHE_DIR=str(folder)), tmp_path)
    assert r.returncode == 0, r.stderr
    assert not folder.exists()
