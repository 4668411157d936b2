#include "core/op_table.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "core/text_format.hpp"
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

struct ListRow {
  Op op;
  ListLayout layout;
};
#define XHAL_LIST_ROW(OP, first, stride) ListRow{Op(XHAL_OP_##OP), ListLayout{first, stride}},
constexpr std::array kListRows{XHAL_OP_LISTS(XHAL_LIST_ROW)};
#undef XHAL_LIST_ROW

constexpr std::array<ListLayout, kNumOps> make_op_lists() {
  std::array<ListLayout, kNumOps> out{};
  for (const ListRow& row : kListRows) out[size_t(row.op)] = row.layout;
  return out;
}
constexpr std::array<ListLayout, kNumOps> kOpLists = make_op_lists();

// A list op's entry slots are the last `stride` of its slots.
constexpr bool lists_well_formed() {
  for (const ListRow& row : kListRows) {
    const uint32_t slots = kOpTensors[size_t(row.op)].num_tensors;
    if (row.layout.first < 0 || row.layout.stride < 1 || uint32_t(row.layout.first + row.layout.stride) != slots) {
      return false;
    }
  }
  return true;
}
static_assert(lists_well_formed(), "op_table.h: a list op's entry slots must be its last `stride` slots");

const SlotInfo* find_slot(Op op, int slot) {
  for (const SlotInfo& s : op_slots(op)) {
    if (s.slot == slot) return &s;
  }
  return nullptr;
}

}  // namespace

std::string_view op_name(Op op) {
  return size_t(op) < kOpNames.size() ? kOpNames[size_t(op)] : std::string_view("(unknown op)");
}

Op op_from_name(std::string_view name) {
  for (size_t i = 0; i < kOpNames.size(); ++i) {
    if (kOpNames[i] == name) return Op(i);
  }
  throw Error(Errc::invalid_argument, format_text("unknown op '{}'; ops are: {}", name, join_text(kOpNames, ", ")));
}

std::span<const SlotInfo> op_slots(Op op) {
  const OpTensors& t = kOpTensors[size_t(op)];
  return {t.slots.data(), t.count};
}

uint32_t op_num_tensors(Op op) { return kOpTensors[size_t(op)].num_tensors; }

std::string_view slot_name(Op op, int slot) {
  const SlotInfo* s = find_slot(op, slot);
  return s != nullptr ? s->name : "(no such tensor)";
}

ListLayout op_list(Op op) { return size_t(op) < kOpLists.size() ? kOpLists[size_t(op)] : ListLayout{}; }

CallTensor call_tensor(Op op, uint32_t index) {
  const ListLayout list = op_list(op);
  if (!list.is_list() || int64_t(index) < list.first) return {find_slot(op, int(index)), -1};
  const int64_t offset = int64_t(index) - list.first;
  return {find_slot(op, list.first + int(offset % list.stride)), offset / list.stride};
}

int64_t call_entries(const xhal_op_call& call) {
  const ListLayout list = op_list(Op(call.op));
  if (!list.is_list() || int64_t(call.num_tensors) < list.first + list.stride) return 1;
  return (int64_t(call.num_tensors) - list.first) / list.stride;
}

std::string call_tensor_name(const xhal_op_call& call, uint32_t index) {
  const CallTensor t = call_tensor(Op(call.op), index);
  const std::string_view name = t.slot != nullptr ? t.slot->name : "(no such tensor)";
  return t.entry >= 0 && call_entries(call) > 1 ? format_text("{}[{}]", name, t.entry) : std::string(name);
}

std::string describe_shapes(const xhal_op_call& call) {
  constexpr int64_t kEntriesShown = 3;  // a model's whole parameter list would drown the message
  const ListLayout list = op_list(Op(call.op));
  const int64_t entries = call_entries(call);
  std::vector<std::string> parts;
  // In signature order; a list's shared tensors with its first entry.
  for (int64_t e = 0; e < std::min(entries, kEntriesShown); ++e) {
    for (const SlotInfo& s : op_slots(Op(call.op))) {
      const bool in_entry = list.is_list() && s.slot >= list.first;
      if (e > 0 && !in_entry) continue;
      const int64_t i = in_entry ? XHAL_LIST_SLOT(s.slot, e, list.stride) : s.slot;
      if (i >= int64_t(call.num_tensors) || call.tensors[i] == nullptr) continue;
      const TensorView v = TensorView::from_dlpack(*call.tensors[i]);
      std::string part = format_text("{}[{}]", call_tensor_name(call, uint32_t(i)), join_text(v.shape(), ","));
      if (!v.is_contiguous()) part += format_text("/strides[{}]", join_text(v.strides(), ","));
      parts.push_back(std::move(part));
    }
  }
  if (entries > kEntriesShown) {
    parts.push_back(format_text("... ({} entries)", entries));
  }
  return format_text("{}", join_text(parts, " "));
}

}  // namespace xhal
