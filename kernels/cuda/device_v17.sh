#!/usr/bin/env bash
# The v17 few-search features (kernels/BENCHMARKS.md) on the device machine, one call each:
#   check:    build, the HipCuda* tests (every feature set against the CPU reference), then the
#             decode refresh with each feature set in ROUNDS interleaved rounds (default 3);
#   sanitize: memcheck + racecheck over the cluster-search test (no feature and all, 1-4 CTAs);
#   profile:  Nsight Compute of one 128k batch-1 refresh with FEATURES (default all), 2-CTA clusters.
# Needs carry [".device-carry"]. Usage: kernels/cuda/device_v17.sh check|sanitize|profile
set -uo pipefail
what="${1:-check}"
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
out="${OUT:-/tmp}"
kernels/cuda/device_run.sh build || exit 1
case "$what" in
  check)
    echo "== tests"
    timeout 300 build-hipcuda/tests/test_gpu --gtest_filter='HipCuda*' >"$out/tests.log" 2>&1
    echo "test_gpu exit $?"
    grep -E "Failure|Expected|Which is|FAILED|PASSED|OK \]|SKIPPED" "$out/tests.log" | head -60
    echo "identical-entry lines: $(grep -c 'identical entries' "$out/tests.log"), not identical:"
    grep 'identical entries' "$out/tests.log" | awk '{split($NF, t, "/"); if ($(NF-2) != $NF) print}' | head -20
    for round in $(seq "${ROUNDS:-3}"); do
      for f in none keys_a async seeded all; do
        echo "== round $round features $f"
        HIPSTUDIO_MASK_FEATURES=$f timeout 90 build-hipcuda/hipstudio bench kernels --mode decode --tokens 131072,8192 \
          --batches 1,32 --no-dense --csv "/tmp/v17-$f.csv" 2>&1 | grep -E "^ +[0-9]"
      done
    done
    ;;
  sanitize)
    SANITIZE_FILTER='HipCudaRawApi.ClusterSearchMasks*' MEMCHECK_TIMEOUT=280 RACECHECK_TIMEOUT=280 kernels/cuda/device_run.sh sanitize
    ;;
  profile)
    HIPSTUDIO_MASK_FEATURES="${FEATURES:-all}" HIPSTUDIO_MASK_CTAS=2 kernels/cuda/device_profile.sh v17 hip_mask_cluster 2 -- \
      --tokens 131072 --batches 1 --mode decode
    ;;
  *)
    echo "usage: kernels/cuda/device_v17.sh check|sanitize|profile"
    exit 2
    ;;
esac
rm -f "$out/configure.log" "$out/build.log"
