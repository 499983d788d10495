"""The HTML viewer in a real headless browser (Debian's chromium; tests/setup_browser.sh installs it).

The page is driven over the Chrome DevTools protocol (CDP) with a small websocket client written
here on the standard library (no selenium or playwright download). Each test writes a page with
`scenec view` for a known scene and a trajectory made by hand, so where every body is in each frame
is known without running the physics, and checks:
- the page loads with no console error, no uncaught exception, and no network request;
- its screenshot shows the bodies where a pinhole projection of the viewer's camera, done here in
  numpy, says they are (colour under the projected centre, centroid of the coloured pixels);
- hovering over a body shows its name; playing changes the picture;
- several environments are laid side by side, and a 1000-frame Humanoid page with 8 environments
  draws each of them (the frame cost is printed, not asserted).
Skipped, with the reason, when chromium is not installed.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
import zlib

import numpy as np
import pytest

CHROMIUM = next((p for p in (os.environ.get("SCENEC_CHROMIUM"), shutil.which("chromium"),
                             shutil.which("chromium-browser"), shutil.which("google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (run tests/setup_browser.sh)")

# Flags that let Chromium run headless as root on a machine with no network and no GPU: WebGL then
# runs on SwiftShader, Chromium's CPU rasteriser.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader",
                  "--use-angle=swiftshader", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-extensions", "--mute-audio", "--hide-scrollbars"]
WINDOW = (800, 600)
# Warnings Chromium logs about itself, not about the page: SwiftShader's performance notes when the
# page (or a screenshot) reads pixels back. WebGL errors ("WebGL: INVALID_VALUE ...") still count.
BROWSER_NOTES = ("GPU stall due to ReadPixels",)
# How long the browser may take to start, load a page or answer a command, s. Generous: two cores
# are shared with the rest of the suite, and SwiftShader compiles shaders on the CPU.
START_TIMEOUT = 60.0
COMMAND_TIMEOUT = 60.0
# Projected body centres are compared with the centroid of the body's pixels. A sphere's image under
# perspective is an ellipse whose centre moves off the projected centre by about r_px·(offset from the
# image centre / focal length)·(r / distance) -- under a pixel for these scenes -- and the tessellated
# outline and anti-aliasing move the centroid by about another pixel.
CENTROID_TOLERANCE_PX = 3.0


# ------------------------------------------------------------------------------ a tiny CDP client


class WebSocket:
    """A client websocket (RFC 6455) over a plain TCP socket: text frames, masked as clients must."""

    def __init__(self, url: str, timeout: float):
        assert url.startswith("ws://")
        hostport, _, path = url[5:].partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        head, _, self.buffer = head.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buffer)))
            if not chunk:
                raise ConnectionError("websocket closed")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, text: str) -> None:
        payload = text.encode()
        n = len(payload)
        head = bytes([0x81])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        body = (np.frombuffer(payload, np.uint8) ^ np.resize(np.frombuffer(mask, np.uint8), n)).tobytes()
        self.sock.sendall(head + mask + body)

    def recv(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            payload = self._read(n)
            if mask:
                payload = (np.frombuffer(payload, np.uint8) ^ np.resize(np.frombuffer(mask, np.uint8), n)).tobytes()
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if opcode == 0x9:                         # ping: answer, keep reading
                self.sock.sendall(bytes([0x8A, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)
                continue
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if b0 & 0x80:
                    return message.decode()

    def close(self) -> None:
        self.sock.close()


class Browser:
    """Headless Chromium with one page, driven over CDP. Console messages, uncaught exceptions and
    network requests of the page are collected."""

    def __init__(self, width: int = WINDOW[0], height: int = WINDOW[1]):
        self.profile = tempfile.mkdtemp(prefix="scenec-chromium-")
        self.proc = subprocess.Popen(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = pathlib.Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not start")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = []
        while not any(t.get("type") == "page" for t in targets):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                targets = json.load(r)
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium has no page")
            time.sleep(0.1)
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = WebSocket(page["webSocketDebuggerUrl"], COMMAND_TIMEOUT)
        self.next_id = 0
        self.events: list[dict] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)

    def call(self, method: str, **params):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float = COMMAND_TIMEOUT) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for e in self.events:
                if e["method"] == method:
                    self.events.remove(e)
                    return e
            self.events.append(json.loads(self.ws.recv()))
        raise TimeoutError(method)

    def eval(self, expression: str):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        deadline = time.monotonic() + START_TIMEOUT
        while not self.eval("!!(window.scenecViewer && window.scenecViewer.ready)"):
            if time.monotonic() > deadline:
                raise TimeoutError("the viewer did not become ready")
            time.sleep(0.05)
        self.settle()

    def settle(self) -> None:
        """Wait for two animation frames, so that what was asked for is drawn."""
        self.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def screenshot(self) -> np.ndarray:
        png = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        return decode_png(png)

    def problems(self) -> list[str]:
        """The page's console errors and warnings, uncaught exceptions, browser errors, and requests
        for anything but the page itself."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('text')} "
                           f"{p['exceptionDetails'].get('exception', {}).get('description', '')}")
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append(f"console.{p['type']}: {[a.get('value', a.get('description')) for a in p['args']]}")
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning") \
                    and not any(note in p["entry"]["text"] for note in BROWSER_NOTES):
                out.append(f"log {p['entry']['level']}: {p['entry']['text']}")
            elif e["method"] == "Network.requestWillBeSent":
                url = p["request"]["url"]
                if not url.startswith(("file://", "data:", "about:")):
                    out.append(f"network request: {url}")
        return out

    def close(self) -> None:
        try:
            if getattr(self, "ws", None):
                self.ws.close()
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)


