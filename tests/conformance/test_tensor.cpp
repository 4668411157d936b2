#include "test_tensor.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "tolerance.hpp"

namespace xhal::test {
namespace {

// Stores `value` in `dtype` at raw[index].
void store(std::vector<uint8_t>& raw, DType dtype, int64_t index, double value) {
  uint8_t* p = raw.data() + size_t(index) * dtype_size(dtype);
  switch (dtype) {
    case DType::f32: {
      float f = float(value);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::f64: std::memcpy(p, &value, 8); break;
    case DType::f16: {
      uint16_t h = float_to_f16(float(value));
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::bf16: {
      uint16_t h = float_to_bf16(float(value));
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::i32: {
      int32_t i = int32_t(value);
      std::memcpy(p, &i, 4);
      break;
    }
    case DType::i64: {
      int64_t i = int64_t(value);
      std::memcpy(p, &i, 8);
      break;
    }
    case DType::f8_e4m3: *p = float_to_f8_e4m3(float(value)); break;
    case DType::f8_e5m2: *p = float_to_f8_e5m2(float(value)); break;
    case DType::i8: *p = uint8_t(int8_t(value)); break;
  }
}

double load(const std::vector<uint8_t>& raw, DType dtype, int64_t index) {
  const uint8_t* p = raw.data() + size_t(index) * dtype_size(dtype);
  switch (dtype) {
    case DType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::f64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case DType::f16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return f16_to_float(h);
    }
    case DType::bf16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return bf16_to_float(h);
    }
    case DType::i32: {
      int32_t i;
      std::memcpy(&i, p, 4);
      return i;
    }
    case DType::i64: {
      int64_t i;
      std::memcpy(&i, p, 8);
      return double(i);
    }
    case DType::f8_e4m3: return f8_e4m3_to_float(*p);
    case DType::f8_e5m2: return f8_e5m2_to_float(*p);
    case DType::i8: return double(int8_t(*p));
  }
  return 0;
}

// i8 holds quantized codes, which never reach -128 (they saturate at ±127).
double poison(DType dtype) { return is_floating(dtype) ? std::nan("") : dtype == DType::i8 ? -128.0 : -77777.0; }

}  // namespace

uint64_t fresh_seed() { return (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}(); }

TestTensor TestTensor::random(const std::vector<int64_t>& shape, DType dtype, Device device, std::mt19937_64& rng,
                              double lo, double hi, Layout layout) {
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>());
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> values(static_cast<size_t>(n));
  for (auto& v : values) v = dist(rng);
  return of(shape, dtype, device, values, layout);
}

TestTensor TestTensor::with(const std::vector<std::pair<int64_t, double>>& replaced) const {
  std::vector<double> values = values_;
  for (const auto& [index, value] : replaced) values.at(size_t(index)) = value;
  return of(shape_, dtype_, view_.device(), values, layout_);
}

TestTensor TestTensor::of(const std::vector<int64_t>& shape, DType dtype, Device device,
                          const std::vector<double>& values, Layout layout) {
  TestTensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.layout_ = layout;
  const int rank = int(shape.size());
  if (t.layout_.order.empty()) {
    t.layout_.order.resize(size_t(rank));
    std::iota(t.layout_.order.begin(), t.layout_.order.end(), 0);
  }
  // Physical strides: innermost physical dim padded by `pad`.
  std::vector<int64_t> strides(static_cast<size_t>(rank));
  int64_t physical = 1;
  for (int i = rank - 1; i >= 0; --i) {
    const int dim = t.layout_.order[size_t(i)];
    strides[size_t(dim)] = physical;
    physical *= shape[size_t(dim)] + (i == rank - 1 ? t.layout_.pad : 0);
  }
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) physical = 0;
  t.storage_ = Tensor::empty({physical}, dtype, device);
  t.view_ = TensorView(t.storage_.data(), dtype, shape, strides, device);
  const int64_t n = t.view_.numel();
  t.offsets_.resize(size_t(n));
  for (int64_t e = 0; e < n; ++e) {
    int64_t rest = e, offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      offset += (rest % shape[size_t(d)]) * strides[size_t(d)];
      rest /= shape[size_t(d)];
    }
    t.offsets_[size_t(e)] = offset;
  }
  t.upload(values);
  return t;
}

TestTensor TestTensor::poisoned(const std::vector<int64_t>& shape, DType dtype, Device device, Layout layout) {
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>());
  TestTensor t = of(shape, dtype, device, std::vector<double>(size_t(n), poison(dtype)), layout);
  return t;
}

void TestTensor::upload(const std::vector<double>& logical) {
  const int64_t physical = storage_.numel();
  std::vector<uint8_t> raw(size_t(physical) * dtype_size(dtype_));
  for (int64_t i = 0; i < physical; ++i) store(raw, dtype_, i, poison(dtype_));
  values_.resize(logical.size());
  for (size_t e = 0; e < logical.size(); ++e) {
    store(raw, dtype_, offsets_[e], logical[e]);
    values_[e] = load(raw, dtype_, offsets_[e]);  // the rounded value the op sees
  }
  if (physical > 0) storage_.copy_from_host(raw.data());
  initial_raw_ = std::move(raw);
}

std::vector<int64_t> TestTensor::int_values() const { return std::vector<int64_t>(values_.begin(), values_.end()); }

std::vector<double> TestTensor::download(const std::string& what) const {
  std::vector<uint8_t> raw(initial_raw_.size());
  if (!raw.empty()) storage_.copy_to_host(raw.data());
  std::vector<bool> logical(size_t(storage_.numel()), false);
  std::vector<double> out(offsets_.size());
  for (size_t e = 0; e < offsets_.size(); ++e) {
    out[e] = load(raw, dtype_, offsets_[e]);
    logical[size_t(offsets_[e])] = true;
  }
  const size_t elt = dtype_size(dtype_);
  for (size_t i = 0; i < logical.size(); ++i) {
    if (!logical[i] && std::memcmp(&raw[i * elt], &initial_raw_[i * elt], elt) != 0) {
      ADD_FAILURE() << what << ": element " << i << " of the padding outside the view was written";
      break;
    }
  }
  return out;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& expected, DType dtype,
                  const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  const Tolerance tol = tolerance_for(dtype);
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - expected[i]);
    const bool same_inf = std::isinf(expected[i]) && got[i] == expected[i];
    const bool ok = same_inf || (!std::isnan(got[i]) && err <= tol.atol + tol.rtol * std::abs(expected[i]));
    if (!ok && bad++ == 0) first = i;
    if (!same_inf) worst = std::max(worst, std::isnan(err) ? INFINITY : err);
  }
  EXPECT_EQ(bad, 0u) << what << " (" << dtype_name(dtype) << "): " << bad << " of " << got.size()
                     << " elements out of tolerance (atol " << tol.atol << ", rtol " << tol.rtol << "); first at index "
                     << first << ": got " << (bad ? got[first] : 0) << ", expected " << (bad ? expected[first] : 0)
                     << "; worst abs error " << worst;
}

void expect_close_nan_for_nan(std::vector<double> got, std::vector<double> expected, DType dtype,
                              const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::isnan(got[i]), std::isnan(expected[i]))
        << what << " (" << dtype_name(dtype) << ") element " << i << ": got " << got[i] << ", expected " << expected[i];
    if (std::isnan(got[i])) got[i] = expected[i] = 0;
  }
  expect_close(got, expected, dtype, what);
}

}  // namespace xhal::test
