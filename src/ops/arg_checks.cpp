#include "ops/arg_checks.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "core/op_table.hpp"
#include "core/text_format.hpp"
#include "ops/memory_overlap.hpp"
#include "xhal/error.hpp"

namespace xhal::ops {

std::string ArgChecks::name(Arg arg) const {
  if (arg.slot < 0) return std::string(arg.text);
  const std::string_view slot = slot_name(op_, arg.slot);
  return arg.entry >= 0 ? format_text("{}[{}]", slot, arg.entry) : std::string(slot);
}

void ArgChecks::fail(Arg arg, std::string_view expected, std::string_view got) const {
  throw Error(Errc::invalid_argument,
              format_text("xhal::ops::{}: argument '{}': expected {}, got {}", op_name(op_), name(arg), expected, got));
}

void ArgChecks::tensor(Arg arg, const TensorView& t, int rank, bool inner_contiguous) const {
  if (t.ndim() != rank) {
    fail(arg, format_text("rank {}", rank), format_text("rank {} with shape {}", t.ndim(), shape_str(t)));
  }
  // numel * element size, and the furthest element offset, must fit in int64.
  auto too_large = [&] {
    fail(arg, "a size and element offsets whose bytes fit in 64 bits",
         format_text("shape {} with strides [{}]", shape_str(t), join_text(t.strides(), ", ")));
  };
  int64_t numel = 1, extent = 0;
  for (int d = 0; d < t.ndim(); ++d) {
    int64_t span = 0;
    const int64_t stride = t.stride(d);
    if (__builtin_mul_overflow(numel, t.size(d), &numel) ||
        (t.size(d) > 1 && (stride == std::numeric_limits<int64_t>::min() ||  // no magnitude in int64
                           __builtin_mul_overflow(t.size(d) - 1, std::abs(stride), &span) ||
                           __builtin_add_overflow(extent, span, &extent)))) {
      too_large();
    }
  }
  int64_t bytes = 0, elements = 0;
  if (__builtin_mul_overflow(numel, int64_t(dtype_size(t.dtype())), &bytes) ||
      __builtin_add_overflow(extent, 1, &elements) ||
      __builtin_mul_overflow(elements, int64_t(dtype_size(t.dtype())), &bytes)) {
    too_large();
  }
  if (numel > 0 && t.data() == nullptr) fail(arg, "data for a non-empty tensor", "a null pointer");
  if (inner_contiguous && rank > 0 && t.size(-1) > 1 && t.stride(-1) != 1) {
    fail(arg, "inner (last) stride 1", format_text("stride {}", t.stride(-1)));
  }
}

void ArgChecks::min_rank(Arg arg, const TensorView& t, int rank) const {
  if (t.ndim() < rank) {
    fail(arg, format_text("rank >= {}", rank), format_text("rank {}", t.ndim()));
  }
  tensor(arg, t, t.ndim());
}

void ArgChecks::float_dtype(Arg arg, const TensorView& t) const {
  dtype_in(arg, t, {DType::f32, DType::f16, DType::bf16});
}

void ArgChecks::dtype(Arg arg, const TensorView& t, DType expected, std::string_view why) const {
  if (t.dtype() != expected) {
    fail(arg, format_text("dtype {}{}", dtype_name(expected), why), dtype_name(t.dtype()));
  }
}

void ArgChecks::dtype_in(Arg arg, const TensorView& t, std::initializer_list<DType> allowed) const {
  for (DType d : allowed) {
    if (t.dtype() == d) return;
  }
  std::vector<std::string_view> names;
  for (DType d : allowed) names.push_back(dtype_name(d));
  fail(arg, format_text("dtype {}", join_text(names, " or ")), dtype_name(t.dtype()));
}

void ArgChecks::dim(Arg arg, const TensorView& t, int dim, int64_t expected, std::string_view meaning) const {
  if (t.size(dim) != expected) {
    fail(arg, format_text("size {} in dim {} ({})", expected, dim, meaning),
         format_text("{} (shape {})", t.size(dim), shape_str(t)));
  }
}

void ArgChecks::same_shape(Arg arg, const TensorView& t, const TensorView& like, Arg like_name) const {
  if (!std::equal(t.shape().begin(), t.shape().end(), like.shape().begin(), like.shape().end())) {
    fail(arg, format_text("shape {} (same as {})", shape_str(like), name(like_name)), shape_str(t));
  }
}

void ArgChecks::same_device(Arg arg, const TensorView& t, Device expected, Arg expected_from) const {
  if (!(t.device() == expected)) {
    fail(arg, format_text("device {} (that of {})", expected.str(), name(expected_from)), t.device().str());
  }
}

void ArgChecks::fail_overlap(Arg arg, const TensorView& t, Arg other_arg, const TensorView& other) const {
  const std::string other_name = name(other_arg);
  fail(arg, format_text("memory apart from '{}'", other_name),
       format_text("{} bytes at {} overlapping '{}' ({} bytes at {})", t.nbytes(), t.data(), other_name, other.nbytes(),
                   other.data()));
}

void ArgChecks::apart(Arg arg, const TensorView& t,
                      std::initializer_list<std::pair<Arg, const TensorView*>> others) const {
  for (const auto& [other_arg, other] : others) {
    if (other != nullptr && may_overlap(t, *other)) fail_overlap(arg, t, other_arg, *other);
  }
}

void ArgChecks::disjoint(std::vector<Extent> tensors) const {
  std::erase_if(tensors, [](const Extent& e) { return e.view == nullptr || e.view->numel() == 0; });
  auto begin = [](const Extent& e) { return reinterpret_cast<uintptr_t>(e.view->data()); };
  auto end = [&](const Extent& e) { return begin(e) + e.view->nbytes(); };
  std::sort(tensors.begin(), tensors.end(), [&](const Extent& a, const Extent& b) { return begin(a) < begin(b); });
  // Sweeping by start address: a tensor overlaps an earlier one exactly when it starts before the
  // furthest end so far (of any earlier tensor when it is written, of a written one when not).
  const Extent *furthest = nullptr, *furthest_written = nullptr;
  for (const Extent& e : tensors) {
    const Extent* other = e.written ? furthest : furthest_written;
    if (other != nullptr && begin(e) < end(*other)) fail_overlap(e.arg, *e.view, other->arg, *other->view);
    if (furthest == nullptr || end(e) > end(*furthest)) furthest = &e;
    if (e.written && (furthest_written == nullptr || end(e) > end(*furthest_written))) furthest_written = &e;
  }
}

void ArgChecks::apart_or_in_place(Arg arg, const TensorView& t, Arg other_name, const TensorView& other) const {
  if (same_view(t, other) || !may_overlap(t, other)) return;
  fail(arg, format_text("memory apart from '{}', or '{}' itself (in place)", name(other_name), name(other_name)),
       format_text("a view partly overlapping it ({} at {}, strides [{}], vs {} at {}, strides [{}])", shape_str(t),
                   t.data(), join_text(t.strides(), ", "), shape_str(other), other.data(),
                   join_text(other.strides(), ", ")));
}

}  // namespace xhal::ops
