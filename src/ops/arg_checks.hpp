// Argument checks shared by every op's front end. Each failure throws Error(invalid_argument) with
// "xhal::ops::<op>: argument '<name>': expected <...>, got <...>".
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "core/shape_text.hpp"
#include "xhal/registry.hpp"
#include "xhal/tensor_view.hpp"

namespace xhal::ops {

class ArgChecks {
 public:
  explicit ArgChecks(Op op) : op_(op) {}

  [[noreturn]] void fail(std::string_view arg, std::string_view expected, std::string_view got) const;

  // Rank, data present when non-empty, no size overflow, inner stride 1 (when `inner_contiguous`).
  void tensor(std::string_view arg, const TensorView& t, int rank, bool inner_contiguous = true) const;
  void min_rank(std::string_view arg, const TensorView& t, int rank) const;
  void float_dtype(std::string_view arg, const TensorView& t) const;  // f32, f16 or bf16
  void dtype(std::string_view arg, const TensorView& t, DType expected, std::string_view why) const;
  void dtype_in(std::string_view arg, const TensorView& t, std::initializer_list<DType> allowed) const;
  void dim(std::string_view arg, const TensorView& t, int dim, int64_t expected, std::string_view meaning) const;
  void same_shape(std::string_view arg, const TensorView& t, const TensorView& like, std::string_view like_name) const;
  void same_device(std::string_view arg, const TensorView& t, Device expected, std::string_view expected_from) const;
  // Output `arg` must share no memory with each of `others` (absent ones null): the kernel reads
  // them while it writes `arg`, or writes both.
  void apart(std::string_view arg, const TensorView& t,
             std::initializer_list<std::pair<std::string_view, const TensorView*>> others) const;
  // As apart, but `t` may also be exactly `other` (an element-wise op writes it in place).
  void apart_or_in_place(std::string_view arg, const TensorView& t, std::string_view other_name,
                         const TensorView& other) const;

 private:
  Op op_;
};

}  // namespace xhal::ops
