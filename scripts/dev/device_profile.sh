#!/usr/bin/env bash
# Profiles one HiP kernel launch on the device machine after scripts/dev/device_run.sh has built
# build-hipcuda: Nsight Compute (full set, with source) of one launch, the per-instruction source
# page as CSV, the SASS of the kernels' objects and the headline metrics. Files under $OUT/NAME*.
# Usage: scripts/dev/device_profile.sh NAME KERNEL_REGEX SKIP -- BENCH_KERNELS_ARGS...
#   e.g. device_profile.sh attn32k sparse_attention_mma 3 -- --tokens 32768 --mode prefill --prefill-blocks 64/2
#   (SKIP: launches of the kernel to skip first, so that a warmed-up one is measured)
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
out="${OUT:-/tmp}"
name="$1" regex="$2" skip="$3"
shift 3
[ "${1:-}" = "--" ] && shift
objs=build-hipcuda/kernels/CMakeFiles/hipstudio_kernels_cuda.dir/cuda
[ -f "$out/sass.txt" ] || for o in "$objs"/*.cu.o; do cuobjdump -sass "$o"; done >"$out/sass.txt" 2>&1
timeout 240 ncu --set full --import-source yes -k "regex:$regex" -s "$skip" -c 1 -o "$out/$name" \
  build-hipcuda/hipstudio bench kernels --no-dense --repeats 3 --csv /tmp/prof.csv "$@" >"$out/${name}_run.log" 2>&1
echo "== $name: ncu exit $?"
ncu --import "$out/$name.ncu-rep" --page source --csv --print-source sass >"$out/${name}_source.csv" 2>/dev/null
ncu --import "$out/$name.ncu-rep" --page details >"$out/${name}_details.txt" 2>&1
grep -E "Duration|Executed Instructions  |Issued Ipc Active|Registers Per|Achieved Occupancy|No Eligible|Warp Cycles Per Issued|Memory Throughput|L1/TEX Hit|L2 Hit|DRAM Throughput|Block Limit|Compute \(SM\) Throughput|Grid Size|Dynamic Shared" \
  "$out/${name}_details.txt" | head -24
rm -f "$out/$name.ncu-rep"
