"""Trajectory files (runtime/trajectory.py) and the `scenec view` / `scenec render` commands.

The file format is checked against what numpy reads back on its own (the documented arrays, dtypes
and shapes), round trips are exact, and every malformed or mismatched file is refused with a
message that names the problem (for a scene mismatch: both files and both hashes) and no traceback.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from scenec.runtime import trajectory as tr

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHA_A = "a" * 64
SHA_B = "b" * 64
NAMES = ("world", "torso", "leg")


def example(T=5, E=2, contacts=True) -> tr.Trajectory:
    rng = np.random.default_rng(0)
    q = rng.normal(size=(T, E, 3, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    kw = {}
    if contacts:
        kw = dict(contact_pos=rng.normal(size=(T, E, 4, 3)), contact_active=rng.random((T, E, 4)) > 0.5)
    return tr.make(SHA_A, "demo", NAMES, np.arange(T) * 0.02, rng.normal(size=(T, E, 3, 3)), q,
                   contact_force=rng.normal(size=(T, E, 3, 3)), **kw)


def test_round_trip_is_exact_and_the_file_is_plain_npz(tmp_path):
    t = example()
    path = tmp_path / "run.npz"
    tr.save(t, path)
    back = tr.load(path, scene_sha256=SHA_A, body_names=NAMES)
    for name in ("time", "xpos", "xquat", "contact_force", "contact_pos", "contact_active"):
        assert np.array_equal(getattr(back, name), getattr(t, name)), name
    assert (back.scene_sha256, back.scene_name, back.body_names) == (SHA_A, "demo", NAMES)
    # What any numpy program sees, without scenec and without pickle.
    with np.load(path, allow_pickle=False) as z:
        assert str(z["format"]) == "scenec-trajectory" and int(z["version"]) == 1
        assert z["xpos"].dtype == np.float32 and z["xpos"].shape == (5, 2, 3, 3)
        assert z["xquat"].dtype == np.float32 and z["xquat"].shape == (5, 2, 3, 4)
        assert z["time"].dtype == np.float64 and z["contact_active"].dtype == bool
        assert list(z["body_names"]) == list(NAMES) and str(z["scene_sha256"]) == SHA_A
    assert tr.to_bytes(t) == tr.to_bytes(back)            # deterministic bytes
    assert t.env(1).nenv == 1 and np.array_equal(t.env(1).xpos[:, 0], t.xpos[:, 1])


def test_files_without_the_environment_axis_are_one_environment(tmp_path):
    q = np.zeros((4, 3, 4))
    q[..., 0] = 1
    path = tmp_path / "single.npz"
    np.savez(path, format="scenec-trajectory", version=1, scene_sha256=SHA_A, body_names=np.array(NAMES),
             time=np.arange(4.0), xpos=np.ones((4, 3, 3)), xquat=q)
    t = tr.load(path)
    assert (t.nframe, t.nenv, t.nbody) == (4, 1, 3) and t.contact_pos is None


def test_a_trajectory_from_another_scene_is_refused_naming_both(tmp_path):
    path = tmp_path / "run.npz"
    tr.save(example(), path)
    with pytest.raises(tr.TrajectoryError) as e:
        tr.load(path, scene_sha256=SHA_B, scene_label="scenes/other.yaml")
    msg = str(e.value)
    assert SHA_A in msg and SHA_B in msg and str(path) in msg and "scenes/other.yaml" in msg


@pytest.mark.parametrize("change, words", [
    (dict(format="something-else"), "not a scenec trajectory"),
    (dict(version=99), "newer"),
    (dict(xquat=np.zeros((5, 2, 3, 4))), "unit length"),
    (dict(xpos=np.full((5, 2, 3, 3), np.nan)), "not finite"),
    (dict(time=np.array([0.0, 0.1, 0.05, 0.2, 0.3])), "backwards"),
    (dict(time=np.arange(4.0)), "one per frame"),
    (dict(body_names=np.array(["world", "torso"])), "bodies"),
    (dict(xquat=np.ones((5, 2, 3, 3))), "xquat has shape"),
    (dict(contact_pos=np.zeros((5, 2, 4, 3))), "come together"),
])
def test_malformed_files_are_refused(tmp_path, change, words):
    t = example(contacts=False)
    arrays = dict(format="scenec-trajectory", version=1, scene_sha256=SHA_A, body_names=np.array(NAMES),
                  time=t.time, xpos=t.xpos, xquat=t.xquat)
    arrays.update(change)
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(tr.TrajectoryError, match=words):
        tr.load(path)


def test_unreadable_and_missing_files(tmp_path):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file")
    with pytest.raises(tr.TrajectoryError, match="not a trajectory file"):
        tr.load(junk)
    with pytest.raises(tr.TrajectoryError, match="no such trajectory file"):
        tr.load(tmp_path / "missing.npz")
    with pytest.raises(tr.TrajectoryError, match="not the scene's"):
        path = tmp_path / "run.npz"
        tr.save(example(), path)
        tr.load(path, body_names=("world", "a", "b"))


def test_record_takes_a_stacked_rollout():
    from scenec.runtime.types import State

    T, E, nbody = 6, 3, 3
    q = np.zeros((T, E, nbody, 4), np.float32)
    q[..., 0] = 1
    time = np.broadcast_to((np.arange(T) * 0.1)[:, None], (T, E))
    states = State(q=np.zeros((T, E, 7)), qd=np.zeros((T, E, 6)), time=time,
                   xpos=np.random.default_rng(0).normal(size=(T, E, nbody, 3)), xquat=q,
                   contact_force=np.zeros((T, E, nbody, 3)))

    class Model:
        name = "demo"
        body_names = NAMES

    t = tr.record(Model, states, SHA_A)
    assert (t.nframe, t.nenv, t.nbody) == (T, E, nbody)
    np.testing.assert_allclose(t.time, np.arange(T) * 0.1)
    assert np.array_equal(t.xpos, states.xpos.astype(np.float32))
    single = State(q=states.q[:, 0], qd=states.qd[:, 0], time=time[:, 0], xpos=states.xpos[:, 0],
                   xquat=q[:, 0], contact_force=states.contact_force[:, 0])
    assert tr.record(Model, single, SHA_A).nenv == 1


# ------------------------------------------------------------------------------------ commands


def test_view_and_render_refuse_a_mismatched_trajectory(tmp_path, capsys):
    from scenec.compiler.cli import main

    path = tmp_path / "run.npz"
    tr.save(tr.make(SHA_A, "ball", ("world", "ball"), [0.0], np.zeros((1, 2, 3)),
                    np.tile([1.0, 0, 0, 0], (1, 2, 1))), path)
    for command in ("view", "render"):
        out = tmp_path / ("x.html" if command == "view" else "x.png")
        code = main([command, str(ROOT / "scenes" / "ball.yaml"), "--trajectory", str(path), "-o", str(out)])
        err = capsys.readouterr().err
        assert code == 2 and not out.exists()
        assert SHA_A in err and "sha256" in err and "ball.yaml" in err and "Traceback" not in err


def test_render_refuses_unknown_formats_and_mp4_without_ffmpeg(tmp_path, capsys, monkeypatch):
    from scenec.compiler.cli import main
    from scenec.compiler.viewer import images

    scene = str(ROOT / "scenes" / "ball.yaml")
    assert main(["render", scene, "-o", str(tmp_path / "x.bmp")]) == 2
    assert ".png, .gif or .mp4" in capsys.readouterr().err
    monkeypatch.setattr(images, "ffmpeg_path", lambda: None)
    assert main(["render", scene, "-o", str(tmp_path / "x.mp4")]) == 2
    err = capsys.readouterr().err
    assert "ffmpeg" in err and "Traceback" not in err
    assert main(["view", scene, "--steps", "2", "--trajectory", "x.npz", "-o", str(tmp_path / "v.html")]) == 2
    assert "not both" in capsys.readouterr().err


def test_render_simulates_and_writes_a_gif_and_its_trajectory(tmp_path):
    from test_render import gif_decode

    from scenec.compiler.cli import main

    out, saved = tmp_path / "ball.gif", tmp_path / "ball.npz"
    code = main(["render", str(ROOT / "scenes" / "ball.yaml"), "--steps", "30", "-o", str(out), "--width", "48",
                 "--height", "36", "--samples", "1", "--fps", "1000", "--save-trajectory", str(saved)])
    assert code == 0
    t = tr.load(saved)
    assert t.nframe == 31 and t.body_names[0] == "world"
    frames = gif_decode(out.read_bytes())
    assert len(frames) >= 2 and frames[0].shape == (36, 48, 3)
    # The scene's own hash is in the file: viewing it with the same scene is accepted.
    assert main(["view", str(ROOT / "scenes" / "ball.yaml"), "--trajectory", str(saved), "-o",
                 str(tmp_path / "ball.html")]) == 0
    page = (tmp_path / "ball.html").read_text()
    assert "http://" not in page and "https://" not in page
