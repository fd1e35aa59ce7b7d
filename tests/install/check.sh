#!/bin/sh
# `cmake --install` the build tree into a temporary prefix, then configure,
# build and run a C++-only consumer project that uses find_package(RRFP):
# one program with the core component alone, one with RRFP::rrfp. Every
# installed header's own includes must be installed too (internals stay
# private, but no public header may need one).
# Usage: check.sh BUILD_DIR SOURCE_DIR
set -e
build=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cmake --install "$build" --prefix "$dir/prefix" >/dev/null
inc="$dir/prefix/include/rrfp"
for h in $(cd "$inc" && find . -name '*.hpp' -o -name '*.h'); do
  for dep in $(sed -n 's/^#include "\([a-z_]*\/[a-z_]*\.h[p]*\)".*/\1/p' "$inc/$h"); do
    test -f "$inc/$dep" || { echo "installed header $h includes $dep, which is not installed" >&2; exit 1; }
  done
done
test ! -e "$inc/runtime/graph_run.hpp" || { echo "internal header runtime/graph_run.hpp was installed" >&2; exit 1; }
# The core alone: a project that has no StarPU in its prefix path still configures.
cmake -S "$src/tests/install/consumer" -B "$dir/core" -DCMAKE_PREFIX_PATH="$dir/prefix" >/dev/null
cmake --build "$dir/core" >/dev/null
"$dir/core/hint_user"
cmake -S "$src/tests/install/consumer" -B "$dir/all" -DCMAKE_PREFIX_PATH="$dir/prefix" -DRRFP_CONSUMER_ALL=ON >/dev/null
cmake --build "$dir/all" >/dev/null
"$dir/all/runtime_user"
test -x "$dir/prefix/bin/rrfp"
