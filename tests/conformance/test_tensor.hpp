// Test tensors for the conformance suite: logical values kept on the host in float64 (already
// rounded to the tensor's dtype), and a device copy in any physical layout (dimension order and
// padding), so ops are exercised on strided views. Outputs are poisoned (NaN, or a sentinel for
// integers) so unwritten elements and writes outside the view are caught.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "xhal/xhal.hpp"

namespace xhal::test {

struct Layout {
  std::vector<int> order;  // physical order of the logical dims, outermost first; empty = as is
  int64_t pad = 0;  // extra elements after each innermost physical row
};

class TestTensor {
 public:
  // Random values in [lo, hi) rounded to `dtype`.
  static TestTensor random(const std::vector<int64_t>& shape, DType dtype, Device device, std::mt19937_64& rng,
                           double lo = -1, double hi = 1, Layout layout = {});
  // Exact values (integers, or floats rounded to dtype).
  static TestTensor of(const std::vector<int64_t>& shape, DType dtype, Device device, const std::vector<double>& values,
                       Layout layout = {});
  // Every element, and the padding, set to the poison pattern.
  static TestTensor poisoned(const std::vector<int64_t>& shape, DType dtype, Device device, Layout layout = {});

  // A new tensor of this one's shape, dtype, device and layout holding its values with the elements
  // at `replaced` (logical flat indices) set to the given values (NaN, infinities).
  TestTensor with(const std::vector<std::pair<int64_t, double>>& replaced) const;

  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }  // NOLINT
  const std::vector<double>& values() const { return values_; }
  std::vector<int64_t> int_values() const;

  // Reads the device copy back. Returns the logical values; fails the test (ADD_FAILURE) when the
  // padding no longer holds the poison, naming `what`.
  std::vector<double> download(const std::string& what) const;

 private:
  void upload(const std::vector<double>& logical);
  std::vector<int64_t> shape_;
  DType dtype_ = DType::f32;
  Layout layout_;
  std::vector<double> values_;
  std::vector<uint8_t> initial_raw_;  // the physical bytes as uploaded
  std::vector<int64_t> offsets_;  // physical element offset of each logical element
  Tensor storage_;
  TensorView view_;
};

// Asserts got ≈ expected within the tolerance table for `dtype` (NaN never passes); reports the
// first offending index and the worst error.
void expect_close(const std::vector<double>& got, const std::vector<double>& expected, DType dtype,
                  const std::string& what);

// For outputs of non-finite inputs: NaN exactly where `expected` has NaN (fails at the first
// element where not), the other elements as expect_close.
void expect_close_nan_for_nan(std::vector<double> got, std::vector<double> expected, DType dtype,
                              const std::string& what);

// A seed from std::random_device, printed with each failure by the caller's SCOPED_TRACE.
uint64_t fresh_seed();

}  // namespace xhal::test
