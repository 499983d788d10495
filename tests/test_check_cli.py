"""`scenec check`: output formats, exit codes, no jax, no tracebacks for user errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from scenec.compiler import cli

BAD = """bodies:
  - name: torso
joints:
  - name: hip
    kind: hinge
    parent: torsoo
    child: torso
"""


def scenec(*args, env=None):
    return subprocess.run([sys.executable, "-m", "scenec.compiler.cli", *map(str, args)],
                          capture_output=True, text=True, env=env)


def test_shipped_scenes_exit_0_without_importing_jax(scene_paths):
    code = ("import sys\n"
            "from scenec.compiler.cli import main\n"
            f"rc = main(['check', *{[str(p) for p in scene_paths]!r}])\n"
            "assert 'jax' not in sys.modules, 'scenec check imported jax'\n"
            "assert 'jaxlib' not in sys.modules\n"
            "sys.exit(rc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert f"checked {len(scene_paths)} files: 0 errors, 0 warnings" in out.stderr


def test_text_format_has_location_source_caret_and_hint(write_scene):
    path = write_scene(BAD)
    out = scenec("check", path)
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert lines[0] == (f"{path}:6:13: error[E204]: joint 'hip' names parent 'torsoo', which is "
                        "not a body")
    assert lines[1] == "   6 |     parent: torsoo"
    assert lines[2] == "     |             ^^^^^^"
    assert lines[3] == "  = hint: did you mean 'torso'?"
    assert "Traceback" not in out.stderr


def test_all_files_all_problems(write_scene, scene_paths):
    bad = write_scene(BAD)
    worse = write_scene("bodies:\n  - {name: a, mass: -1}\n  - {name: a}\n", name="worse.yaml")
    out = scenec("check", bad, scene_paths[0], worse)
    assert out.returncode == 1
    assert out.stdout.count("error[") == 3
    assert "checked 3 files: 3 errors, 0 warnings" in out.stderr


def test_warnings_alone_exit_0(write_scene):
    out = scenec("check", write_scene("parameters: {spare: 1 m}\n"))
    assert out.returncode == 0
    assert "warning[W101]" in out.stdout


def test_missing_file_exits_2(tmp_path, write_scene):
    out = scenec("check", tmp_path / "nope.yaml", write_scene(BAD))
    assert out.returncode == 2
    assert "error[E001]: cannot read" in out.stdout
    assert "error[E204]" in out.stdout  # the other file is still checked


def test_json_format(write_scene):
    path = write_scene(BAD)
    out = scenec("check", "--format", "json", path)
    assert out.returncode == 1
    (entry,) = json.loads(out.stdout)
    assert entry["code"] == "E204" and (entry["line"], entry["col"]) == (6, 13)
    assert entry["end_col"] == 18 and entry["severity"] == "error"
    assert entry["hint"] == "did you mean 'torso'?"


def test_github_format(write_scene):
    path = write_scene(BAD)
    out = scenec("check", "--format", "github", path)
    assert out.returncode == 1
    assert out.stdout.startswith(f"::error file={path},line=6,col=13,title=E204::joint 'hip'")


def test_allow_outside_flag(tmp_path):
    (tmp_path / "tet.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n")
    (tmp_path / "s").mkdir()
    scene = tmp_path / "s" / "scene.yaml"
    scene.write_text("meshes: [{name: t, file: ../tet.obj}]\nbodies: [{name: a, colliders: [{mesh: {mesh: t}}]}]\n")
    assert scenec("check", scene).returncode == 1
    assert scenec("check", "--allow-outside", scene).returncode == 0


def test_usage_errors_exit_2():
    assert scenec().returncode == 2
    assert scenec("check").returncode == 2
    assert scenec("frobnicate").returncode == 2
    assert scenec("check", "--format", "xml", "x.yaml").returncode == 2
    assert scenec("--help").returncode == 0


def test_internal_error_is_one_line_and_exit_3(monkeypatch, capsys, write_scene):
    import scenec.compiler.check as check_module

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(check_module, "check", broken)
    monkeypatch.delenv("SCENEC_DEBUG", raising=False)
    assert cli.main(["check", str(write_scene(BAD))]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (RuntimeError: boom)" in err
    assert "Traceback" not in err
    monkeypatch.setenv("SCENEC_DEBUG", "1")
    assert cli.main(["check", str(write_scene(BAD))]) == cli.EXIT_INTERNAL
    assert "Traceback" in capsys.readouterr().err


def test_commands_table_imports_lazily():
    code = ("import sys\nfrom scenec.compiler import cli\n"
            "assert not [m for m in sys.modules if m.startswith('scenec.compiler.cmd_')]\n"
            "cli._parser('check')\n"
            "loaded = sorted(m for m in sys.modules if m.startswith('scenec.compiler.cmd_'))\n"
            "assert loaded == ['scenec.compiler.cmd_check'], loaded\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for name, (module, help_text) in cli.COMMANDS.items():
        assert module == f"scenec.compiler.cmd_{name.replace('-', '_')}" and help_text


@pytest.mark.parametrize("name", ["cmd_check", "cmd_schema"])
def test_command_modules_expose_the_protocol(name):
    import importlib
    module = importlib.import_module(f"scenec.compiler.{name}")
    assert callable(module.add_arguments) and callable(module.run)
