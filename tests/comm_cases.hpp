// The collective cases every engine must pass, on any device: inputs of small integers whose exact
// result is known in every dtype; each op x dtype x reduction, counts given by the caller, in place
// and out of place. Failures are reported through GoogleTest; every rank runs the same calls in the
// same order, whatever fails, so the ranks stay in step.
#pragma once

#include <vector>

#include "xhal/comm.hpp"

namespace xhal::comm::test {

void all_reduce_cases(Communicator& c, const std::vector<int64_t>& counts);
void reduce_scatter_cases(Communicator& c, const std::vector<int64_t>& counts);
// all_gather (in place too), broadcast from the first and last rank, a send/recv ring.
void gather_broadcast_ring_cases(Communicator& c, const std::vector<int64_t>& counts);

}  // namespace xhal::comm::test
