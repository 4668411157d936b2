// Building an xhal_op_call from validated views and handing it to the registry.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "xhal/plugin.h"
#include "xhal/registry.hpp"
#include "xhal/stream.hpp"
#include "xhal/tensor_view.hpp"

namespace xhal::ops {

class OpCall {
 public:
  // `device` is the output's device; throws Error(backend_unavailable) when it does not exist.
  // `entries`: a list op's (op_table.h XHAL_OP_LISTS) list length, at least 1.
  OpCall(Op op, DType dtype, Device device, const Stream* stream, int64_t entries = 1);
  // The view must outlive run(): the DLTensor points at its shape and strides. For a list op,
  // `slot` is the first entry's or a shared one; set(slot, entry, view) names another entry's.
  void set(int slot, const TensorView& view) { set(slot, 0, view); }
  void set(int slot, const TensorView* view) {
    if (view != nullptr) set(slot, 0, *view);
  }
  void set(int slot, int64_t entry, const TensorView& view);
  void set(int slot, int64_t entry, const TensorView* view) {
    if (view != nullptr) set(slot, entry, *view);
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
  int list_stride_ = 0;
  std::array<DLTensor, XHAL_MAX_OP_TENSORS> tensors_{};
  std::array<const DLTensor*, XHAL_MAX_OP_TENSORS> tensor_pointers_{};
  // A list longer than one entry: its tensors here instead of the arrays.
  std::vector<DLTensor> list_tensors_;
  std::vector<const DLTensor*> list_pointers_;
};

}  // namespace xhal::ops
