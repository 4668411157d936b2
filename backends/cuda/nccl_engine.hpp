// The cuda backend's collectives: NCCL, loaded at run time.
#pragma once

#include "xhal/plugin.h"

namespace xhal::cuda {

const xhal_comm_api* nccl_comm_api();

}  // namespace xhal::cuda
