// Who this rank is, and how rank 0's bootstrap id reaches the others, for engines that need one
// (NCCL, RCCL). docs/collectives.md, "Bootstrap".
#pragma once

#include <chrono>
#include <vector>

#include "xhal/comm.hpp"

namespace xhal::comm {

struct RankAndSize {
  int rank, size;
};

// What the options, else RANK / WORLD_SIZE, ask for; -1 where neither says. Throws
// Error(invalid_argument) for a variable that is not an integer.
RankAndSize requested_rank_and_size(const Options& options);

// Options, else RANK / WORLD_SIZE, else MPI's view when running under mpirun. Throws
// Error(invalid_argument) when none says, or the rank is outside [0, size).
RankAndSize resolve_rank_and_size(const Options& options);

// Gives every rank rank 0's `bytes`: through the file store of XHAL_STORE=file:<path> when set,
// else through MPI under mpirun. Throws Error(timeout) when rank 0's bytes do not arrive in time,
// Error(invalid_argument) for a store it cannot use or no way to share at all.
void share_from_rank0(std::vector<unsigned char>& bytes, const RankAndSize& who, std::chrono::milliseconds timeout);

}  // namespace xhal::comm
