#!/usr/bin/env bash
# The README's pkg-config line for the default (static) installation:
# a program using auditpipe::open (every sink) links with
# `pkg-config --static --cflags --libs auditpipe-open` and runs. Before,
# libpq in Requires.private pulled Debian libpq.pc's Libs.private
# (-lpgcommon -lpgport -lgssapi_krb5 -lldap), which libpq-dev does not ship.
#
#   tests/package/pkg_config_static.sh <build dir> <source dir> <scratch dir>
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
pcdir=$(dirname "$(find "$work/prefix" -name auditpipe-open.pc | head -1)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --static --cflags --libs auditpipe-open)
g++ -std=c++20 -DCONSUMER_HAS_SQLITE -o "$work/consumer" "$src/tests/consumer/main.cpp" $flags
cd "$work"
./consumer
