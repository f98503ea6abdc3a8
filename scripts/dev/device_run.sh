#!/usr/bin/env bash
# One device call for the CUDA HiP kernels: build test_gpu and hipstudio against the machine's
# PyTorch LibTorch (sm_90 only, to keep the build short), run the HipCuda* tests, compute-sanitizer
# memcheck + racecheck on the raw-API case, and `bench kernels`. Needs carry [".device-carry"]
# (scripts/dev/device-carry). Logs under $OUT.
# Usage: scripts/dev/device_run.sh [tests|bench|all|fast|sanitize|final|build|floors]
#   all: tests, sanitizers on HipCudaRawApi.*, bench; fast: tests + bench, no sanitizer;
#   sanitize: memcheck + racecheck over every HipCuda* test (SANITIZE_FILTER narrows it), no bench;
#   final: tests, bench, then memcheck + racecheck over every HipCuda* test; build: only the build;
#   floors: the gather-floor probe (kernels/cuda/probe/gather_floor.cu) at 128k and 32k tokens.
set -uo pipefail
what="${1:-all}"
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
out="${OUT:-/tmp}"
mkdir -p .device-carry/include
[ -d .device-carry/googletest ] || tar -xJf .device-carry/deps.tar.xz -C .device-carry
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
cmake -S . -B build-hipcuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DHIPSTUDIO_GUI=OFF -DHIPSTUDIO_WERROR=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DHIPSTUDIO_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$torch_prefix" -DHIPSTUDIO_EXTRA_INCLUDE="$repo/.device-carry/include" \
  -DHIPSTUDIO_GTEST_SOURCE_DIR="$repo/.device-carry/googletest" >"$out/configure.log" 2>&1 ||
  { tail -40 "$out/configure.log"; exit 1; }
start=$(date +%s)
if [ "$what" = floors ]; then
  ninja -C build-hipcuda -j 16 hipstudio_gather_floor >"$out/build.log" 2>&1 || { grep -E -A3 "error" "$out/build.log" | head -40; exit 1; }
  for t in 131072 32768; do build-hipcuda/hipstudio_gather_floor "$t"; done 2>&1 | tee "$out/gather_floor.log"
  exit 0
fi
ninja -C build-hipcuda -j 16 test_gpu >"$out/build.log" 2>&1 || { grep -E -A3 "error" "$out/build.log" | head -60; exit 1; }
ninja -C build-hipcuda -j 16 hipstudio >>"$out/build.log" 2>&1 || { echo "hipstudio did not build:"; grep -E -A3 "error" "$out/build.log" | head -20; }
echo "== build $(( $(date +%s) - start )) s"
[ "$what" = build ] && exit 0
# compute-sanitizer over every HipCuda* test (SANITIZE_FILTER narrows). memcheck checks every kernel; racecheck only ours (names containing "hipstudio"): LibTorch's dense baselines
# would take most of the time limit under it.
sanitize() {
  local filter="${SANITIZE_FILTER:-HipCuda*}" only=""
  compute-sanitizer --help 2>&1 | grep -q -- "--kernel-name" && only="--kernel-name kns=hipstudio"
  echo "== compute-sanitizer memcheck ($filter)"
  timeout "${MEMCHECK_TIMEOUT:-200}" compute-sanitizer --tool memcheck build-hipcuda/tests/test_gpu --gtest_filter="$filter" >"$out/memcheck.log" 2>&1
  echo "exit $?"; grep -E "ERROR SUMMARY|PASSED|FAILED|Invalid" "$out/memcheck.log" | head -10
  echo "== compute-sanitizer racecheck ($filter) $only"
  timeout "${RACECHECK_TIMEOUT:-240}" compute-sanitizer --tool racecheck $only build-hipcuda/tests/test_gpu --gtest_filter="$filter" >"$out/racecheck.log" 2>&1
  echo "exit $?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED|hazard" "$out/racecheck.log" | head -10
}
if [ "$what" = sanitize ]; then
  sanitize
  exit 0
fi
if [ "$what" != bench ]; then
  echo "== tests"
  timeout 240 build-hipcuda/tests/test_gpu --gtest_filter='HipCuda*' >"$out/tests.log" 2>&1
  echo "test_gpu exit $?"
  grep -E "^\[gpu\]|Failure|Expected|Which is|actual|FAILED|PASSED|OK \]|SKIPPED|error" "$out/tests.log" | head -120
fi
if [ "$what" = tests ] || [ "$what" = all ]; then
  SANITIZE_FILTER="${SANITIZE_FILTER:-HipCudaRawApi.*}" sanitize
fi
if [ "$what" != tests ]; then
  echo "== bench kernels"
  timeout "${BENCH_TIMEOUT:-300}" build-hipcuda/hipstudio bench kernels --csv "$out/bench_kernels.csv" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.log"
fi
if [ "$what" = final ]; then  # tests, bench, then the sanitizers over every HipCuda* test
  sanitize
fi
