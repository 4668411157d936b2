// Argument checks shared by every op's front end. Each failure throws Error(invalid_argument) with
// "xhal::ops::<op>: argument '<name>': expected <...>, got <...>".
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/shape_text.hpp"
#include "xhal/registry.hpp"
#include "xhal/tensor_view.hpp"

namespace xhal::ops {

// An argument in an error message: a tensor by its slot (XHAL_RMS_NORM_X: its name comes from the
// op table), a list op's entry tensor by its slot and entry ("param[3]"), or a scalar by its name
// ("eps").
struct Arg {
  Arg(int tensor_slot) : slot(tensor_slot) {}
  Arg(int tensor_slot, int64_t list_entry) : slot(tensor_slot), entry(list_entry) {}
  Arg(const char* scalar_name) : text(scalar_name) {}
  int slot = -1;
  int64_t entry = -1;
  std::string_view text;
};

class ArgChecks {
 public:
  explicit ArgChecks(Op op) : op_(op) {}

  [[noreturn]] void fail(Arg arg, std::string_view expected, std::string_view got) const;

  // Rank, data present when non-empty, no size overflow, inner stride 1 (when `inner_contiguous`).
  void tensor(Arg arg, const TensorView& t, int rank, bool inner_contiguous = true) const;
  void min_rank(Arg arg, const TensorView& t, int rank) const;
  void float_dtype(Arg arg, const TensorView& t) const;  // f32, f16 or bf16
  void dtype(Arg arg, const TensorView& t, DType expected, std::string_view why) const;
  void dtype_in(Arg arg, const TensorView& t, std::initializer_list<DType> allowed) const;
  void dim(Arg arg, const TensorView& t, int dim, int64_t expected, std::string_view meaning) const;
  void same_shape(Arg arg, const TensorView& t, const TensorView& like, Arg like_name) const;
  void same_device(Arg arg, const TensorView& t, Device expected, Arg expected_from) const;
  // Output `arg` must share no memory with each of `others` (absent ones null): the kernel reads
  // them while it writes `arg`, or writes both.
  void apart(Arg arg, const TensorView& t, std::initializer_list<std::pair<Arg, const TensorView*>> others) const;
  // As apart, but `t` may also be exactly `other` (an element-wise op writes it in place).
  void apart_or_in_place(Arg arg, const TensorView& t, Arg other_name, const TensorView& other) const;

  // One tensor of disjoint(): absent when view is null.
  struct Extent {
    Arg arg;
    const TensorView* view;
    bool written;
  };
  // No written tensor of `tensors` may share a byte with any other one. The views must be
  // contiguous (their byte ranges tell); n log n, for a list of every parameter of a model.
  void disjoint(std::vector<Extent> tensors) const;

  // The argument's name as the op's signature has it.
  std::string name(Arg arg) const;

 private:
  // `arg` shares memory with `other_arg`: the error naming both, with their extents.
  [[noreturn]] void fail_overlap(Arg arg, const TensorView& t, Arg other_arg, const TensorView& other) const;

  Op op_;
};

}  // namespace xhal::ops
