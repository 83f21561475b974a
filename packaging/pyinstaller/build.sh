#!/usr/bin/env bash
# Build Keepmind as a one-folder app: DIST/keepmind/ (keepmind, keepmind-tray and their libraries;
# on macOS also DIST/Keepmind.app). Needs the package extra: pip install -e ".[package]".
#   packaging/pyinstaller/build.sh [DIST]        (default DIST: dist/)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DIST=${1:-$ROOT/dist}
WORK=${KEEPMIND_BUILD_DIR:-$ROOT/build/pyinstaller}
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi
"$PYTHON" -c "import PyInstaller" 2>/dev/null || { echo "PyInstaller is missing: pip install -e \".[package]\"" >&2; exit 2; }

# The repository's folders become keepmind.* only when installed: stage the package (no dependencies:
# those come from this Python's environment, where PyInstaller finds them).
rm -rf "$WORK/stage"
mkdir -p "$WORK/stage"
"$PYTHON" -m pip install --no-deps --no-compile --quiet --target "$WORK/stage" "$ROOT"
rm -rf "$WORK/stage/bin"

# pyinstaller-hooks-contrib imports pystray to list its backends: give it one that needs no display.
PYSTRAY_BACKEND=dummy KEEPMIND_STAGE="$WORK/stage" "$PYTHON" -m PyInstaller --noconfirm --log-level WARN \
  --distpath "$DIST" --workpath "$WORK/work" "$HERE/keepmind.spec"
echo "built $DIST/keepmind/keepmind"
