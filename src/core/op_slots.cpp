#include "core/op_slots.hpp"

#include <array>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "xhal/tensor_view.hpp"

namespace xhal {
namespace {

using enum SlotRole;

constexpr std::array kAttention{SlotInfo{XHAL_SLOT_Q, "q", input}, SlotInfo{XHAL_SLOT_K, "k", input},
                                SlotInfo{XHAL_SLOT_V, "v", input}, SlotInfo{XHAL_SLOT_OUT, "out", output},
                                SlotInfo{XHAL_SLOT_LSE, "lse", output}};
constexpr std::array kAttentionVarlen{
    SlotInfo{XHAL_SLOT_Q, "q", input},       SlotInfo{XHAL_SLOT_K, "k", input},
    SlotInfo{XHAL_SLOT_V, "v", input},       SlotInfo{XHAL_SLOT_CU_SEQLENS_Q, "cu_seqlens_q", input},
    SlotInfo{XHAL_SLOT_CU_SEQLENS_K, "cu_seqlens_k", input}, SlotInfo{XHAL_SLOT_OUT, "out", output},
    SlotInfo{XHAL_SLOT_LSE, "lse", output}};
constexpr std::array kPagedAttention{
    SlotInfo{XHAL_SLOT_Q, "q", input},           SlotInfo{XHAL_SLOT_K, "k_cache", input},
    SlotInfo{XHAL_SLOT_V, "v_cache", input},     SlotInfo{XHAL_SLOT_BLOCK_TABLE, "block_table", input},
    SlotInfo{XHAL_SLOT_SEQ_LENS, "seq_lens", input}, SlotInfo{XHAL_SLOT_OUT, "out", output}};
constexpr std::array kRmsNorm{SlotInfo{XHAL_SLOT_X, "x", input}, SlotInfo{XHAL_SLOT_WEIGHT, "weight", input},
                              SlotInfo{XHAL_SLOT_NORM_OUT, "out", output}};
constexpr std::array kFusedAddRmsNorm{
    SlotInfo{XHAL_SLOT_X, "x", input}, SlotInfo{XHAL_SLOT_RESIDUAL, "residual", in_out},
    SlotInfo{XHAL_SLOT_WEIGHT, "weight", input}, SlotInfo{XHAL_SLOT_NORM_OUT, "out", output}};
constexpr std::array kSwiglu{SlotInfo{XHAL_SLOT_GATE, "gate", input}, SlotInfo{XHAL_SLOT_UP, "up", input},
                             SlotInfo{XHAL_SLOT_ACT_OUT, "out", output}};
constexpr std::array kSwigluPacked{SlotInfo{XHAL_SLOT_GATE, "x", input},
                                   SlotInfo{XHAL_SLOT_ACT_OUT, "out", output}};
constexpr std::array kRope{SlotInfo{XHAL_SLOT_ROPE_Q, "q", in_out}, SlotInfo{XHAL_SLOT_ROPE_K, "k", in_out},
                           SlotInfo{XHAL_SLOT_POSITIONS, "positions", input},
                           SlotInfo{XHAL_SLOT_COS_SIN, "cos_sin_cache", input}};
constexpr std::array kLinear{SlotInfo{XHAL_SLOT_LINEAR_X, "x", input}, SlotInfo{XHAL_SLOT_LINEAR_W, "w", input},
                             SlotInfo{XHAL_SLOT_BIAS, "bias", input},
                             SlotInfo{XHAL_SLOT_LINEAR_OUT, "out", output}};

}  // namespace

std::span<const SlotInfo> op_slots(Op op) {
  switch (op) {
    case Op::attention: return kAttention;
    case Op::attention_varlen: return kAttentionVarlen;
    case Op::paged_attention: return kPagedAttention;
    case Op::rms_norm: return kRmsNorm;
    case Op::fused_add_rms_norm: return kFusedAddRmsNorm;
    case Op::swiglu: return kSwiglu;
    case Op::swiglu_packed: return kSwigluPacked;
    case Op::rope: return kRope;
    case Op::linear: return kLinear;
  }
  return {};
}

std::string describe_shapes(const xhal_op_call& call) {
  std::vector<std::string> parts;
  for (const SlotInfo& s : op_slots(Op(call.op))) {
    if (call.t[s.slot] == nullptr) continue;
    const TensorView v = TensorView::from_dlpack(*call.t[s.slot]);
    std::string part = fmt::format("{}[{}]", s.name, fmt::join(v.shape(), ","));
    if (!v.is_contiguous()) part += fmt::format("/strides[{}]", fmt::join(v.strides(), ","));
    parts.push_back(std::move(part));
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

}  // namespace xhal
