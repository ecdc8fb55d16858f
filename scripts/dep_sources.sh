# Sourced by scripts/deps.sh (GCC, the build's cache) and scripts/wheel.sh
# (zig, the wheel's): the two dependencies built from Debian's source
# packages, so that both builds take the same sources the same way. The
# caller defines log() and JOBS.

ABSEIL_VERSION=20220623.1
JEMALLOC_VERSION=5.3.0

# fetch_source PKG VERSION DEST: Debian source package PKG, with Debian's
# patches, which must be upstream VERSION, into DEST (replaced). Works in a
# scratch folder beside DEST.
fetch_source() {
  local pkg=$1 version=$2 dest=$3 work dir
  work=$(mktemp -d "$(dirname "$dest")/src.XXXXXX")
  (cd "$work" && apt-get source -q "$pkg" >&2)
  dir=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
  [ "$(basename "${dir:-none}")" = "$pkg-$version" ] \
    || { log "apt-get source $pkg gave '$(basename "${dir:-none}")', expected $pkg-$version"; exit 1; }
  rm -rf "$dest"; mv "$dir" "$dest"; rm -rf "$work"
}

# build_jemalloc DIR [CONFIGURE_ARG...]: jemalloc with gpuslack's own prefix
# and private namespace, nothing exported, no initial-exec TLS and no
# load-time constructor, as DIR/lib/libgpuslack_jemalloc.a and
# DIR/include/jemalloc/jemalloc.h; DIR/.done once built, and then nothing
# to do. CONFIGURE_ARGs (a toolchain's CC, AR, RANLIB) go to its configure.
build_jemalloc() {
  local dir=$1
  shift
  [ -f "$dir/.done" ] && return
  rm -rf "$dir"; mkdir -p "$dir"
  fetch_source jemalloc "$JEMALLOC_VERSION" "$dir/src"
  # No constructor: jemalloc initializes itself at load time by default,
  # and a library preloaded into every process (shells, compilers) must do
  # nothing until it is used. Its lazy initialization on first allocation is
  # thread-safe (init_lock).
  perl -0pi -e 's/JEMALLOC_ATTR\(constructor\)\nstatic void\njemalloc_constructor/JEMALLOC_ATTR(unused)\nstatic void\njemalloc_constructor/' \
    "$dir/src/src/jemalloc.c"
  grep -q 'JEMALLOC_ATTR(unused)' "$dir/src/src/jemalloc.c" \
    || { log "could not remove jemalloc's load-time constructor"; exit 1; }
  (cd "$dir/src" && ./configure "$@" --with-jemalloc-prefix=gpuslack_je_ \
      --with-private-namespace=gpuslack_je_int_ --without-export \
      --disable-initial-exec-tls --disable-cxx --disable-prof --disable-libdl \
      CFLAGS="-O2 -g0 -fPIC" >&2 \
   && make -j "$JOBS" lib/libjemalloc_pic.a >&2)
  mkdir -p "$dir/lib" "$dir/include/jemalloc"
  cp "$dir/src/lib/libjemalloc_pic.a" "$dir/lib/libgpuslack_jemalloc.a"
  cp "$dir/src/include/jemalloc/jemalloc.h" "$dir/include/jemalloc/"
  rm -rf "$dir/src"
  touch "$dir/.done"
}