def decode_png(data: bytes) -> np.ndarray:
    """(H, W, 3) uint8 from an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    ch = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * ch)
    out = np.zeros((h, w * ch), np.int32)
    for i in range(h):
        f, row = raw[i, 0], raw[i, 1:].astype(np.int32)
        prev = out[i - 1] if i else np.zeros(w * ch, np.int32)
        if f == 0:
            out[i] = row
        elif f == 2:
            out[i] = (row + prev) % 256
        else:                                   # Sub, Average, Paeth: byte by byte
            cur = np.zeros(w * ch, np.int32)
            for k in range(w * ch):
                a = cur[k - ch] if k >= ch else 0
                b = prev[k]
                c = prev[k - ch] if k >= ch else 0
                if f == 1:
                    pred = a
                elif f == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[k] = (row[k] + pred) % 256
            out[i] = cur
    return out.reshape(h, w, ch)[:, :, :3].astype(np.uint8)


# ------------------------------------------------------------------------------------ helpers

SCENE = """\
name: two_shapes
bodies:
  - name: ground
    colliders:
      - plane: {size: [4, 4]}
        rgba: [0.85, 0.85, 0.85, 1]
  - name: red_ball
    pos: [0.6, 0, 0.3]
    colliders:
      - sphere: {radius: 0.3}
        rgba: [0.95, 0.05, 0.05, 1]
  - name: blue_box
    pos: [-0.6, 0.3, 0.25]
    colliders:
      - box: {half_size: [0.25, 0.25, 0.25]}
        rgba: [0.05, 0.1, 0.95, 1]
joints:
  - {name: ball_free, kind: free, child: red_ball}
  - {name: box_free, kind: free, child: blue_box}
