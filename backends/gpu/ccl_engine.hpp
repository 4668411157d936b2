// The GPU plugins' collectives: NCCL for cuda, RCCL for hip, loaded at run time.
#pragma once

#include "xhal/plugin.h"

namespace xhal::gpu {

// The engine; `host` receives its log messages.
const xhal_comm_api* ccl_comm_api(const xhal_host_api* host);

}  // namespace xhal::gpu
