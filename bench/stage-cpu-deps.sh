#!/usr/bin/env bash
# Stages this machine's Debian Highway (libhwy-dev), OpenBLAS OpenMP build
# (libopenblas-openmp-dev, with its libgfortran and libquadmath) and oneDNN (libdnnl-dev, with the
# OpenCL loader and headers its CMake package asks for) under .deps/cpu/usr, in the packages' own
# layout, and packs them into .deps/cpu.tar.gz. The GPU machine's image has none of them, so the
# cpu plugin built there has only the reference kernels; carried there (the device tool's `carry`
# of .deps/cpu.tar.gz: unpacked, they exceed what it carries), they let gpu-check.sh's `cpu` stage
# build the SIMD, BLAS and oneDNN kernels and run the CPU conformance suite, benchmarks and PyTorch
# comparison on that machine's CPU. For measurement only: nothing under .deps is committed or
# installed.
set -euo pipefail
cd "$(dirname "$0")/.."
arch=$(gcc -dumpmachine)
dest=.deps/cpu/usr
for f in /usr/include/hwy/highway.h /usr/lib/"$arch"/openblas-openmp/libopenblas.so.0; do
  [ -e "$f" ] || { echo "missing $f: run .ci/install-deps.sh first" >&2; exit 1; }
done
rm -rf .deps/cpu
mkdir -p "$dest/include/$arch" "$dest/lib/$arch/cmake"
cp -r /usr/include/hwy "$dest/include/"
cp -r /usr/include/"$arch"/openblas-openmp "$dest/include/$arch/"
cp -a /usr/lib/"$arch"/libhwy*.so* "$dest/lib/$arch/"
cp -r /usr/lib/"$arch"/cmake/hwy "$dest/lib/$arch/cmake/"
mkdir -p "$dest/lib/$arch/openblas-openmp"
cp -a /usr/lib/"$arch"/openblas-openmp/libopenblas.so* /usr/lib/"$arch"/openblas-openmp/libopenblasp-r*.so \
  "$dest/lib/$arch/openblas-openmp/"
for lib in libgfortran.so.5 libquadmath.so.0; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" "$dest/lib/$arch/"
done
if [ -f /usr/include/oneapi/dnnl/dnnl.hpp ]; then
  cp -a /usr/include/dnnl*.h /usr/include/dnnl*.hpp /usr/include/CL "$dest/include/"
  mkdir -p "$dest/include/oneapi" && cp -r /usr/include/oneapi/dnnl "$dest/include/oneapi/"
  cp -a /usr/lib/"$arch"/libdnnl.so* /usr/lib/"$arch"/libOpenCL.so* "$dest/lib/$arch/"
  cp -r /usr/lib/"$arch"/cmake/dnnl "$dest/lib/$arch/cmake/"
else
  echo "no oneDNN here (libdnnl-dev): staging without it" >&2
fi
tar -czf .deps/cpu.tar.gz -C .deps cpu
du -sh .deps/cpu .deps/cpu.tar.gz
