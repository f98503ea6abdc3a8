#!/usr/bin/env bash
# Profiles the mask kernel on the device machine after kernels/cuda/device_run.sh has built
# build-hipcuda: Nsight Compute (full set, with source) of one warp-search mask launch, the
# per-instruction source page as CSV, and the SASS of the mask kernels. Files under $OUT.
# Usage: kernels/cuda/device_profile.sh [T]   (T: prefill length, default 8192)
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
out="${OUT:-/tmp}"
T="${1:-8192}"
cuobjdump -sass build-hipcuda/kernels/CMakeFiles/hipstudio_kernels_cuda.dir/cuda/mask_warp_kernel.cu.o >"$out/sass.txt" 2>&1
timeout 240 ncu --set full --import-source yes -k regex:hip_mask_warp -c 1 -o "$out/mask" \
  build-hipcuda/hipstudio bench kernels --tokens "$T" --mode prefill --no-dense --repeats 3 --csv /tmp/prof.csv >"$out/ncu_run.log" 2>&1
echo "ncu exit $?"
ncu --import "$out/mask.ncu-rep" --page source --csv --print-source sass >"$out/source.csv" 2>"$out/source.err"
echo "source page exit $? ($(wc -l <"$out/source.csv") lines)"
ncu --import "$out/mask.ncu-rep" --page details >"$out/details.txt" 2>&1
grep -E "Duration|Executed Instructions  |Issued Ipc Active|Registers Per|Achieved Occupancy|No Eligible|Warp Cycles Per Issued" "$out/details.txt" | head -12
rm -f "$out/mask.ncu-rep"
