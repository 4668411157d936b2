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

// A list op's layout (XHAL_OP_LISTS): entry slots from `first`, `stride` of them; first < 0 for
// the other ops.
struct ListLayout {
  int first = -1;
  int stride = 0;
  bool is_list() const { return first >= 0; }
};
ListLayout op_list(Op op);

// What a call's tensor at `index` (below its num_tensors) is: its slot's description and, for a
// list entry's tensor, the entry (-1 for the others).
struct CallTensor {
  const SlotInfo* slot;
  int64_t entry;
};
CallTensor call_tensor(Op op, uint32_t index);
// The tensor's name in messages: "param", or "param[3]" for an entry of a list of several.
std::string call_tensor_name(const xhal_op_call& call, uint32_t index);
// The entries a call of a list op carries (1 for the other ops).
int64_t call_entries(const xhal_op_call& call);

// "q[1,7,4,64] k[1,7,2,64] ..." for the tensors present in `call`; strided ones show their strides.
std::string describe_shapes(const xhal_op_call& call);

}  // namespace xhal
