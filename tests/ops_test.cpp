// Argument validation of every op (include/xhal/ops.hpp): each bad input throws xhal::Error with
// the right code, a message naming the op and the argument, and leaves the outputs untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "op_buffers.hpp"
#include "ops_bad_calls.hpp"
#include "xhal/xhal.hpp"

namespace xhal {
namespace {

TEST(Ops, EveryBadArgumentIsAClearError) {
  for (const BadCall& bad : bad_calls()) {
    SCOPED_TRACE(std::string(bad.op) + ": " + bad.what);
    Buffers buffers;
    try {
      bad.call(buffers);
      ADD_FAILURE() << "no error thrown";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(e.code(), bad.code) << message;
      EXPECT_NE(message.find(std::string("xhal::ops::") + bad.op), std::string::npos) << message;
      if (*bad.arg) {
        EXPECT_NE(message.find(std::string("'") + bad.arg + "'"), std::string::npos) << message;
      }
    }
    EXPECT_TRUE(buffers.out_untouched()) << "an output was written before the error";
  }
}

// A layout whose offsets overflow is named with its strides: the shape alone can look harmless.
TEST(Ops, OffsetOverflowNamesTheStrides) {
  std::vector<float> data(64, 0.0f), out(64, 0.0f);
  using V = std::vector<int64_t>;
  const TensorView q(data.data(), DType::f32, V{2, 1, 1, 8}, V{std::numeric_limits<int64_t>::min(), 8, 8, 1});
  const TensorView kv(data.data(), DType::f32, V{2, 1, 1, 8}), o(out.data(), DType::f32, V{2, 1, 1, 8});
  try {
    ops::attention(q, kv, kv, o);
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shape [2, 1, 1, 8] with strides [-9223372036854775808, 8, 8, 1]"),
              std::string::npos)
        << e.what();
  }
}

TEST(Ops, EmptyTensorsAreValidNoOps) {
  Buffers b;
  ops::rms_norm(TensorView(nullptr, DType::f32, {0, 64}), b.f32({64}), 1e-6f, TensorView(nullptr, DType::f32, {0, 64}));
  ops::linear(TensorView(nullptr, DType::f32, {0, 64}), b.f32({8, 64}), nullptr,
              TensorView(nullptr, DType::f32, {0, 8}));
  EXPECT_TRUE(b.out_untouched());
}

// The cache is computed a block of positions at a time: rows past the first block hold their own
// position's angles, in double rounded to f32.
TEST(Ops, RopeCacheRowsPastTheFirstBlock) {
  const int64_t max_pos = 10000, rotary_dim = 8, half = rotary_dim / 2;
  const double theta = 10000.0;
  std::vector<float> cache(size_t(max_pos * rotary_dim));
  ops::rope_cache(max_pos, rotary_dim, theta).copy_to_host(cache.data());
  for (int64_t p : {int64_t(0), int64_t(4095), int64_t(4096), int64_t(8191), int64_t(9999)}) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = double(p) * std::pow(theta, -2.0 * double(i) / double(rotary_dim));
      EXPECT_EQ(cache[size_t(p * rotary_dim + i)], static_cast<float>(std::cos(angle))) << p << " " << i;
      EXPECT_EQ(cache[size_t(p * rotary_dim + half + i)], static_cast<float>(std::sin(angle))) << p << " " << i;
    }
  }
}

TEST(Ops, RunsOnAnExplicitStream) {
  auto& manager = DeviceManager::instance();
  Stream stream = manager.create_stream(Device::cpu());
  std::vector<float> x{3, 4}, w{1, 1}, out(2, 0);
  ops::rms_norm(TensorView(x.data(), DType::f32, {1, 2}), TensorView(w.data(), DType::f32, {2}), 0.0f,
                TensorView(out.data(), DType::f32, {1, 2}), &stream);
  stream.synchronize();
  EXPECT_NEAR(out[0], 3 / std::sqrt(12.5), 1e-6);
}

// Outputs larger than the caches are written with streaming stores on the CPU, which need
// aligned addresses: an output that is not aligned to the widest store must take the ordinary
// path and come out the same as an aligned one.
TEST(Ops, LargeOutputsAtAnyAlignment) {
  const int64_t rows = 4096, n = 8192;  // 64 MiB of bf16 per tensor
  std::vector<uint16_t> host(size_t(rows * n));
  for (size_t i = 0; i < host.size(); ++i) host[i] = float_to_bf16(float(int(i % 61) - 30) / 16.0f);
  const Tensor x = Tensor::from_host(host.data(), {rows, n}, DType::bf16, Device::cpu());
  const Tensor w = Tensor::from_host(host.data(), {n}, DType::bf16, Device::cpu());
  // The allocator's 64-byte alignment, and 32 bytes past it (one 256-bit vector, half a store).
  const Tensor aligned = Tensor::empty({rows, n}, DType::bf16, Device::cpu());
  const Tensor shifted = Tensor::empty({rows * n + 16}, DType::bf16, Device::cpu());
  const TensorView shifted_view(static_cast<uint16_t*>(shifted.data()) + 16, DType::bf16, {rows, n});
  std::vector<uint16_t> a(host.size()), b(host.size());
  auto expect_same = [&](const char* op) {
    aligned.copy_to_host(a.data());
    copy(TensorView(b.data(), DType::bf16, {rows, n}), shifted_view);
    EXPECT_TRUE(a == b) << op;
  };
  ops::rms_norm(x, w, 1e-6f, aligned);
  ops::rms_norm(x, w, 1e-6f, shifted_view);
  expect_same("rms_norm");
  ops::swiglu(x, x, aligned);
  ops::swiglu(x, x, shifted_view);
  expect_same("swiglu");
}

}  // namespace
}  // namespace xhal
