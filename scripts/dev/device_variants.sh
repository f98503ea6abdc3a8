#!/usr/bin/env bash
# Builds `hipstudio` once per compile-time variant of the CUDA kernels, then runs the same
# `bench kernels` on each in ROUNDS interleaved rounds (default 2) in one device session, so that
# the variants see the same machine and the run-to-run spread shows. Each variant: NAME=FLAGS
# (nvcc -D flags, space separated, quoted as one word; empty for the defaults).
# Usage: scripts/dev/device_variants.sh "BENCH ARGS" NAME=FLAGS [NAME=FLAGS ...]
#   e.g. device_variants.sh "--mode prefill --tokens 32768 --no-dense" base= cta2="-DHIPSTUDIO_ATTN_MIN_CTAS=2"
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
bench_args="$1"
shift
mkdir -p .device-carry/include
[ -d .device-carry/googletest ] || tar -xJf .device-carry/deps.tar.xz -C .device-carry
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for spec in "$@"; do
  name="${spec%%=*}" flags="${spec#*=}"
  dir="build-variant-$name"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHIPSTUDIO_GUI=OFF -DHIPSTUDIO_TESTS=OFF \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DHIPSTUDIO_CUDA=ON -DCMAKE_CUDA_FLAGS="$flags" -DCMAKE_PREFIX_PATH="$torch_prefix" \
    -DHIPSTUDIO_EXTRA_INCLUDE="$repo/.device-carry/include" >/tmp/variant-configure.log 2>&1 ||
    { tail -20 /tmp/variant-configure.log; exit 1; }
  ninja -C "$dir" -j 16 hipstudio >/tmp/variant-build.log 2>&1 || { grep -A3 error /tmp/variant-build.log | head -20; exit 1; }
done
for round in $(seq "${ROUNDS:-2}"); do
  for spec in "$@"; do
    name="${spec%%=*}" flags="${spec#*=}"
    echo "== round $round variant $name ($flags)"
    "build-variant-$name/hipstudio" bench kernels --csv "/tmp/variant-$name.csv" $bench_args 2>&1 | grep -E "^ +[0-9]"
  done
done
