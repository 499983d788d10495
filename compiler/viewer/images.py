"""Image and video files from RGB frames: PNG (zlib), GIF (own LZW encoder), MP4 (through ffmpeg).

Where it sits: compiler/viewer, used by `scenec render` after `runtime.render` has drawn the frames.
No dependency beyond numpy and the standard library; MP4 needs an `ffmpeg` executable on PATH
(Debian's package `ffmpeg`), and says so plainly when there is none.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib

import numpy as np

# GIF palette: 256 colours chosen by median cut over at most this many pixels sampled evenly from all
# frames (more adds time, not visible quality), then every pixel maps to its nearest palette colour
# through a table over colours quantised to 5 bits per channel (32³ cells).
GIF_SAMPLE_PIXELS = 200_000
GIF_TABLE_BITS = 5
# LZW code tables in GIF hold at most 4096 codes (12-bit codes).
GIF_MAX_CODES = 4096


class ImageError(Exception):
    """An image or video cannot be written (a message for a person, e.g. no ffmpeg)."""


def _check_frames(frames) -> np.ndarray:
    a = np.asarray(frames)
    if a.dtype != np.uint8 or a.ndim not in (3, 4) or a.shape[-1] != 3:
        raise ValueError(f"expected uint8 RGB images (…, H, W, 3), got {a.dtype} {a.shape}")
    return a if a.ndim == 4 else a[None]


# ---------------------------------------------------------------------------------------------- PNG


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(image) -> bytes:
    """A PNG file (8-bit RGB, no interlace) of one image (H, W, 3) uint8. Every row uses the "Up"
    filter (the byte-wise difference from the row above), which suits rendered images well."""
    a = _check_frames(image)[0]
    h, w, _ = a.shape
    rows = a.reshape(h, w * 3)
    up = np.vstack([rows[:1], rows[1:] - rows[:-1]])       # uint8 arithmetic wraps mod 256
    raw = np.hstack([np.full((h, 1), 2, np.uint8), up]).tobytes()
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header)
            + _png_chunk(b"IDAT", zlib.compress(raw, 9)) + _png_chunk(b"IEND", b""))


# ---------------------------------------------------------------------------------------------- GIF


def median_cut_palette(pixels: np.ndarray, ncolour: int = 256) -> np.ndarray:
    """(≤ncolour, 3) uint8 palette: split the box of colours with the widest channel range at its
    median until there are ncolour boxes; each box's mean colour is an entry."""
    boxes = [np.asarray(pixels, np.int32).reshape(-1, 3)]
    while len(boxes) < ncolour:
        spans = [np.ptp(b, axis=0) if len(b) > 1 else np.zeros(3, np.int32) for b in boxes]
        k = int(np.argmax([s.max() for s in spans]))
        if spans[k].max() == 0:
            break                                   # every box holds one colour: nothing to split
        box, axis = boxes.pop(k), int(np.argmax(spans[k]))
        box = box[np.argsort(box[:, axis], kind="stable")]
        half = len(box) // 2
        boxes += [box[:half], box[half:]]
    return np.array([np.round(b.mean(axis=0)) for b in boxes], np.uint8)


def quantise(frames: np.ndarray, palette: np.ndarray) -> np.ndarray:
    """Palette indices (…, H, W) uint8 of the nearest palette colour to each pixel (via the 5-bit
    table described at GIF_TABLE_BITS)."""
    n = 1 << GIF_TABLE_BITS
    shift = 8 - GIF_TABLE_BITS
    centres = (np.arange(n) << shift) + (1 << shift) // 2
    grid = np.stack(np.meshgrid(centres, centres, centres, indexing="ij"), -1).reshape(-1, 3)
    d = ((grid[:, None, :].astype(np.int32) - palette[None].astype(np.int32)) ** 2).sum(-1)
    table = np.argmin(d, axis=1).astype(np.uint8)
    q = frames >> shift
    return table[(q[..., 0].astype(np.int32) << (2 * GIF_TABLE_BITS))
                 | (q[..., 1].astype(np.int32) << GIF_TABLE_BITS) | q[..., 2]]


