// The engines a build carries, one factory each; communicator.cpp picks by device type.
#pragma once

#include <memory>

#include "xhal/comm.hpp"

namespace xhal::comm {

// The MPI engine, from libxhal_mpi.so (loaded on first use, so that libxhal itself loads without
// libmpi). Throws Error(unsupported) naming the library when it cannot be loaded.
std::shared_ptr<Communicator> create_mpi_communicator(const Device& device, const Options& options);

// What libxhal_mpi.so exports, through the C function kMpiEngineEntry.
struct MpiEngine {
  std::shared_ptr<Communicator> (*create)(const Device& device, const Options& options);
};
inline constexpr const char* kMpiEngineEntry = "xhal_mpi_engine";
inline constexpr const char* kMpiEngineFile = "libxhal_mpi.so";
// Accelerators: the backend plugin's engine (NCCL, RCCL). Throws Error(unsupported) when the
// backend has none or its library is missing.
std::shared_ptr<Communicator> create_device_communicator(const Device& device, const Options& options);

}  // namespace xhal::comm
