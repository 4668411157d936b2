// The op table of include/xhal/op_table.h seen from C++: each op's name, its tensors (name, slot,
// role, optional) in signature order and the number of slots its calls carry.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "xhal/plugin.h"
#include "xhal/registry.hpp"

namespace xhal {

enum class SlotRole : uint8_t { input = XHAL_ROLE_IN, output = XHAL_ROLE_OUT, in_out = XHAL_ROLE_INOUT };

struct SlotInfo {
  int slot;
  std::string_view name;
  SlotRole role;
  bool optional;
  bool written() const { return role != SlotRole::input; }
};

// The tensors of `op`, in the order of its signature.
std::span<const SlotInfo> op_slots(Op op);
// The slots a call of `op` carries: its highest slot + 1.
uint32_t op_num_tensors(Op op);
// The name of `op`'s tensor in `slot` ("q", "cu_seqlens_k"), as its signature and errors call it.
std::string_view slot_name(Op op, int slot);

// "q[1,7,4,64] k[1,7,2,64] ..." for the tensors present in `call`; strided ones show their strides.
std::string describe_shapes(const xhal_op_call& call);

}  // namespace xhal
