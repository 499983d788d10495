"""`scenec render SCENE [--trajectory FILE | --steps N] -o out.{png,gif,mp4}`: pictures on the CPU.

Where it sits: compiler/, a subcommand (cli.py). Takes the frames as `scenec view` does
(compiler/viewer/source.py), ray-casts them with the runtime's JAX renderer (runtime/render.py, one
jitted `lax.map` over frames) and writes a PNG (one frame), an animated GIF, or an MP4 (through
ffmpeg). The camera frames the bodies from an azimuth and elevation, fixed or following them.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

FORMATS = (".png", ".gif", ".mp4")
# Animations play at most this many frames per second (GIF delays are whole hundredths of a second,
# and many players slow down GIFs faster than 50 fps).
MAX_FPS = 50.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from .viewer import source

    source.add_arguments(parser)
    parser.add_argument("-o", "--out", metavar="FILE", required=True,
                        help="output image or video: .png (one frame), .gif or .mp4 (needs ffmpeg)")
    parser.add_argument("--width", type=int, default=480)
    parser.add_argument("--height", type=int, default=360)
    parser.add_argument("--samples", type=int, default=0,
                        help="rays per pixel along each axis, for anti-aliasing (default 2 for a .png, "
                             "1 for animations, where motion hides jagged edges and time counts)")
    parser.add_argument("--frame", type=int, default=-1, help="for .png: which frame (default the last)")
    parser.add_argument("--env", type=int, default=0, help="which environment to draw (default 0)")
    parser.add_argument("--fps", type=float, default=0.0,
                        help="animation frame rate (default: the trajectory's, at most 30)")
    parser.add_argument("--camera", choices=("fixed", "track"), default="fixed",
                        help="fixed: frame every frame's bodies; track: follow the bodies")
    parser.add_argument("--azimuth", type=float, default=45.0, help="degrees, counter-clockwise from +x")
    parser.add_argument("--elevation", type=float, default=25.0, help="degrees above the horizon")
    parser.add_argument("--distance", type=float, default=None, help="camera distance, m (default: fit)")
    parser.add_argument("--fovy", type=float, default=45.0, help="vertical field of view, degrees")
    parser.add_argument("--no-shadows", action="store_true")
    parser.add_argument("--checker", type=float, default=0.5, metavar="M",
                        help="checkerboard cell on planes, m (0: plain; default 0.5)")


def pick_frames(times, fps: float):
    """Indices of the recorded frames nearest to a uniform clock at `fps` over the trajectory."""
    import numpy as np

    times = np.asarray(times, np.float64)
    if len(times) < 2 or times[-1] <= times[0]:
        return np.arange(len(times))
    clock = times[0] + np.arange(int(np.floor((times[-1] - times[0]) * fps + 1e-9)) + 1) / fps
    idx = np.clip(np.searchsorted(times, clock), 0, len(times) - 1)
    prev = np.clip(idx - 1, 0, len(times) - 1)
    nearer = np.abs(times[prev] - clock) <= np.abs(times[idx] - clock)
    return np.where(nearer, prev, idx)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from scenec.runtime import render

    from .viewer import images, source

    out = pathlib.Path(args.out)
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        return source.error("render", f"cannot tell the format of {out}: name it .png, .gif or .mp4")
    if not out.parent.is_dir():
        return source.error("render", f"cannot write {out}: no such folder {out.parent}")
    if args.samples == 0:
        args.samples = 2 if suffix == ".png" else 1
    if min(args.width, args.height, args.samples) < 1 or args.width * args.height > 4096 * 4096:
        return source.error("render", "--width, --height and --samples must be at least 1 (and the "
                                      "image at most 4096 × 4096)")
    if not 1.0 <= args.fovy <= 170.0:
        return source.error("render", "--fovy must be between 1 and 170 degrees")
    if suffix == ".mp4" and images.ffmpeg_path() is None:
        return source.error("render", "writing MP4 needs the ffmpeg program, which is not on PATH "
                                      "(Debian: apt-get install ffmpeg); write a .gif instead")
    src, code = source.load_source(args.scene, args.allow_outside)
    if src is None:
        return code
    traj, code = source.obtain("render", args, src)
    if traj is None:
        return code
    if not 0 <= args.env < traj.nenv:
        return source.error("render", f"--env {args.env}: the trajectory has {traj.nenv} environment(s)")
    xpos, xquat = traj.xpos[:, args.env], traj.xquat[:, args.env]

    if suffix == ".png":
        k = args.frame if args.frame >= 0 else traj.nframe + args.frame
        if not 0 <= k < traj.nframe:
            return source.error("render", f"--frame {args.frame}: the trajectory has {traj.nframe} frames")
        frames = np.array([k])
        fps = 1.0
    else:
        dt = np.diff(traj.time)
        native = 1.0 / float(np.median(dt)) if len(dt) and np.median(dt) > 0 else 30.0
        fps = min(args.fps if args.fps > 0 else min(native, 30.0), MAX_FPS)
        frames = pick_frames(traj.time, fps)
    camera = render.auto_camera(src.model, xpos, xquat, args.azimuth, args.elevation, args.fovy,
                                args.distance, track=args.camera == "track")
    if args.camera == "track":
        camera = render.Camera(*(np.asarray(c)[frames] if np.ndim(c) == 2 else c for c in camera))
    options = render.RenderOptions(args.width, args.height, args.samples, not args.no_shadows,
                                   max(args.checker, 0.0))
    t0 = time.perf_counter()
    pictures = render.render(src.model, xpos[frames], xquat[frames], camera, options)
    seconds = time.perf_counter() - t0
    try:
        if suffix == ".png":
            source.write_file(out, images.encode_png(pictures[0]))
        elif suffix == ".gif":
            source.write_file(out, images.encode_gif(pictures, fps))
        else:
            images.write_mp4(pictures, out, fps)
    except images.ImageError as e:
        return source.error("render", str(e))
    except OSError as e:
        return source.error("render", f"cannot write {out}: {e.strerror or e}")
    what = f"frame {int(frames[0])}" if suffix == ".png" else f"{len(frames)} frames at {fps:g} fps"
    print(f"wrote {out} ({what}, {args.width}×{args.height}; rendered in {seconds:.1f} s)",
          file=sys.stdout)
    return 0
