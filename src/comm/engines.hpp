// The engines a build carries, one factory each; communicator.cpp picks by device type.
#pragma once

#include <memory>

#include "xhal/comm.hpp"

namespace xhal::comm {

// Throws Error(unsupported) when the build has no MPI.
std::shared_ptr<Communicator> create_mpi_communicator(const Device& device, const Options& options);
// Accelerators: the backend plugin's engine (NCCL, RCCL). Throws Error(unsupported) when the
// backend has none or its library is missing.
std::shared_ptr<Communicator> create_device_communicator(const Device& device, const Options& options);

}  // namespace xhal::comm
