// One f32 on the device copied into n consecutive floats, on a stream: a per-tensor scale widened
// to the per-row vector a vendor kernel takes when the other operand's scales are per row (cuBLASLt
// takes both scales in one mode). Host code: callable from a plugin's non-GPU-compiled sources.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xhal/plugin.h"

namespace xhal::gpu {

xhal_status broadcast_scalar(const float* src, float* dst, int64_t n, void* stream, char* msg, size_t len);

}  // namespace xhal::gpu
