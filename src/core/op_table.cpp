#include "core/op_table.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "xhal/error.hpp"
#include "xhal/tensor_view.hpp"

namespace xhal {
namespace {

#define XHAL_NAME_ROW(NAME, name, params) #name,
constexpr std::array<std::string_view, kNumOps> kOpNames{XHAL_OPS(XHAL_NAME_ROW)};
#undef XHAL_NAME_ROW

struct TensorRow {
  Op op;
  SlotInfo info;
};

#define XHAL_TENSOR_ROW(OP, NAME, name, slot, role, optional) \
  TensorRow{Op(XHAL_OP_##OP), SlotInfo{slot, #name, SlotRole(role), optional != 0}},
constexpr std::array kTensorRows{XHAL_OP_TENSORS(XHAL_TENSOR_ROW)};
#undef XHAL_TENSOR_ROW

// Each op's rows are contiguous in the table and its slots distinct and below the call buffers'
// size: checked here so that a wrong row fails the build.
constexpr bool rows_well_formed() {
  for (size_t i = 0; i < kTensorRows.size(); ++i) {
    if (kTensorRows[i].info.slot < 0 || kTensorRows[i].info.slot >= XHAL_MAX_OP_TENSORS) return false;
    for (size_t j = i + 1; j < kTensorRows.size(); ++j) {
      if (kTensorRows[j].op != kTensorRows[i].op) continue;
      if (kTensorRows[j].info.slot == kTensorRows[i].info.slot) return false;
      if (kTensorRows[j - 1].op != kTensorRows[i].op) return false;  // a gap between an op's rows
    }
  }
  return true;
}
static_assert(rows_well_formed(), "op_table.h: an op's tensor rows must be contiguous with distinct slots");

struct OpTensors {
  std::array<SlotInfo, XHAL_MAX_OP_TENSORS> slots{};
  size_t count = 0;
  uint32_t num_tensors = 0;
};

constexpr std::array<OpTensors, kNumOps> make_op_tensors() {
  std::array<OpTensors, kNumOps> out{};
  for (const TensorRow& row : kTensorRows) {
    OpTensors& t = out[size_t(row.op)];
    t.slots[t.count++] = row.info;
    t.num_tensors = std::max(t.num_tensors, uint32_t(row.info.slot + 1));
  }
  return out;
}
constexpr std::array<OpTensors, kNumOps> kOpTensors = make_op_tensors();

}  // namespace

std::string_view op_name(Op op) {
  return size_t(op) < kOpNames.size() ? kOpNames[size_t(op)] : std::string_view("(unknown op)");
}

Op op_from_name(std::string_view name) {
  for (size_t i = 0; i < kOpNames.size(); ++i) {
    if (kOpNames[i] == name) return Op(i);
  }
  throw Error(Errc::invalid_argument, fmt::format("unknown op '{}'; ops are: {}", name, fmt::join(kOpNames, ", ")));
}

std::span<const SlotInfo> op_slots(Op op) {
  const OpTensors& t = kOpTensors[size_t(op)];
  return {t.slots.data(), t.count};
}

uint32_t op_num_tensors(Op op) { return kOpTensors[size_t(op)].num_tensors; }

std::string_view slot_name(Op op, int slot) {
  for (const SlotInfo& s : op_slots(op)) {
    if (s.slot == slot) return s.name;
  }
  return "(no such tensor)";
}

std::string describe_shapes(const xhal_op_call& call) {
  std::vector<std::string> parts;
  for (const SlotInfo& s : op_slots(Op(call.op))) {
    if (uint32_t(s.slot) >= call.num_tensors || call.tensors[s.slot] == nullptr) continue;
    const TensorView v = TensorView::from_dlpack(*call.tensors[s.slot]);
    std::string part = fmt::format("{}[{}]", s.name, fmt::join(v.shape(), ","));
    if (!v.is_contiguous()) part += fmt::format("/strides[{}]", fmt::join(v.strides(), ","));
    parts.push_back(std::move(part));
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

}  // namespace xhal
