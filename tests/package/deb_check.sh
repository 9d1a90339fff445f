#!/usr/bin/env bash
# The Debian packages, end to end, in two phases (two tests, so that the
# long build does not hold every other test back):
#
#   tests/package/deb_check.sh <source dir> <scratch dir> build
#       builds a shared Release tree of the source, makes the packages with
#       CPack and checks them with lintian; installs nothing.
#   tests/package/deb_check.sh <source dir> <scratch dir> install
#       installs the packages the build phase made with dpkg -i, builds
#       tests/consumer_sqlite against them with CMake and with pkg-config,
#       runs both, runs the demo program of auditpipe-tools, and removes the
#       packages again, also on failure. Nothing else may run meanwhile
#       (RUN_SERIAL): no other test may find them in /usr.
#
# The install phase needs root (dpkg -i) and refuses to run where auditpipe
# is already installed under /usr, so as neither to clobber nor to remove it.
set -euo pipefail
src=$(realpath "$1")
work=$2
phase=${3:?usage: $0 <source dir> <scratch dir> build|install}
skip=77  # CTest's SKIP_RETURN_CODE for this test
build=$work/build

if [ "$phase" = build ]; then
  rm -rf "$work"
  mkdir -p "$work"
  # Debian's hardening flags (dpkg-buildflags), so lintian has nothing to say
  # of them; without -g, which CPack strips again anyway, to build faster.
  # A unity build: this phase took 255 s (442 CPU s) as separate files and
  # 145 s (245 CPU s) so, back to back here, and the test command is bound
  # by CPU as a whole.
  cflags="$(dpkg-buildflags --get CXXFLAGS | sed 's/\(^\| \)-g\( \|$\)/ /') $(dpkg-buildflags --get CPPFLAGS)"
  ldflags="$(dpkg-buildflags --get LDFLAGS)"
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DCMAKE_INSTALL_PREFIX=/usr -DAUDITPIPE_BUILD_TESTS=OFF -DAUDITPIPE_BUILD_BENCH=OFF \
    -DAUDITPIPE_BUILD_EXAMPLES=ON -DAUDITPIPE_WERROR=ON -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_CXX_FLAGS="$cflags" -DCMAKE_SHARED_LINKER_FLAGS="$ldflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" \
    >"$work/configure.log"
  cmake --build "$build" -j2 >"$work/build.log"
  (cd "$build" && cpack -G DEB >"$work/cpack.log")
  debs=("$build"/packages/*.deb)
  echo "deb_check: made ${debs[*]##*/}" >&2
  [ ${#debs[@]} -eq 3 ] || { echo "deb_check: expected 3 packages" >&2; exit 1; }

  # lintian: no error, and no warning that an override does not explain.
  lintian --fail-on error,warning --no-tag-display-limit "${debs[@]}"

  exit 0
fi

[ "$phase" = install ] || { echo "deb_check: phase must be build or install" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ]; then
  echo "deb_check: needs root for dpkg -i; skipped" >&2
  exit $skip
fi
packages=(auditpipe-tools libauditpipe-dev)
runtime=
for p in "${packages[@]}" libauditpipe0.1; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "installed"; then
    echo "deb_check: $p is already installed; remove it first (dpkg -r $p)" >&2
    exit 1
  fi
done
if [ -e /usr/include/auditpipe ]; then
  echo "deb_check: /usr/include/auditpipe exists (an install outside dpkg?); refusing" >&2
  exit 1
fi

debs=("$build"/packages/*.deb)
[ ${#debs[@]} -eq 3 ] && [ -f "${debs[0]}" ] ||
  { echo "deb_check: no packages in $build/packages (the build phase failed?)" >&2; exit 1; }

cleanup() {
  dpkg --purge "${packages[@]}" "$runtime" >/dev/null 2>&1 || true
}
runtime=$(dpkg-deb -f "$build"/packages/libauditpipe0*.deb Package)
trap cleanup EXIT
dpkg -i "${debs[@]}" >/dev/null

# CMake: find_package(auditpipe COMPONENTS sqlite) from /usr.
cmake -S "$src/tests/consumer_sqlite" -B "$work/cmake_consumer" -DCMAKE_BUILD_TYPE=Release \
  >"$work/consumer.log"
cmake --build "$work/cmake_consumer" >>"$work/consumer.log"
"$work/cmake_consumer/sqlite_consumer" "$work/cmake.db"

# pkg-config, as a Makefile would.
pc="auditpipe-sqlite sqlite3"
g++ -std=c++20 -o "$work/pkg_config_consumer" "$src/tests/consumer_sqlite/main.cpp" \
  $(pkg-config --cflags --libs $pc)
"$work/pkg_config_consumer" "$work/pkg-config.db"
# The static form must resolve too (Requires.private, Libs.private).
static=$(pkg-config --static --libs auditpipe-sqlite)
for lib in -lauditpipe_sqlite -lauditpipe_sql -lauditpipe -lsoci_sqlite3 -lsqlite3 -lspdlog; do
  [[ " $static " == *" $lib "* ]] || { echo "deb_check: pkg-config --static lacks $lib: $static" >&2; exit 1; }
done

# The tools package's demo program, briefly.
/usr/libexec/auditpipe/message_platform --threads 2 --messages 1000 \
  --url "sqlite://$work/demo.db" >"$work/demo.log"
grep -q "every record landed exactly once" "$work/demo.log"

cleanup
trap - EXIT
for p in "${packages[@]}" "$runtime"; do
  state=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  if [ -n "$state" ] && [ "$state" != "un " ]; then
    echo "deb_check: $p was not removed (dpkg state '$state')" >&2
    exit 1
  fi
done
if [ -e /usr/include/auditpipe ]; then
  echo "deb_check: /usr/include/auditpipe left behind" >&2
  exit 1
fi
echo "deb_check: packages built, accepted by lintian, installed, used and removed" >&2
