#!/usr/bin/env bash
# Makes (once) a Debian bullseye root (glibc 2.31) with python3 and
# python3-venv, for the older-distribution test (bullseye_test.py), and
# prints its path. Cached outside the clone:
#   ${GPUSLACK_ROOTS_CACHE:-~/.cache/gpuslack-roots}/bullseye-r<recipe>
# debootstrap works in a temporary folder beside it and the root is renamed
# into place only when complete, so a half-finished earlier run (killed,
# out of disk) leaves no root that looks usable: its leftovers are removed.
# The mirror is the one the machine's apt sources name for Debian itself.
# Needs root (debootstrap, chroot) and debootstrap (scripts/deps.sh).
set -euo pipefail

SUITE=bullseye
# Bump when the root's recipe (packages, variant) changes.
RECIPE=1
PACKAGES=python3,python3-venv
CACHE=${GPUSLACK_ROOTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuslack-roots}
ROOT=$CACHE/$SUITE-r$RECIPE
log() { printf 'bullseye_root: %s\n' "$*" >&2; }

if [ -f "$ROOT/.done" ]; then echo "$ROOT"; exit 0; fi
[ "$(id -u)" = 0 ] || { log "needs root (debootstrap and chroot); run as root"; exit 1; }
command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] \
  || { log "debootstrap is not installed: run scripts/deps.sh"; exit 1; }
export PATH=$PATH:/usr/sbin:/sbin

# Debian's mirror, as configured for apt (deb822 .sources, then sources.list):
# the first deb entry that is not the security archive.
mirror=$( { cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
            | awk '/^URIs:/ {print $2}';
          grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
            | awk '{for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) {print $i; break}}' || true; } \
          | grep -v security | head -n 1 || true)
[ -n "$mirror" ] || { log "no Debian mirror among the apt sources"; exit 1; }

mkdir -p "$CACHE"
# Leftovers of earlier runs that did not finish.
rm -rf "$ROOT" "$CACHE/$SUITE-r$RECIPE".tmp.*
tmp=$(mktemp -d "$CACHE/$SUITE-r$RECIPE.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log "debootstrap $SUITE ($PACKAGES) from the apt sources' mirror into $ROOT"
if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$tmp/root" "$mirror" \
       >"$tmp/debootstrap.log" 2>&1; then
  log "debootstrap failed; its last lines:"
  tail -n 5 "$tmp/debootstrap.log" >&2
  exit 1
fi
chroot "$tmp/root" /usr/bin/python3 -c 'import venv, ensurepip' \
  || { log "the root's python3 has no venv/ensurepip"; exit 1; }
# Its own apt lists and caches are not needed again.
(cd "$tmp/root" && rm -rf var/cache/apt/archives/*.deb var/lib/apt/lists/*_Packages)
mv "$tmp/root" "$ROOT"
touch "$ROOT/.done"
echo "$ROOT"
