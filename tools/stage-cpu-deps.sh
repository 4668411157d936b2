#!/usr/bin/env bash
# Stages this machine's Debian Highway (libhwy-dev) and OpenBLAS OpenMP build
# (libopenblas-openmp-dev, with its libgfortran and libquadmath) under .deps/cpu/usr, in the
# packages' own layout. The GPU machine's image has neither, so the cpu plugin built there has only
# the reference kernels; carried there (the device tool's `carry` of .deps/cpu), they let
# gpu-check.sh's `cpu` stage build the SIMD and BLAS kernels and run the CPU conformance suite and
# benchmarks on that machine's CPU (the only AVX-512 machine these sessions can reach). For
# measurement only: nothing under .deps is committed or installed.
set -euo pipefail
cd "$(dirname "$0")/.."
arch=$(gcc -dumpmachine)
dest=.deps/cpu/usr
for f in /usr/include/hwy/highway.h /usr/lib/$arch/openblas-openmp/libopenblas.so.0; do
  [ -e "$f" ] || { echo "missing $f: run tools/install-deps.sh first" >&2; exit 1; }
done
rm -rf .deps/cpu
mkdir -p "$dest/include/$arch" "$dest/lib/$arch/cmake"
cp -r /usr/include/hwy "$dest/include/"
cp -r /usr/include/$arch/openblas-openmp "$dest/include/$arch/"
cp -a /usr/lib/$arch/libhwy*.so* "$dest/lib/$arch/"
cp -r /usr/lib/$arch/cmake/hwy "$dest/lib/$arch/cmake/"
mkdir -p "$dest/lib/$arch/openblas-openmp"
cp -a /usr/lib/$arch/openblas-openmp/libopenblas.so* /usr/lib/$arch/openblas-openmp/libopenblasp-r*.so \
  "$dest/lib/$arch/openblas-openmp/"
for lib in libgfortran.so.5 libquadmath.so.0; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" "$dest/lib/$arch/"
done
du -sh .deps/cpu
