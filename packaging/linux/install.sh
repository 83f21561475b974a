#!/usr/bin/env bash
# Install Keepmind's launcher and icons for the current user (freedesktop menus: GNOME, KDE, Xfce...).
#   packaging/linux/install.sh [COMMAND]     COMMAND: what starts Keepmind (default: `keepmind` on PATH,
#                                            e.g. /opt/keepmind/keepmind for the PyInstaller build)
#   packaging/linux/install.sh --uninstall
# Honours XDG_DATA_HOME (default ~/.local/share). Start at login is separate: `keepmind autostart on`.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ICONS=$(cd "$HERE/../../icons" && pwd)
DATA=${XDG_DATA_HOME:-$HOME/.local/share}
APPS="$DATA/applications"
THEME="$DATA/icons/hicolor"

if [ "${1:-}" = "--uninstall" ]; then
  rm -f "$APPS/keepmind.desktop" "$THEME/scalable/apps/keepmind.svg"
  for size in 16 22 32 64; do rm -f "$THEME/${size}x${size}/apps/keepmind.png"; done
  echo "removed the Keepmind launcher and icons from $DATA"
  exit 0
fi

COMMAND=${1:-$(command -v keepmind || true)}
if [ -z "$COMMAND" ]; then
  echo "keepmind is not on PATH: give the command that starts it, e.g. $0 /opt/keepmind/keepmind" >&2
  exit 2
fi

for size in 16 22 32 64; do
  install -D -m 0644 "$ICONS/keepmind-healthy-$size.png" "$THEME/${size}x${size}/apps/keepmind.png"
done
install -D -m 0644 "$ICONS/keepmind-healthy.svg" "$THEME/scalable/apps/keepmind.svg"
mkdir -p "$APPS"
# Exec= quoting (Desktop Entry spec): a path with spaces or specials goes in double quotes.
case "$COMMAND" in
  *[[:space:]\"\`\$\\]*) EXEC="\"$(printf '%s' "$COMMAND" | sed 's/[\\"`$]/\\&/g')\"" ;;
  *) EXEC="$COMMAND" ;;
esac
sed "s|^Exec=.*|Exec=$EXEC|" "$HERE/keepmind.desktop" > "$APPS/keepmind.desktop"
chmod 0644 "$APPS/keepmind.desktop"
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$APPS" || true
command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t "$THEME" 2>/dev/null || true
echo "installed $APPS/keepmind.desktop (Exec=$EXEC) and the Keepmind icons in $THEME"
