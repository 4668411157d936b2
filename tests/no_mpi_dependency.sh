#!/usr/bin/env bash
# Usage: no_mpi_dependency.sh LIBXHAL
# libxhal must load where MPI is not installed: it neither needs libmpi nor has an undefined MPI
# symbol (the MPI engine is libxhal_mpi.so, opened when a cpu communicator is made).
set -euo pipefail
lib=$1
needed=$(readelf -d "$lib" | grep NEEDED || true)
if grep -qi mpi <<<"$needed"; then echo "$lib needs MPI:"; echo "$needed"; exit 1; fi
undefined=$(nm -D --undefined-only "$lib" | grep -i 'mpi' || true)
if [ -n "$undefined" ]; then echo "$lib has undefined MPI symbols:"; echo "$undefined"; exit 1; fi
echo "$lib: no MPI library needed, no MPI symbol undefined"
