#!/usr/bin/env bash
# Builds the CroqTile (Choreo) compiler from source at the commit pinned in scripts/choreo.pin and
# installs it, with the Choreo runtime headers and the CUTLASS/CuTe headers its generated code
# needs, into a toolchain folder croq finds by itself:
#
#   ${CROQ_TOOLCHAINS:-${XDG_DATA_HOME:-~/.local/share}/croq/toolchains}/choreo-<commit12>/
#     build/choreo               the compiler (needs neither CUDA nor LLVM to run)
#     runtime/                   choreo.h and the other runtime headers
#     extern/cutlass/include/    cute/ and cutlass/ (header-only, the pinned CUTLASS tag)
#     toolchain.json             what was built, from where, when
#
# (the layout of a choreo checkout, so CHOREO_HOME=<that folder> works for anything written for one).
#
# Idempotent and cached: an installed, working toolchain of the pinned commit is left as it is
# (--force rebuilds). The build happens in a temporary folder and the result is moved into place
# at the end, so an interrupted run leaves nothing half-installed.
#
# Sources (nothing is downloaded when both are given, for machines without network access):
#   CHOREO_SRC=<git clone or mirror of LancerLab/croqtile>   (default: clone CHOREO_REPO)
#   CUTLASS_SRC=<git clone or mirror of NVIDIA/cutlass, or a folder with include/cutlass>
#                                                             (default: clone CUTLASS_REPO at the tag)
# Options: --dest DIR (install there instead), --jobs N (default 2), --force, --print-dest.
# Needs: git, cmake, a C++17 compiler, flex and bison (scripts/setup.sh --with-choreo installs them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pin_file="$here/choreo.pin"

pin() { sed -n "s/^$1=//p" "$pin_file" | head -1; }
CHOREO_REPO=$(pin CHOREO_REPO)
CHOREO_COMMIT=$(pin CHOREO_COMMIT)
CUTLASS_REPO=$(pin CUTLASS_REPO)
CUTLASS_TAG=$(pin CUTLASS_TAG)
CUTLASS_COMMIT=$(pin CUTLASS_COMMIT)
[ -n "$CHOREO_COMMIT" ] && [ -n "$CUTLASS_TAG" ] || { echo "install_choreo: $pin_file is incomplete" >&2; exit 2; }

dest=""
jobs=2
force=0
print_dest=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dest) dest=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --force) force=1; shift ;;
    --print-dest) print_dest=1; shift ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install_choreo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$dest" ]; then
  root=${CROQ_TOOLCHAINS:-${XDG_DATA_HOME:-$HOME/.local/share}/croq/toolchains}
  dest="$root/choreo-${CHOREO_COMMIT:0:12}"
fi
if [ "$print_dest" = 1 ]; then echo "$dest"; exit 0; fi

say() { echo "install_choreo: $*" >&2; }

installed_ok() {
  [ -x "$dest/build/choreo" ] && [ -f "$dest/toolchain.json" ] &&
    [ -f "$dest/runtime/choreo.h" ] && [ -f "$dest/extern/cutlass/include/cute/tensor.hpp" ] &&
    grep -q "\"choreo_commit\": \"$CHOREO_COMMIT\"" "$dest/toolchain.json" &&
    "$dest/build/choreo" --help >/dev/null 2>&1
}
if [ "$force" = 0 ] && installed_ok; then
  say "choreo ${CHOREO_COMMIT:0:12} already installed in $dest"
  echo "$dest"
  exit 0
fi

for tool in git cmake flex bison; do
  command -v "$tool" >/dev/null || { say "'$tool' not found: run scripts/setup.sh --with-choreo (installs flex and bison) or install it"; exit 3; }
done
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

