// The tensors of a merge_attention_states call, as both CPU kernels read them.
#pragma once

#include "kernels/kernel_registration.hpp"
#include "kernels/cpu/tensor_ref.hpp"

namespace xhal::cpu {

template <class S>
struct MergeTensors {
  TensorRef<const S> out_a, out_b;  // [T, H, D]
  TensorRef<S> out;
  TensorRef<const float> lse_a, lse_b;  // [H, T]
  TensorRef<float> lse;  // absent: data null

  explicit MergeTensors(const xhal_op_call* c)
      : out_a(c->tensors[XHAL_MERGE_ATTENTION_STATES_OUT_A]),
        out_b(c->tensors[XHAL_MERGE_ATTENTION_STATES_OUT_B]),
        out(c->tensors[XHAL_MERGE_ATTENTION_STATES_OUT]),
        lse_a(c->tensors[XHAL_MERGE_ATTENTION_STATES_LSE_A]),
        lse_b(c->tensors[XHAL_MERGE_ATTENTION_STATES_LSE_B]),
        lse(kernels::tensor_at(c, XHAL_MERGE_ATTENTION_STATES_LSE)) {}
};

}  // namespace xhal::cpu
