"""Hostile input: every case ends in diagnostics (never an exception, a hang or a constructed object)."""

from __future__ import annotations

import importlib
import os

from scenec.compiler.check import check
from scenec.schema import load, render_github, render_json, render_text

load_module = importlib.import_module("scenec.schema.load")


def problems(source, **kw):
    """check() the source and render every format (rendering must not fail either)."""
    result = check(source, **kw)
    render_text(result.diagnostics, result.sources)
    render_json(result.diagnostics)
    render_github(result.diagnostics)
    return [d.code for d in result.diagnostics]


def test_empty_and_blank_files(write_scene):
    assert problems(write_scene("")) == ["E009"]
    assert problems(write_scene("\n\n   \n# only a comment\n")) == ["E009"]
    assert problems(write_scene("---\n")) == ["E009"]
    assert problems("") == ["E009"]


def test_binary_junk_and_invalid_utf8(write_scene):
    junk = bytes(range(256)) * 8
    assert problems(write_scene(junk)) == ["E003"]
    assert problems(write_scene(b"name: a\x00b\n")) == ["E003"]
    result = check(write_scene(b"name: ok\nbodies:\n  - name: \xc3\x28\n"))
    assert [(d.code, d.span.line, d.span.col) for d in result.diagnostics] == [("E003", 3, 11)]
    # a UTF-8 byte-order mark is fine
    assert problems(write_scene(b"\xef\xbb\xbfname: bom\n")) == []


def test_alias_bomb_is_refused_without_expanding(write_scene):
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 30):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("name: *a29")
    codes = problems(write_scene("\n".join(lines) + "\n"))
    assert codes.count("E006") == 1  # reported once, at the first anchor
    assert set(codes) == {"E006", "E101"}  # the a<i> keys are not scene fields


def test_deep_nesting_is_capped_not_recursed(write_scene):
    depth = 100_000
    assert problems(write_scene("name: " + "[" * depth + "]" * depth + "\n")) == ["E008"]
    nested = "".join(f"{' ' * i}a:\n" for i in range(200)) + " " * 200 + "a: 1\n"
    assert problems(write_scene(nested)) == ["E008"]
    # protobuf text cannot nest deeper than the schema before text_format rejects it
    assert problems(write_scene("bodies { " * 5000 + "}" * 5000, name="deep.pbtxt")) == ["E101"]


def test_huge_file_is_refused_before_reading(tmp_path):
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as f:
        f.truncate(load_module.MAX_FILE_BYTES + 1)  # sparse: costs no disk, would cost memory
    assert problems(path) == ["E002"]
    assert problems("name: x\n" + "#" * load_module.MAX_FILE_BYTES) == ["E002"]


def test_huge_and_non_finite_numbers():
    codes = problems("""
bodies:
  - name: a
    pos: [1e400, -.inf, .nan]
    mass: "1e308 * 10"
    com: ["10 ^ 400", 1e300, 123456789012345678901234567890]
""")
    assert sorted(codes) == ["E111", "E117", "E117", "E117", "E117", "E118", "E118"]


def test_wrong_types_everywhere():
    codes = problems("""
name: [1]
options: 3
parameters: 7
meshes: {a: 1}
bodies:
  - 3
  - name: {a: 1}
    pos: {x: 1}
    colliders: [[1], {sphere: [1]}, {box: {half_size: {a: 1}}}]
joints: "not a list"
actuators: [{name: 1, joint: null, kind: [motor]}]
contacts: [1, 2]
init: [{joint: true, q: [[1]]}]
task: {targets: [{name: t, pos: yes}], episode_length: 1.5}
""")
    # Every field is reported (errors), and nothing else goes wrong: at most the task checker's
    # warning that the task has no observations left once its bad fields are dropped.
    assert codes and all(c.startswith("E") or c == "W601" for c in codes)
    assert "E102" in codes


def test_yaml_tags_never_construct_objects(tmp_path, write_scene):
    marker = tmp_path / "pwned"
    text = (f"name: !!python/object/apply:os.system ['touch {marker}']\n"
            f"bodies: !!python/object/new:os.system ['touch {marker}']\n")
    codes = problems(write_scene(text))
    assert codes[0] == "E007"
    assert not marker.exists()


def test_top_level_list_or_scalar(write_scene):
    assert problems(write_scene("- a\n- b\n")) == ["E010"]
    assert problems(write_scene("just a string\n")) == ["E010"]
    assert problems(write_scene("42\n")) == ["E010"]


def test_unicode_names_render_with_aligned_carets():
    result = check("bodies:\n  - name: 腕\n  - {name: 腕, mass: -1}\n")
    text = render_text(result.diagnostics, result.sources)
    lines = text.splitlines()
    source_line = lines[1]
    caret_line = lines[2]
    assert source_line.endswith("- {name: 腕, mass: -1}")
    # the caret sits under 腕 (two cells wide) in terminal cells
    prefix = source_line[:source_line.index("腕")]
    assert caret_line.index("^") == len(prefix)
    assert caret_line.count("^") == 2


def test_mesh_outside_folder_is_not_read(tmp_path):
    scene = tmp_path / "scene.yaml"
    scene.write_text("meshes: [{name: m, file: /etc/passwd}]\n"
                     "bodies: [{name: a, colliders: [{mesh: {mesh: m}}]}]\n")
    assert problems(scene) == ["E403"]


def test_many_documents_and_long_lines(write_scene):
    assert problems(write_scene("name: a\n---\nname: b\n---\nname: c\n")) == ["E011"]
    long_line = "name: a\nbodies: [{name: b, pos: [0, 0, \"" + "1 + " * 300 + "zz\"]}]\n"
    result = check(write_scene(long_line))
    assert [d.code for d in result.diagnostics] == ["E105"]  # longer than the expression limit
    rendered = render_text(result.diagnostics, result.sources)
    assert max(len(line) for line in rendered.splitlines()) < 400


def test_unreadable_paths(tmp_path):
    assert problems(tmp_path) == ["E013"]                  # a folder without a scene suffix
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    assert problems(folder) == ["E001"]
    if os.geteuid() != 0:  # root reads anything
        locked = tmp_path / "locked.yaml"
        locked.write_text("name: x\n")
        locked.chmod(0)
        assert problems(locked) == ["E001"]


def test_loader_never_raises_on_message_oddities():
    from scenec.schema import scene_pb2
    scene = scene_pb2.Scene()
    scene.parameters.add(name="x", expression="((((")
    scene.parameters.add(name="pi", value=3)
    scene.parameters.add(name="y", unit="furlong")
    codes = [d.code for d in load(scene).diagnostics]
    assert codes == ["E105", "E113", "E109"]