def lzw_encode(indices: bytes, min_code_size: int) -> bytes:
    """GIF's variable-width LZW of a string of palette indices (codes packed LSB first). A clear code
    starts the stream and restarts the table whenever it is full."""
    clear, end = 1 << min_code_size, (1 << min_code_size) + 1
    out = bytearray()
    acc = nbits = 0

    def emit(code, width):
        nonlocal acc, nbits
        acc |= code << nbits
        nbits += width
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8

    width = min_code_size + 1
    table: dict = {}
    next_code = end + 1
    emit(clear, width)
    prefix = -1
    for byte in indices:
        if prefix < 0:
            prefix = byte
            continue
        key = (prefix << 8) | byte
        code = table.get(key)
        if code is not None:
            prefix = code
            continue
        emit(prefix, width)
        if next_code < GIF_MAX_CODES:
            table[key] = next_code
            # The decoder widens its codes one code later than the encoder adds them.
            if next_code == (1 << width) and width < 12:
                width += 1
            next_code += 1
        else:
            emit(clear, width)
            table.clear()
            next_code = end + 1
            width = min_code_size + 1
        prefix = byte
    if prefix >= 0:
        emit(prefix, width)
    emit(end, width)
    if nbits:
        out.append(acc & 0xFF)
    return bytes(out)


def _sub_blocks(data: bytes) -> bytes:
    return b"".join(bytes([len(data[i:i + 255])]) + data[i:i + 255]
                    for i in range(0, len(data), 255)) + b"\x00"


def encode_gif(frames, fps: float = 20.0, loop: bool = True) -> bytes:
    """An animated GIF89a of frames (T, H, W, 3) uint8 with one global 256-colour palette, shown at
    `fps` (GIF delays are whole hundredths of a second, so the rate is rounded to one of those)."""
    a = _check_frames(frames)
    t, h, w, _ = a.shape
    flat = a.reshape(-1, 3)
    key = (flat[:, 0].astype(np.int32) << 16) | (flat[:, 1].astype(np.int32) << 8) | flat[:, 2]
    unique, inverse = np.unique(key, return_inverse=True)
    if len(unique) <= 256:
        # Few colours (flat shading, synthetic frames): the palette is exactly them, lossless.
        palette = np.stack([unique >> 16, (unique >> 8) & 0xFF, unique & 0xFF], -1).astype(np.uint8)
        idx = inverse.astype(np.uint8).reshape(a.shape[:3])
    else:
        step = max(1, len(flat) // GIF_SAMPLE_PIXELS)
        palette = median_cut_palette(flat[::step])
        idx = quantise(a, palette)
    table = np.zeros((256, 3), np.uint8)
    table[:len(palette)] = palette
    delay = max(1, int(round(100.0 / fps)))
    out = bytearray(b"GIF89a")
    out += struct.pack("<HHBBB", w, h, 0xF7, 0, 0)     # global table of 2^(7+1) colours
    out += table.tobytes()
    if loop and t > 1:
        out += b"\x21\xFF\x0BNETSCAPE2.0\x03\x01\x00\x00\x00"   # loop forever
    for k in range(t):
        out += b"\x21\xF9\x04\x00" + struct.pack("<H", delay) + b"\x00\x00"
        out += b"\x2C" + struct.pack("<HHHHB", 0, 0, w, h, 0)
        out += b"\x08" + _sub_blocks(lzw_encode(idx[k].tobytes(), 8))
    out += b"\x3B"
    return bytes(out)


# ---------------------------------------------------------------------------------------------- MP4


def ffmpeg_path() -> str | None:
    return shutil.which("ffmpeg")


def write_mp4(frames, path, fps: float = 30.0) -> None:
    """An H.264 MP4 (yuv420p, playable everywhere) through ffmpeg, the frames piped in as raw RGB.
    Odd sizes are padded by one pixel (yuv420p needs even ones)."""
    a = _check_frames(frames)
    exe = ffmpeg_path()
    if exe is None:
        raise ImageError("writing MP4 needs the ffmpeg program, which is not on PATH (Debian: "
                         "apt-get install ffmpeg); write a .gif or .png instead")
    t, h, w, _ = a.shape
    cmd = [exe, "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
           "-s", f"{w}x{h}", "-r", f"{fps:g}", "-i", "-", "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2",
           "-pix_fmt", "yuv420p", "-c:v", "libx264", "-movflags", "+faststart", str(path)]
    proc = subprocess.run(cmd, input=a.tobytes(), capture_output=True)
    if proc.returncode != 0:
        msg = proc.stderr.decode(errors="replace").strip().splitlines()
        raise ImageError(f"ffmpeg could not write {path}: {msg[-1] if msg else 'exit code ' + str(proc.returncode)}")
