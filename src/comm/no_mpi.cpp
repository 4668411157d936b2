// Builds without MPI: cpu communicators are unavailable, said clearly.
#include <fmt/format.h>

#include "comm/engines.hpp"
#include "xhal/error.hpp"

namespace xhal::comm {

std::shared_ptr<Communicator> create_mpi_communicator(const Device& device, const Options&) {
  throw Error(Errc::unsupported,
              fmt::format("xhal::comm::Communicator::create: {} needs the MPI engine, and this build has no MPI "
                          "(install libopenmpi-dev and reconfigure with XHAL_WITH_MPI=AUTO or ON)",
                          device.str()));
}

}  // namespace xhal::comm
