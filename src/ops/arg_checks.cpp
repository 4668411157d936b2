#include "ops/arg_checks.hpp"

#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "ops/memory_overlap.hpp"
#include "xhal/error.hpp"

namespace xhal::ops {

void ArgChecks::fail(std::string_view arg, std::string_view expected, std::string_view got) const {
  throw Error(Errc::invalid_argument,
              fmt::format("xhal::ops::{}: argument '{}': expected {}, got {}", op_name(op_), arg, expected, got));
}

void ArgChecks::tensor(std::string_view arg, const TensorView& t, int rank, bool inner_contiguous) const {
  if (t.ndim() != rank) {
    fail(arg, fmt::format("rank {}", rank), fmt::format("rank {} with shape {}", t.ndim(), shape_str(t)));
  }
  // numel * element size, and the furthest element offset, must fit in int64.
  auto too_large = [&] {
    fail(arg, "a size and element offsets whose bytes fit in 64 bits",
         fmt::format("shape {} with strides [{}]", shape_str(t), fmt::join(t.strides(), ", ")));
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
    fail(arg, "inner (last) stride 1", fmt::format("stride {}", t.stride(-1)));
  }
}

void ArgChecks::min_rank(std::string_view arg, const TensorView& t, int rank) const {
  if (t.ndim() < rank) {
    fail(arg, fmt::format("rank >= {}", rank), fmt::format("rank {}", t.ndim()));
  }
  tensor(arg, t, t.ndim());
}

void ArgChecks::float_dtype(std::string_view arg, const TensorView& t) const {
  dtype_in(arg, t, {DType::f32, DType::f16, DType::bf16});
}

void ArgChecks::dtype(std::string_view arg, const TensorView& t, DType expected, std::string_view why) const {
  if (t.dtype() != expected) {
    fail(arg, fmt::format("dtype {}{}", dtype_name(expected), why), dtype_name(t.dtype()));
  }
}

void ArgChecks::dtype_in(std::string_view arg, const TensorView& t, std::initializer_list<DType> allowed) const {
  for (DType d : allowed) {
    if (t.dtype() == d) return;
  }
  std::vector<std::string_view> names;
  for (DType d : allowed) names.push_back(dtype_name(d));
  fail(arg, fmt::format("dtype {}", fmt::join(names, " or ")), dtype_name(t.dtype()));
}

void ArgChecks::dim(std::string_view arg, const TensorView& t, int dim, int64_t expected,
                    std::string_view meaning) const {
  if (t.size(dim) != expected) {
    fail(arg, fmt::format("size {} in dim {} ({})", expected, dim, meaning),
         fmt::format("{} (shape {})", t.size(dim), shape_str(t)));
  }
}

void ArgChecks::same_shape(std::string_view arg, const TensorView& t, const TensorView& like,
                           std::string_view like_name) const {
  if (!std::equal(t.shape().begin(), t.shape().end(), like.shape().begin(), like.shape().end())) {
    fail(arg, fmt::format("shape {} (same as {})", shape_str(like), like_name), shape_str(t));
  }
}

void ArgChecks::same_device(std::string_view arg, const TensorView& t, Device expected,
                            std::string_view expected_from) const {
  if (!(t.device() == expected)) {
    fail(arg, fmt::format("device {} (that of {})", expected.str(), expected_from), t.device().str());
  }
}

void ArgChecks::apart(std::string_view arg, const TensorView& t,
                      std::initializer_list<std::pair<std::string_view, const TensorView*>> others) const {
  for (const auto& [name, other] : others) {
    if (other != nullptr && may_overlap(t, *other)) {
      fail(arg, fmt::format("memory apart from '{}'", name),
           fmt::format("{} bytes at {} overlapping '{}' ({} bytes at {})", t.nbytes(), t.data(), name, other->nbytes(),
                       other->data()));
    }
  }
}

void ArgChecks::apart_or_in_place(std::string_view arg, const TensorView& t, std::string_view other_name,
                                  const TensorView& other) const {
  if (same_view(t, other) || !may_overlap(t, other)) return;
  fail(arg, fmt::format("memory apart from '{}', or '{}' itself (in place)", other_name, other_name),
       fmt::format("a view partly overlapping it ({} at {}, strides [{}], vs {} at {}, strides [{}])", shape_str(t),
                   t.data(), fmt::join(t.strides(), ", "), shape_str(other), other.data(),
                   fmt::join(other.strides(), ", ")));
}

}  // namespace xhal::ops