work=$(mktemp -d "${TMPDIR:-/tmp}/croq-choreo.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- the compiler's source at the pinned commit
src=${CHOREO_SRC:-$CHOREO_REPO}
say "choreo source: $src at ${CHOREO_COMMIT:0:12}"
git clone -q --no-checkout "$src" "$work/croqtile" ||
  { say "cannot clone '$src' (set CHOREO_SRC to a local clone of LancerLab/croqtile)"; exit 3; }
git -C "$work/croqtile" -c advice.detachedHead=false checkout -q "$CHOREO_COMMIT" ||
  { say "'$src' has no commit $CHOREO_COMMIT (fetch it into that clone, or point CHOREO_SRC at one that has it)"; exit 3; }
# The compiler's configure step downloads what it does not find (an LLVM release for FileCheck,
# GoogleTest, CUTLASS); none of it is needed for the compiler itself, and nothing may be fetched
# behind the user's back: blank those URLs in this private copy.
sed -i -E 's/^([A-Z0-9_]*URL)=.*/\1=/' "$work/croqtile/cmake/deps.conf"

# --- CUTLASS/CuTe headers at the pinned tag (header-only: include/ is all that is kept)
mkdir -p "$work/cutlass"
csrc=${CUTLASS_SRC:-}
if [ -n "$csrc" ] && [ -f "$csrc/include/cutlass/version.h" ] && ! git -C "$csrc" rev-parse -q --verify "refs/tags/$CUTLASS_TAG" >/dev/null 2>&1; then
  say "CUTLASS headers: $csrc/include (a plain folder: its version is checked below)"
  cp -r "$csrc/include" "$work/cutlass/include"
else
  if [ -z "$csrc" ]; then
    say "CUTLASS source: cloning $CUTLASS_REPO at $CUTLASS_TAG"
    git clone -q --depth 1 --branch "$CUTLASS_TAG" --filter=blob:none --no-checkout "$CUTLASS_REPO" "$work/cutlass-src" ||
      { say "cannot clone $CUTLASS_REPO (set CUTLASS_SRC to a local clone of NVIDIA/cutlass)"; exit 3; }
    csrc="$work/cutlass-src"
  else
    say "CUTLASS source: $csrc at $CUTLASS_TAG"
  fi
  got=$(git -C "$csrc" rev-parse -q --verify "refs/tags/$CUTLASS_TAG^{commit}") ||
    { say "'$csrc' has no tag $CUTLASS_TAG (git -C '$csrc' fetch --tags, or point CUTLASS_SRC at a clone that has it)"; exit 3; }
  if [ -n "$CUTLASS_COMMIT" ] && [ "$got" != "$CUTLASS_COMMIT" ]; then
    say "'$csrc' tag $CUTLASS_TAG is $got, not $CUTLASS_COMMIT as pinned"; exit 3
  fi
  git -C "$csrc" archive "$CUTLASS_TAG" include | tar -x -C "$work/cutlass"
fi
want_ver=${CUTLASS_TAG#v}
IFS=. read -r vmaj vmin vpatch <<<"$want_ver"
vh="$work/cutlass/include/cutlass/version.h"
[ -f "$vh" ] && [ -f "$work/cutlass/include/cute/tensor.hpp" ] || { say "no CUTLASS/CuTe headers found in the CUTLASS source"; exit 3; }
grep -Eq "#define CUTLASS_MAJOR $vmaj\$" "$vh" && grep -Eq "#define CUTLASS_MINOR $vmin\$" "$vh" &&
  grep -Eq "#define CUTLASS_PATCH $vpatch\$" "$vh" ||
  { say "the CUTLASS headers from ${csrc} are not version $want_ver (their include/cutlass/version.h says otherwise)"; exit 3; }

# --- build the compiler (choreo only: no CoIR/LLVM tools, only the CuTe/GPU back end)
say "building choreo with $jobs jobs (about 11 minutes on two cores)"
export CUTE_HOME="$work/cutlass"
log="$work/build.log"
if ! (cd "$work/croqtile" &&
      cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCROQ_PROJECT=choreo \
            -DCROQ_TARGET=cute >"$log" 2>&1 &&
      nice -n "${CROQ_NICE:-10}" cmake --build build --target choreo -j "$jobs" >>"$log" 2>&1); then
  tail -n 40 "$log" >&2
  say "the choreo build failed (the last lines of its log are above)"
  exit 1
fi
bin=$(find "$work/croqtile/build" -name choreo -type f -perm -u+x | head -1)
[ -n "$bin" ] && "$bin" --help >/dev/null 2>&1 || { say "the build produced no working choreo binary"; exit 1; }

# --- assemble the toolchain folder next to its final place, then move it in
parent=$(dirname "$dest")
mkdir -p "$parent"
stage=$(mktemp -d "$parent/.choreo-stage.XXXXXX")
mkdir -p "$stage/build" "$stage/extern/cutlass"
strip -o "$stage/build/choreo" "$bin" 2>/dev/null || cp "$bin" "$stage/build/choreo"
chmod 755 "$stage/build/choreo"
cp -r "$work/croqtile/runtime" "$stage/runtime"
mv "$work/cutlass/include" "$stage/extern/cutlass/include"
cat >"$stage/toolchain.json" <<EOF
{
  "choreo_commit": "$CHOREO_COMMIT",
  "choreo_source": "$src",
  "choreo_version": "$(cat "$work/croqtile/VERSION.txt" 2>/dev/null | tr -d '\n')",
  "cutlass_tag": "$CUTLASS_TAG",
  "cutlass_commit": "$CUTLASS_COMMIT",
  "built_at": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "built_on": "$(uname -srm)"
}
EOF
chmod -R a+rX "$stage"
rm -rf "$dest.old"
[ -e "$dest" ] && mv "$dest" "$dest.old"
mv "$stage" "$dest"
rm -rf "$dest.old"
installed_ok || { say "installed into $dest, but the result does not work"; exit 1; }
say "installed choreo ${CHOREO_COMMIT:0:12} into $dest"
echo "$dest"
