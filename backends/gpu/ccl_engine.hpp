// The GPU plugins' collectives: NCCL for cuda, RCCL for hip, loaded at run time.
#pragma once

#include "xhal/plugin.h"

namespace xhal::gpu {

const xhal_comm_api* ccl_comm_api();

}  // namespace xhal::gpu
