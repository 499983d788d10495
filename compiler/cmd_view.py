"""`scenec view SCENE [--trajectory FILE | --steps N] -o view.html`: a page to look at a scene.

Where it sits: compiler/, a subcommand (cli.py). Compiles the scene (or loads a generated module),
takes its frames from a trajectory file, a short simulation or the initial pose
(compiler/viewer/source.py), and writes one self-contained HTML file (compiler/viewer): the
colliders in 3D with orbit, pan and zoom, body names on hover, joint axes and contact points on
request, and playback with a scrubber and speed control. The page makes no network request.
"""

from __future__ import annotations

import argparse
import pathlib


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from .viewer import source

    source.add_arguments(parser)
    parser.add_argument("-o", "--out", metavar="FILE", required=True, help="the HTML file to write")
    parser.add_argument("--title", default="", help="page title (default: the scene's name)")
    parser.add_argument("--checker", type=float, default=0.5, metavar="M",
                        help="checkerboard cell on planes, m (0: plain; default 0.5)")


def run(args: argparse.Namespace) -> int:
    from .viewer import build_html, source

    out = pathlib.Path(args.out)
    if not out.parent.is_dir():
        return source.error("view", f"cannot write {out}: no such folder {out.parent}")
    src, code = source.load_source(args.scene, args.allow_outside)
    if src is None:
        return code
    traj, code = source.obtain("view", args, src)
    if traj is None:
        return code
    page = build_html(src.model, traj, title=args.title, checker=args.checker)
    try:
        source.write_file(out, page.encode("utf-8"))
    except OSError as e:
        return source.error("view", f"cannot write {out}: {e.strerror or e}")
    print(f"wrote {out} ({len(page) / 1e6:.1f} MB: {traj.nframe} frames, {traj.nenv} environment"
          f"{'s' if traj.nenv > 1 else ''}, {src.model.nbody - 1} bodies)")
    return 0
