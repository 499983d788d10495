"""`scenec import` end to end, in a subprocess: exit codes, located diagnostics with carets, atomic
writes, and never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from scenec.schema import load

GOOD = """<mujoco model="pendulum">
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="arm" pos="0 0 1">
      <joint name="hinge" axis="0 1 0" range="-90 90" damping="0.1"/>
      <geom name="rod" type="capsule" fromto="0 0 0 0 0 -0.5" size="0.02"/>
      <geom name="bob" type="cylinder" size="0.05 0.02" pos="0 0 -0.5"/>
      <site name="tip" pos="0 0 -0.55"/>
    </body>
  </worldbody>
  <actuator><motor joint="hinge" gear="5" ctrlrange="-1 1"/></actuator>
</mujoco>
"""


def scenec(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "scenec.compiler.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=120)
    assert "Traceback" not in proc.stderr + proc.stdout
    return proc


def test_import_writes_a_scene_that_checks_clean(tmp_path):
    src = tmp_path / "pendulum.xml"
    src.write_text(GOOD)
    out = tmp_path / "scenes" / "pendulum.yaml"
    proc = scenec("import", src, "-o", out, "--convert-cylinders")
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout and out.is_file()
    text = out.read_text()
    assert text.startswith("# Imported from pendulum.xml (MJCF)")
    assert "# converted from a cylinder" in text and "# dropped: site 'tip'" in text
    loaded = load(out)
    assert not [d for d in loaded.diagnostics if d.is_error]
    assert [b.name for b in loaded.scene.bodies] == ["world_geoms", "arm"]
    # the notes about what was converted or dropped are also on stderr, located
    assert f"{src}:8:7: note[W701]" in proc.stderr
    check = scenec("check", out)
    assert check.returncode == 0, check.stdout + check.stderr
    assert not list((tmp_path / "scenes").glob(".*.tmp"))
    # the permissions a plain open() gives under this umask (a temporary file's are owner-only)
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


def test_import_does_not_use_jax(tmp_path):
    src = tmp_path / "p.xml"
    src.write_text(GOOD)
    code = ("import sys; from scenec.compiler import cmd_import; "
            f"r = cmd_import.main([{str(src)!r}, '-o', {str(tmp_path / 'p.yaml')!r}, "
            "'--convert-cylinders']); assert r == 0, r; assert 'jax' not in sys.modules")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name,content,code,where", [
    ("truncated.xml", "<mujoco>\n  <worldbody>\n    <body>\n", 2, ":4:1: error[E700]"),
    ("binary.xml", b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", 2, ":1:1: error[E700]"),
    ("unknown.xml", "<mujoco>\n  <worldbody>\n    <bodi/>\n  </worldbody>\n</mujoco>\n", 2,
     ":3:5: error[E702]"),
    ("cylinder.xml", GOOD, 1, ":7:24: error[E707]"),
    ("tendon.xml", "<mujoco>\n  <tendon>\n    <fixed/>\n  </tendon>\n</mujoco>\n", 1,
     ":2:3: error[E708]"),
    ("bad.pbtxt", 'bodies {\n  name: "a"\n  mass: heavy\n}\n', 2, ":3:9: error[E714]"),
    ("bad.urdf", '<robot name="r">\n  <link name="a"/><link name="b"/>\n  <joint name="j" type="planar">\n'
     '    <parent link="a"/><child link="b"/>\n  </joint>\n</robot>\n', 1, ":3:19: error[E710]"),
])
def test_bad_inputs_give_located_errors_and_write_nothing(tmp_path, name, content, code, where):
    src = tmp_path / name
    src.write_bytes(content if isinstance(content, bytes) else content.encode())
    out = tmp_path / "out.yaml"
    out.write_text("# an older scene, which a failed import must leave alone\n")
    proc = scenec("import", src, "-o", out)
    assert proc.returncode == code, proc.stderr
    assert f"{src}{where}" in proc.stderr, proc.stderr
    assert "nothing written" in proc.stderr
    assert out.read_text().startswith("# an older scene")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "out.yaml"])


def test_caret_points_at_the_attribute(tmp_path):
    src = tmp_path / "m.xml"
    src.write_text('<mujoco>\n  <worldbody>\n    <geom size="0.1" frction="1"/>\n  </worldbody>\n'
                   "</mujoco>\n")
    proc = scenec("import", src, "-o", tmp_path / "m.yaml")
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    head = next(i for i, line in enumerate(lines) if "error[E703]" in line)
    assert lines[head + 1].endswith('<geom size="0.1" frction="1"/>')
    caret = lines[head + 2]
    assert caret.index("^") - caret.index("|") - 2 == len('    <geom size="0.1" ')
    assert caret.count("^") == len('frction="1"')
    assert "did you mean 'friction'?" in proc.stderr


def test_missing_input_and_unwritable_output(tmp_path):
    proc = scenec("import", tmp_path / "nope.xml", "-o", tmp_path / "x.yaml")
    assert proc.returncode == 2 and "error[E701]" in proc.stderr
    src = tmp_path / "p.xml"
    src.write_text(GOOD.replace('type="cylinder" size="0.05 0.02"', 'type="sphere" size="0.05"'))
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    proc = scenec("import", src, "-o", blocker / "p.yaml")
    assert proc.returncode == 2 and "cannot write" in proc.stderr


def test_default_output_name(tmp_path):
    src = tmp_path / "p.xml"
    src.write_text(GOOD)
    proc = scenec("import", "p.xml", "--convert-cylinders", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "p.yaml").is_file()