"""


def project(camera: dict, points) -> np.ndarray:
    """Pixel coordinates (…, 2) of world points under the viewer's camera: a pinhole with the focal
    length set by the vertical field of view (derived here, not taken from the page's matrices)."""
    eye, target, up = (np.asarray(camera[k], np.float64) for k in ("eye", "target", "up"))
    f = target - eye
    f /= np.linalg.norm(f)
    r = np.cross(f, up)
    r /= np.linalg.norm(r)
    u = np.cross(r, f)
    focal = camera["height"] / 2 / np.tan(np.radians(camera["fovy"]) / 2)
    rel = np.asarray(points, np.float64) - eye
    z = rel @ f
    return np.stack([camera["width"] / 2 + focal * (rel @ r) / z, camera["height"] / 2 - focal * (rel @ u) / z], -1)


def is_red(img):
    c = img.astype(int)
    return (c[..., 0] > 90) & (c[..., 0] > 2 * c[..., 1]) & (c[..., 0] > 2 * c[..., 2])


def is_blue(img):
    c = img.astype(int)
    return (c[..., 2] > 90) & (c[..., 2] > 2 * c[..., 0]) & (c[..., 2] > 1.5 * c[..., 1])


def ball_path(T: int):
    """The red ball goes round a circle of radius 0.6 m at 0.3 m height; the box stays put."""
    time_s = np.arange(T) * 0.05
    angle = 2 * np.pi * time_s / (T * 0.05)
    xpos = np.zeros((T, 3, 3))
    xpos[:, 1] = np.stack([0.6 * np.cos(angle), 0.6 * np.sin(angle), np.full(T, 0.3)], -1)
    xpos[:, 2] = [-0.6, 0.3, 0.25]
    xquat = np.zeros((T, 3, 4))
    xquat[..., 0] = 1.0
    return time_s, xpos, xquat


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    from scenec.compiler import api

    folder = tmp_path_factory.mktemp("viewer")
    path = folder / "two_shapes.yaml"
    path.write_text(SCENE)
    compiled = api.compile(str(path), measure_jit=False)
    return path, compiled


@pytest.fixture(scope="module")
def browser():
    b = Browser()
    yield b
    b.close()


def write_page(scene, T=40, envs=1):
    from scenec.compiler.cli import main
    from scenec.runtime import trajectory

    path, compiled = scene
    time_s, xpos, xquat = ball_path(T)
    xpos = np.repeat(xpos[:, None], envs, axis=1)
    xquat = np.repeat(xquat[:, None], envs, axis=1)
    traj = trajectory.make(compiled.ir.source_hash, "two_shapes", compiled.model.body_names, time_s, xpos, xquat)
    tfile = path.with_name(f"traj_{T}_{envs}.npz")
    trajectory.save(traj, tfile)
    html = path.with_name(f"view_{T}_{envs}.html")
    assert main(["view", str(path), "--trajectory", str(tfile), "-o", str(html)]) == 0
    return html, traj


# -------------------------------------------------------------------------------------- tests


def test_page_shows_bodies_where_the_camera_projects_them(scene, browser):
    html, traj = write_page(scene)
    browser.events.clear()
    browser.open(html.as_uri())
    assert browser.eval("scenecViewer.frames") == traj.nframe
    img = browser.screenshot()
    assert img.shape[:2] == (WINDOW[1], WINDOW[0])
    cam = browser.eval("scenecViewer.camera()")
    assert (cam["width"], cam["height"]) == WINDOW
    k = browser.eval("scenecViewer.frame()")
    assert k == 0
    ball_px = project(cam, traj.xpos[k, 0, 1])
    box_px = project(cam, traj.xpos[k, 0, 2])
    for px, mask_of, name in ((ball_px, is_red, "ball"), (box_px, is_blue, "box")):
        mask = mask_of(img)
        x, y = int(px[0]), int(px[1])
        assert mask[y, x], f"the {name}'s projected centre ({x}, {y}) is not {name}-coloured: {img[y, x]}"
        # Centroid of the connected region of that colour around the projected centre.
        ys, xs = np.nonzero(mask)
        near = np.hypot(xs - px[0], ys - px[1]) < 120
        centroid = np.array([xs[near].mean() + 0.5, ys[near].mean() + 0.5])
        assert np.linalg.norm(centroid - px) < CENTROID_TOLERANCE_PX + 0.15 * np.sqrt(near.sum() / np.pi), \
            (name, centroid, px)
    # The ball's apparent radius: r·focal/distance for a sphere seen along its axis, within 10 %.
    f = cam["height"] / 2 / np.tan(np.radians(cam["fovy"]) / 2)
    dist = np.linalg.norm(np.asarray(cam["eye"]) - traj.xpos[k, 0, 1])
    expected_r = 0.3 * f / np.sqrt(dist ** 2 - 0.3 ** 2)
    ys, xs = np.nonzero(is_red(img))
    assert abs(np.sqrt(len(xs) / np.pi) - expected_r) < 0.1 * expected_r + 2
    assert browser.problems() == []


def test_hover_names_the_body(scene, browser):
    html, traj = write_page(scene)
    browser.open(html.as_uri())
    cam = browser.eval("scenecViewer.camera()")
    x, y = project(cam, traj.xpos[0, 0, 2])
    browser.call("Input.dispatchMouseEvent", type="mouseMoved", x=float(x), y=float(y))
    browser.settle()
    assert browser.eval("scenecViewer.tooltip()").startswith("blue_box")
    hit = browser.eval(f"scenecViewer.pick({x}, {y})")
    assert hit["body"] == "blue_box" and hit["env"] == 0
    bx, by = project(cam, traj.xpos[0, 0, 1])
    assert browser.eval(f"scenecViewer.pick({bx}, {by})")["body"] == "red_ball"
    assert browser.eval("scenecViewer.pick(3, 3)") is None      # the sky above the scene
    assert browser.problems() == []


def test_playback_changes_the_picture(scene, browser):
    html, traj = write_page(scene)
    browser.open(html.as_uri())
    first = browser.screenshot()
    browser.eval("document.getElementById('play').click()")
    deadline = time.monotonic() + 30
    while browser.eval("scenecViewer.frame()") < 5 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert browser.eval("scenecViewer.playing()")
    browser.eval("scenecViewer.pause()")
    later = browser.screenshot()
    k = browser.eval("scenecViewer.frame()")
    assert k >= 5
    changed = np.any(first != later, axis=-1)
    assert changed.sum() > 500
    # The ball is now where frame k puts it.
    cam = browser.eval("scenecViewer.camera()")
    x, y = project(cam, traj.xpos[k, 0, 1]).astype(int)
    assert is_red(later)[y, x]
    # The scrubber jumps to a frame.
    browser.eval(f"(() => {{ const s = document.getElementById('scrub'); s.value = '{traj.nframe - 1}'; "
                 "s.dispatchEvent(new Event('input')); })()")
    browser.settle()
    assert browser.eval("scenecViewer.frame()") == traj.nframe - 1
    assert browser.problems() == []


def test_environments_side_by_side_and_frame_cost(scene, browser):
    """Eight environments of a 1000-frame trajectory: each drawn at its offset; report the cost."""
    html, traj = write_page(scene, T=1000, envs=8)
    browser.open(html.as_uri())
    offsets = np.asarray(browser.eval("scenecViewer.envOffsets()"))
    assert offsets.shape == (8, 3) and len({tuple(o) for o in offsets}) == 8
    img = browser.screenshot()
    cam = browser.eval("scenecViewer.camera()")
    hits = 0
    for e in range(8):
        x, y = project(cam, traj.xpos[0, e, 1] + offsets[e]).astype(int)
        if 0 <= x < WINDOW[0] and 0 <= y < WINDOW[1] - 40:
            hits += bool(is_red(img)[y, x])
            hit = browser.eval(f"scenecViewer.pick({x}, {y})")
            assert (hit["env"], hit["body"]) == (e, "red_ball")
    assert hits == 8
    ms = browser.eval("scenecViewer.benchmark(60)")
    print(f"\nviewer frame cost, 1000 frames x 8 environments, SwiftShader: {ms:.1f} ms per frame")
    assert browser.problems() == []


@pytest.mark.slow   # 15 s; the other viewer tests load the page in the default run
def test_humanoid_1000_frames_8_environments(browser, tmp_path):
    """The issue's load: a 1000-frame Humanoid trajectory, 8 environments side by side. The poses are
    the initial pose swaying (no physics needed); the page must load cleanly and draw every
    environment. The frame cost is printed (SwiftShader draws on the CPU: an upper bound)."""
    from scenec.compiler import api
    from scenec.compiler.cli import main
    from scenec.runtime import trajectory

    root = pathlib.Path(__file__).resolve().parent.parent
    scene = root / "scenes" / "humanoid.yaml"
    compiled = api.compile(str(scene), measure_jit=False)
    s0 = compiled.init()
    T, E = 1000, 8
    time_s = np.arange(T) * float(compiled.model.timestep)
    sway = 0.05 * np.sin(2 * np.pi * time_s / 2.0)[:, None, None, None] * np.array([1.0, 0.0, 0.0])
    xpos = np.asarray(s0.xpos)[None, None] + sway + np.zeros((T, E, 1, 1))
    xquat = np.broadcast_to(np.asarray(s0.xquat), (T, E) + np.asarray(s0.xquat).shape)
    traj = trajectory.make(compiled.ir.source_hash, "humanoid", compiled.model.body_names, time_s, xpos, xquat)
    tfile, html = tmp_path / "humanoid.npz", tmp_path / "humanoid.html"
    trajectory.save(traj, tfile)
    assert main(["view", str(scene), "--trajectory", str(tfile), "-o", str(html)]) == 0
    browser.events.clear()
    browser.open(html.as_uri())
    assert browser.eval("scenecViewer.frames") == T and browser.eval("scenecViewer.envs") == E
    cam = browser.eval("scenecViewer.camera()")
    offsets = np.asarray(browser.eval("scenecViewer.envOffsets()"))
    torso = compiled.model.body_names.index("torso") if "torso" in compiled.model.body_names else 1
    for e in range(E):
        x, y = project(cam, traj.xpos[0, e, torso] + offsets[e])
        hit = browser.eval(f"scenecViewer.pick({x}, {y})")
        assert hit is not None and hit["env"] == e, (e, hit)
    ms = browser.eval("scenecViewer.benchmark(20)")
    print(f"\nviewer frame cost, humanoid ({compiled.model.nbody - 1} bodies, {compiled.model.ngeom} colliders), "
          f"{T} frames x {E} environments, SwiftShader on the CPU: {ms:.1f} ms per frame")
    assert browser.problems() == []


def test_ant_page_loads(scene, browser, tmp_path):
    """A real scene through `scenec view --steps`: the page loads cleanly and shows the ant."""
    from scenec.compiler.cli import main

    root = pathlib.Path(__file__).resolve().parent.parent
    from scenec.runtime import trajectory

    html, saved = tmp_path / "ant.html", tmp_path / "ant.npz"
    assert main(["view", str(root / "scenes" / "ant.yaml"), "--steps", "4", "-o", str(html),
                 "--save-trajectory", str(saved)]) == 0
    browser.events.clear()
    browser.open(html.as_uri())
    img = browser.screenshot()
    # The ant's default colour differs from the floor's and the sky's: something is drawn in the middle.
    centre = img[WINDOW[1] // 2 - 40:WINDOW[1] // 2 + 40, WINDOW[0] // 2 - 40:WINDOW[0] // 2 + 40].astype(int)
    assert np.ptp(centre.reshape(-1, 3), axis=0).max() > 40
    # Contact points (the feet on the floor, recorded by --steps) are drawn red where they project.
    traj = trajectory.load(saved)
    k = browser.eval("scenecViewer.frame()")
    feet = traj.contact_pos[k, 0][traj.contact_active[k, 0]]
    assert len(feet) >= 3
    browser.eval("document.getElementById('contacts').click(); document.getElementById('joints').click()")
    browser.settle()
    shown = browser.screenshot()
    cam = browser.eval("scenecViewer.camera()")
    for x, y in project(cam, feet).astype(int):
        if 0 <= x < WINDOW[0] and 0 <= y < WINDOW[1] - 60:
            assert is_red(shown)[y, x] and not is_red(img)[y, x], (x, y, shown[y, x])
    assert np.any(shown != img)
    if os.environ.get("SCENEC_KEEP_SCREENSHOTS"):
        from scenec.compiler.viewer.images import encode_png

        pathlib.Path(os.environ["SCENEC_KEEP_SCREENSHOTS"], "ant_viewer.png").write_bytes(encode_png(img))
    assert browser.problems() == []
