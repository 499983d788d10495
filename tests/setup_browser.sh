#!/usr/bin/env bash
# Installs what tests/test_viewer_browser.py drives: Debian's chromium (headless, CPU WebGL through
# SwiftShader), and ffmpeg, which test_render.py uses to decode GIFs and MP4s and `scenec render`
# needs for .mp4. Idempotent: does nothing when both are already there. Needs root (apt-get).
# The tests skip, saying why, when chromium is absent; they never download a browser of their own.
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v ffmpeg >/dev/null 2>&1 || need+=(ffmpeg)
if [ ${#need[@]} -eq 0 ]; then
  echo "setup_browser: chromium and ffmpeg are installed"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "setup_browser: installing ${need[*]} needs root (apt-get)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q "${need[@]}" fonts-dejavu-core
chromium --version
ffmpeg -version | head -n 1
