// linear on CUDA through cuBLASLt, with the bias fused in the epilogue.
#pragma once

#include "xhal/plugin.h"

namespace xhal::cuda {

void register_cublaslt_linear(const xhal_host_api* host);

}  // namespace xhal::cuda
