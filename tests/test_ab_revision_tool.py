"""tools/ab_revision.py: the base revision's runtime is extracted byte for byte and imported as a
package of its own, and its difference measure reads zero for identical steps and the size of a known
change otherwise. Needs a git checkout (skips in an exported tree)."""

import importlib
import pathlib
import subprocess
import sys

import pytest

from conftest import load_tool

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _head_or_skip():
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "HEAD"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("not a git checkout")
    return r.stdout.strip()


def test_base_runtime_is_the_revisions_files_in_a_package_of_its_own(tmp_path):
    head = _head_or_skip()
    tool = load_tool("ab_revision")
    tool.extract_runtime(head, tmp_path)
    folder = tmp_path / tool.BASE_PACKAGE
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", head, "runtime"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert tracked
    for name in tracked:
        committed = subprocess.run(["git", "-C", str(ROOT), "show", f"{head}:{name}"], capture_output=True,
                                   check=True).stdout
        assert (folder / pathlib.Path(name).relative_to("runtime")).read_bytes() == committed, name

    sys.path.insert(0, str(tmp_path))
    try:
        base = importlib.import_module(f"{tool.BASE_PACKAGE}.step")
        from scenec.runtime import step as work
        assert pathlib.Path(base.__file__).parent == folder
        assert base.step is not work.step
    finally:
        sys.path.remove(str(tmp_path))
        for mod in [m for m in sys.modules if m.split(".")[0] == tool.BASE_PACKAGE]:
            del sys.modules[mod]


def test_difference_is_zero_for_one_step_and_sees_a_change():
    tool = load_tool("ab_revision")
    from scenec.compiler.cmd_run import load_model
    from scenec.runtime import step as work

    model, code = load_model(str(ROOT / "scenes" / "hopper.yaml"))
    assert model is not None, code
    same = tool.one_step_difference(work, work, model, batch=8)
    assert all(v == (0.0, 0.0, 0) for v in same.values()), same

    class Shifted:
        """The step with q moved by 1% of its largest magnitude: the measure must read about 1e-2."""
        init = staticmethod(work.init)

        @staticmethod
        def step(m, s, u):
            out = work.step(m, s, u)
            return out.replace(q=out.q + 0.01 * abs(out.q).max())

    moved = tool.one_step_difference(work, Shifted, model, batch=8)
    median, largest, over = moved["q"]
    # every environment's q moved by 1% of the batch's largest |q|: relative to that same largest |q|
    # (of the unshifted side), 1e-2 up to float32 rounding of the sums
    assert median == pytest.approx(1e-2, rel=1e-3) and largest == pytest.approx(1e-2, rel=1e-3)
    assert over == 8
    assert moved["qd"] == (0.0, 0.0, 0)
