#!/bin/sh
# `cmake --install` the build tree into a temporary prefix, then configure,
# build and run a C++-only consumer project that uses find_package(RRFP).
# Usage: check.sh BUILD_DIR SOURCE_DIR
set -e
build=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cmake --install "$build" --prefix "$dir/prefix" >/dev/null
cmake -S "$src/tests/install/consumer" -B "$dir/b" -DCMAKE_PREFIX_PATH="$dir/prefix" >/dev/null
cmake --build "$dir/b" >/dev/null
"$dir/b/consumer"
test -x "$dir/prefix/bin/rrfp"
