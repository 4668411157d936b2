// Building an xhal_op_call from validated views and handing it to the registry.
#pragma once

#include <array>

#include "xhal/plugin.h"
#include "xhal/registry.hpp"
#include "xhal/stream.hpp"
#include "xhal/tensor_view.hpp"

namespace xhal::ops {

class OpCall {
 public:
  // `device` is the output's device; throws Error(backend_unavailable) when it does not exist.
  OpCall(Op op, DType dtype, Device device, const Stream* stream);
  // The view must outlive run(): the DLTensor points at its shape and strides.
  void set(int slot, const TensorView& view);
  void set(int slot, const TensorView* view) {
    if (view != nullptr) set(slot, *view);
  }
  // The op's parameter struct (op_table.h) with its struct_size set; it must outlive run().
  template <class Params>
  void set_params(const Params& params) {
    call_.params = &params;
  }
  void run();

 private:
  Device device_;
  xhal_op_call call_{};
  std::array<DLTensor, XHAL_MAX_OP_TENSORS> tensors_{};
  std::array<const DLTensor*, XHAL_MAX_OP_TENSORS> tensor_pointers_{};
};

}  // namespace xhal::ops
