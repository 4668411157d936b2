// attention_varlen's query rows past the last sequence (cu_seqlens_q[B] up to Tq) belong to no
// sequence: they are written as rows that see no key (0, lse -inf), so that the output is written
// in full whatever cu_seqlens hold. The offset stays on the device; the kernel reads it and exits at
// once when every row is covered, the usual case.
#pragma once

#include "attention_layout.cuh"

namespace xhal::gpu {

template <class E>
__global__ void uncovered_rows_kernel(const int32_t* last_offset, int64_t Tq, AttnLayout a, typename E::T* out,
                                      float* lse) {
  const int64_t first = *last_offset, per_row = a.Hq * a.Dv;
  const int64_t count = first < Tq ? (Tq - first) * per_row : 0;
  for (int64_t x = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; x < count; x += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = first + x / per_row, h = x % per_row / a.Dv, d = x % a.Dv;
    out[row * a.o[1] + h * a.o[2] + d] = E::store(0.0f);
    if (lse != nullptr && d == 0) lse[h * a.lse[1] + row * a.lse[2]] = -INFINITY;
  }
}

// Launched after a varlen attention kernel on the call's stream.
template <class E>
void launch_uncovered_rows(const xhal_op_call* c) {
  const DLTensor* q = c->tensors[XHAL_ATTENTION_Q];
  const DLTensor* cu_q = c->tensors[XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q];
  const DLTensor* lse = c->tensors[XHAL_ATTENTION_LSE];
  const int64_t Tq = q->shape[0];
  if (Tq == 0) return;
  const AttnLayout a = layout_of(c, false);
  uncovered_rows_kernel<E><<<grid_for(Tq * a.Hq * a.Dv, 256, 64), 256, 0, static_cast<gpuStream_t>(c->stream)>>>(
      static_cast<const int32_t*>(cu_q->data) + (cu_q->shape[0] - 1) * cu_q->strides[0], Tq, a,
      static_cast<typename E::T*>(c->tensors[XHAL_ATTENTION_OUT]->data),
      lse ? static_cast<float*>(lse->data) : nullptr);
}

}  // namespace xhal::gpu
