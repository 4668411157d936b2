// What each tensor slot of an op's xhal_op_call holds: the argument's name (as the op's signature
// and its error messages call it) and whether the op reads it, writes it, or both. Shared by the
// shadow check (what to copy and compare) and the trace (argument shapes).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "xhal/plugin.h"
#include "xhal/registry.hpp"

namespace xhal {

enum class SlotRole : uint8_t { input, output, in_out };

struct SlotInfo {
  int slot;
  std::string_view name;
  SlotRole role;
  bool written() const { return role != SlotRole::input; }
};

// The slots `op` may use, in the order of its signature.
std::span<const SlotInfo> op_slots(Op op);

// "q[1,7,4,64] k[1,7,2,64] ..." for the tensors present in `call`; strided ones show their strides.
std::string describe_shapes(const xhal_op_call& call);

}  // namespace xhal
