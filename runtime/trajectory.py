"""Trajectories: the body poses of a rollout, saved for viewing and rendering (numpy only).

Where it sits: after the step. A rollout (a `State` stacked over time, and over environments when
the step was vmapped) becomes a `Trajectory` with `record`; `save` writes it to a `.npz` file;
`scenec view` and `scenec render` read it back with `load`, which refuses a file recorded from a
different scene. Only numpy here: a trajectory can be written by any program that can run the step
and read by tools that never import jax.

File format (version 1): a zlib-compressed `.npz` (numpy's zip of `.npy` arrays, loadable without
pickle) holding

  format        ()  str      "scenec-trajectory"
  version       ()  int64    1
  scene_sha256  ()  str      sha256 of the scene source the rollout ran (`SCENE_SHA256` of a
                             generated module, report.json's "sha256")
  scene_name    ()  str      the scene's name (informative)
  body_names    (nbody,) str body names, "world" first, as `Model.body_names`
  time          (T,)  float64             simulated time of each frame, s (non-decreasing)
  xpos          (T, E, nbody, 3) float32  body world positions, m
  xquat         (T, E, nbody, 4) float32  body world orientations, unit quaternions w, x, y, z
  contact_force (T, E, nbody, 3) float32  optional: world contact force on each body, N
  contact_pos   (T, E, C, 3) float32      optional: contact points, world, m
  contact_active (T, E, C) bool           optional (with contact_pos): the row is a real contact

T frames, E environments (1 for a single rollout), C contact rows (the model's fixed contact buffer).
A file whose pose arrays have no E axis, (T, nbody, 3) and (T, nbody, 4), is read as E = 1.
Everything else in the file is ignored, so later versions can add arrays without breaking readers.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pathlib
import tempfile

import numpy as np

FORMAT = "scenec-trajectory"
VERSION = 1

# Quaternions in a file may be slightly off unit length (float32 rounding, hand-made files); more
# than this deviation means the array is not orientations at all.
QUAT_NORM_TOLERANCE = 1e-2


class TrajectoryError(Exception):
    """A trajectory file that cannot be used: unreadable, malformed, or from another scene.

    The message is one or two sentences for a person; commands print it without a traceback."""


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """Body poses over time, for E environments side by side.

    time:   (T,) s
    xpos:   (T, E, nbody, 3) world positions, m, float32
    xquat:  (T, E, nbody, 4) world orientations (w, x, y, z), float32
    contact_force: (T, E, nbody, 3) N, or None
    contact_pos:   (T, E, C, 3) m, or None
    contact_active: (T, E, C) bool, or None (present exactly when contact_pos is)
    """

    scene_sha256: str
    scene_name: str
    body_names: tuple
    time: np.ndarray
    xpos: np.ndarray
    xquat: np.ndarray
    contact_force: np.ndarray | None = None
    contact_pos: np.ndarray | None = None
    contact_active: np.ndarray | None = None

    @property
    def nframe(self) -> int:
        return int(self.xpos.shape[0])

    @property
    def nenv(self) -> int:
        return int(self.xpos.shape[1])

    @property
    def nbody(self) -> int:
        return int(self.xpos.shape[2])

    @property
    def ncontact(self) -> int:
        return 0 if self.contact_pos is None else int(self.contact_pos.shape[2])

    def env(self, e: int) -> "Trajectory":
        """The trajectory of environment `e` alone (E = 1)."""
        pick = lambda a: None if a is None else a[:, e:e + 1]  # noqa: E731
        return dataclasses.replace(self, xpos=pick(self.xpos), xquat=pick(self.xquat),
                                   contact_force=pick(self.contact_force),
                                   contact_pos=pick(self.contact_pos),
                                   contact_active=pick(self.contact_active))


def make(scene_sha256: str, scene_name: str, body_names, time, xpos, xquat, contact_force=None,
         contact_pos=None, contact_active=None) -> Trajectory:
    """A checked `Trajectory` from arrays; pose arrays may omit the E axis (then E = 1)."""
    xpos = np.asarray(xpos, np.float32)
    xquat = np.asarray(xquat, np.float32)
    if xpos.ndim == 3:
        xpos = xpos[:, None]
        xquat = xquat[:, None] if xquat.ndim == 3 else xquat
        contact_force = None if contact_force is None else np.asarray(contact_force)[:, None]
        contact_pos = None if contact_pos is None else np.asarray(contact_pos)[:, None]
        contact_active = None if contact_active is None else np.asarray(contact_active)[:, None]
    traj = Trajectory(
        scene_sha256=str(scene_sha256), scene_name=str(scene_name),
        body_names=tuple(str(n) for n in body_names),
        time=np.asarray(time, np.float64).reshape(-1),
        xpos=xpos, xquat=xquat,
        contact_force=None if contact_force is None else np.asarray(contact_force, np.float32),
        contact_pos=None if contact_pos is None else np.asarray(contact_pos, np.float32),
        contact_active=None if contact_active is None else np.asarray(contact_active, bool))
    _validate(traj)
    return traj


def _validate(t: Trajectory) -> None:
    """Raise TrajectoryError unless every array has the documented shape and sane values."""
    if t.xpos.ndim != 4 or t.xpos.shape[-1] != 3:
        raise TrajectoryError(f"xpos has shape {t.xpos.shape}; expected (T, E, nbody, 3)")
    T, E, nbody, _ = t.xpos.shape
    if T < 1 or E < 1 or nbody < 1:
        raise TrajectoryError(f"xpos has shape {t.xpos.shape}; a trajectory needs at least one frame, "
                              "environment and body")
    if t.xquat.shape != (T, E, nbody, 4):
        raise TrajectoryError(f"xquat has shape {t.xquat.shape}; expected {(T, E, nbody, 4)} to match xpos")
    if t.time.shape != (T,):
        raise TrajectoryError(f"time has {t.time.shape[0]} entries; expected one per frame ({T})")
    if len(t.body_names) != nbody:
        raise TrajectoryError(f"the file names {len(t.body_names)} bodies but its poses have {nbody}")
    for name in ("time", "xpos", "xquat"):
        if not np.all(np.isfinite(getattr(t, name))):
            raise TrajectoryError(f"{name} holds values that are not finite (NaN or infinity); the "
                                  "rollout diverged before it was recorded")
    if T > 1 and np.any(np.diff(t.time) < 0):
        raise TrajectoryError("time goes backwards; frames must be in time order")
    norm = np.linalg.norm(t.xquat, axis=-1)
    if np.any(np.abs(norm - 1.0) > QUAT_NORM_TOLERANCE):
        raise TrajectoryError("xquat holds quaternions that are not of unit length")
    if t.contact_force is not None and t.contact_force.shape != (T, E, nbody, 3):
        raise TrajectoryError(f"contact_force has shape {t.contact_force.shape}; expected {(T, E, nbody, 3)}")
    if (t.contact_pos is None) != (t.contact_active is None):
        raise TrajectoryError("contact_pos and contact_active come together; the file has only one")
    if t.contact_pos is not None:
        if t.contact_pos.ndim != 4 or t.contact_pos.shape[:2] != (T, E) or t.contact_pos.shape[3] != 3:
            raise TrajectoryError(f"contact_pos has shape {t.contact_pos.shape}; expected (T, E, C, 3)")
        if t.contact_active.shape != t.contact_pos.shape[:3]:
            raise TrajectoryError(f"contact_active has shape {t.contact_active.shape}; expected "
                                  f"{t.contact_pos.shape[:3]}")


def record(model, states, scene_sha256: str, contact_pos=None, contact_active=None) -> Trajectory:
    """A Trajectory from a rollout: `states` is a `State` whose arrays are stacked over time (T, ...)
    or over time and environments (T, E, ...), e.g. the output of `lax.scan` over a (vmapped) step.

    Contact points come from `runtime.render.contact_points` when wanted (this module has no jax)."""
    xpos = np.asarray(states.xpos)
    return make(scene_sha256, model.name, model.body_names,
                time=np.asarray(states.time).reshape(xpos.shape[0], -1)[:, 0],
                xpos=xpos, xquat=np.asarray(states.xquat),
                contact_force=np.asarray(states.contact_force),
                contact_pos=contact_pos, contact_active=contact_active)


def to_bytes(t: Trajectory) -> bytes:
    """The file's bytes (deterministic: sorted names, numpy's fixed zip timestamps)."""
    _validate(t)
    arrays = {
        "format": np.array(FORMAT), "version": np.array(VERSION, np.int64),
        "scene_sha256": np.array(t.scene_sha256), "scene_name": np.array(t.scene_name),
        "body_names": np.array(t.body_names, dtype=str), "time": t.time.astype(np.float64),
        "xpos": t.xpos.astype(np.float32), "xquat": t.xquat.astype(np.float32),
    }
    for name in ("contact_force", "contact_pos", "contact_active"):
        if getattr(t, name) is not None:
            arrays[name] = getattr(t, name)
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: arrays[k] for k in sorted(arrays)})
    return buf.getvalue()


def save(t: Trajectory, path) -> None:
    """Write `t` to `path` atomically (a temporary file in the same folder, then a rename)."""
    path = pathlib.Path(path)
    data = to_bytes(t)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())     # mkstemp makes 0600 files; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def load(path, scene_sha256: str | None = None, scene_label: str | None = None,
         body_names=None) -> Trajectory:
    """Read a trajectory file. With `scene_sha256`, refuse one recorded from another scene (the
    message names both files and both hashes; `scene_label` is how to name the scene, e.g. its
    path). With `body_names`, refuse one whose bodies differ. Raises TrajectoryError."""
    path = pathlib.Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise TrajectoryError(f"{path}: no such trajectory file") from None
    except (OSError, ValueError, EOFError) as e:
        raise TrajectoryError(f"{path}: not a trajectory file (cannot read it as .npz: {e})") from None
    if str(data.get("format", "")) != FORMAT:
        raise TrajectoryError(f"{path}: not a scenec trajectory (no 'format' entry saying {FORMAT!r})")
    try:
        version = int(data["version"])
    except (KeyError, TypeError, ValueError):
        raise TrajectoryError(f"{path}: the trajectory has no version number") from None
    if version > VERSION:
        raise TrajectoryError(f"{path}: trajectory format version {version} is newer than this scenec "
                              f"reads ({VERSION}); update scenec")
    missing = [k for k in ("scene_sha256", "body_names", "time", "xpos", "xquat") if k not in data]
    if missing:
        raise TrajectoryError(f"{path}: the trajectory lacks {', '.join(missing)}")
    sha = str(data["scene_sha256"])
    if scene_sha256 is not None and sha != scene_sha256:
        label = scene_label or "the scene"
        raise TrajectoryError(
            f"{path} was recorded from a scene with sha256 {sha}, but {label} has sha256 "
            f"{scene_sha256}; record the trajectory again from this scene, or give the scene it came from")
    try:
        t = make(sha, str(data.get("scene_name", "")), data["body_names"].reshape(-1).tolist(),
                 data["time"], data["xpos"], data["xquat"], data.get("contact_force"),
                 data.get("contact_pos"), data.get("contact_active"))
    except TrajectoryError as e:
        raise TrajectoryError(f"{path}: {e}") from None
    if body_names is not None and tuple(body_names) != t.body_names:
        raise TrajectoryError(f"{path}: its bodies {list(t.body_names)} are not the scene's "
                              f"{list(body_names)}")
    return t
