#!/usr/bin/env bash
# Installs every Debian package croq needs to build and test, then configures and builds it.
# Idempotent: packages already present are skipped, and an existing build folder is reused.
# Usage: scripts/setup.sh [--no-build] [--with-choreo]
#   --with-choreo  also installs flex and bison and builds the CroqTile (Choreo) compiler at the
#                  commit croq's CroqTile kernels are tested with (scripts/choreo.pin), with its
#                  runtime and CUTLASS/CuTe headers, into ~/.local/share/croq/toolchains/ where croq
#                  finds it (scripts/install_choreo.sh; about 11 minutes on two cores, once: an
#                  installed toolchain is reused). Offline: CHOREO_SRC=<croqtile clone>
#                  CUTLASS_SRC=<cutlass clone> scripts/setup.sh --with-choreo
set -euo pipefail
cd "$(dirname "$0")/.."
build=1
choreo=0
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    --with-choreo) choreo=1 ;;
    *) echo "setup: unknown argument '$arg' (usage: scripts/setup.sh [--no-build] [--with-choreo])" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev libssl-dev
  libcpp-httplib-dev libopenblas-dev
  libseccomp-dev  # croq-cpu-runner confines the candidate it loads
  libtomlplusplus-dev  # TOML sweep manifests (croq sweep run --manifest x.toml)
  clang libclang-rt-dev  # the fuzz targets (libFuzzer; ctest -L fuzz, bench/fuzz.sh)
  python3 pylint  # pylint: tests/python/lint.sh (call and name errors in the Python runner)
  chromium chromium-driver curl  # the dashboard's browser test (ctest -L browser); bench/monitor.sh
  slurmctld slurmd slurm-client munge  # croq sweep submit --slurm's test on a one-node cluster (tests/slurm)
  libpq-dev postgresql  # croq serve --db postgresql://...; its tests on a throwaway server (tests/postgres)
)
[ "$choreo" = 1 ] && packages+=(flex bison)  # the CroqTile compiler's scanner and parser
# Without their recommendations (python3-torch's are libtorch-dev and a compiler set, not needed):
# PyTorch for the CPU runs the Python runner's measure path in the tests (tests/cli/python_runner_cpu_test.cpp).
lean=(python3-torch)
# The packages of the arguments that are not installed, one per line.
not_installed() {
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(not_installed "${packages[@]}")
mapfile -t missing_lean < <(not_installed "${lean[@]}")
if [ ${#missing[@]} -gt 0 ] || [ ${#missing_lean[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]} ${missing_lean[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  if [ ${#missing[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if [ ${#missing_lean[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing_lean[@]}" >/dev/null
  fi
fi

if [ "$choreo" = 1 ]; then
  scripts/install_choreo.sh --jobs "${CROQ_JOBS:-$(nproc)}"
fi
[ "$build" = 0 ] && exit 0
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build
