// Conformance of merge_attention_states: odd shapes, padded rows and transposed lse, parts that saw
// no key (lse -inf) holding NaN and infinities that must not be read, NaN and +inf lse, and the
// merge written in place over one part.
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/golden.hpp"

namespace xhal::test {
namespace {

struct MergeCase {
  int64_t T, H, D, pad;
  bool lse_out;
};

const MergeCase kMergeCases[] = {{1, 1, 1, 0, true},     {7, 3, 64, 0, true},    {129, 8, 128, 8, true},
                                 {0, 4, 8, 0, true},     {33, 2, 200, 0, false}, {5, 2, 0, 0, true},
                                 {300, 32, 128, 0, true}};

// lse values in [-6, 6] as attention writes them ([H, T] f32, stored [T, H] when `transposed`).
TestTensor lse_tensor(int64_t H, int64_t T, Device device, std::mt19937_64& rng, bool transposed) {
  return TestTensor::random({H, T}, DType::f32, device, rng, -6, 6,
                            {transposed ? std::vector<int>{1, 0} : std::vector<int>{}, 0});
}

TEST_P(Conformance, MergeAttentionStates) {
  for (const auto& [T, H, D, pad, lse_out] : kMergeCases) {
    SCOPED_TRACE(fmt::format("T {} H {} D {} pad {} lse {}", T, H, D, pad, lse_out));
    auto a = random({T, H, D}, {{}, pad}), b = random({T, H, D}, {{}, pad});
    auto lse_a = lse_tensor(H, T, device(), rng(), false), lse_b = lse_tensor(H, T, device(), rng(), true);
    auto out = poisoned({T, H, D}, {{}, pad});
    auto lse = TestTensor::poisoned({H, T}, DType::f32, device());
    ops::merge_attention_states(a, lse_a, b, lse_b, out, lse_out ? &lse.view() : nullptr);
    const auto expected =
        golden::merge_attention_states(a.values(), lse_a.values(), b.values(), lse_b.values(), T, H, D);
    expect_close(out.download("out"), expected.out, dtype(), "out");
    if (lse_out) expect_close(lse.download("lse"), expected.lse, DType::f32, "lse");
  }
}

// Rows where one part saw no key (lse -inf) and its values are NaN or infinite: the other part
// alone, finite; rows where neither did: 0 and -inf. A NaN or +inf lse: a NaN row.
TEST_P(Conformance, MergeAttentionStatesNonFinite) {
  const int64_t T = 40, H = 3, D = 72;
  std::vector<std::pair<int64_t, double>> lse_a_special, lse_b_special, a_special, b_special;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t h = t % H, at = h * T + t, row = (t * H + h) * D;
    switch (t % 8) {
      case 0:  // part a saw no key; its values are garbage
        lse_a_special.push_back({at, -INFINITY});
        a_special.push_back({row + t % D, std::nan("")});
        a_special.push_back({row + (t + 1) % D, INFINITY});
        break;
      case 1:  // part b saw no key
        lse_b_special.push_back({at, -INFINITY});
        b_special.push_back({row + t % D, -INFINITY});
        break;
      case 2:  // neither did
        lse_a_special.push_back({at, -INFINITY});
        lse_b_special.push_back({at, -INFINITY});
        a_special.push_back({row, std::nan("")});
        break;
      case 3: lse_a_special.push_back({at, std::nan("")}); break;
      case 4: lse_b_special.push_back({at, INFINITY}); break;
      case 5:  // a NaN value in a part that counts
        a_special.push_back({row + 3, std::nan("")});
        break;
      default: break;
    }
  }
  auto a = random({T, H, D}).with(a_special), b = random({T, H, D}).with(b_special);
  auto lse_a = lse_tensor(H, T, device(), rng(), false).with(lse_a_special);
  auto lse_b = lse_tensor(H, T, device(), rng(), false).with(lse_b_special);
  auto out = poisoned({T, H, D});
  auto lse = TestTensor::poisoned({H, T}, DType::f32, device());
  ops::merge_attention_states(a, lse_a, b, lse_b, out, &lse.view());
  const auto expected = golden::merge_attention_states(a.values(), lse_a.values(), b.values(), lse_b.values(), T, H, D);
  expect_close_nan_for_nan(out.download("out"), expected.out, dtype(), "out");
  expect_close_nan_for_nan(lse.download("lse"), expected.lse, DType::f32, "lse");
}

// out over out_a and lse over lse_b (each row read whole before it is written).
TEST_P(Conformance, MergeAttentionStatesInPlace) {
  const int64_t T = 65, H = 4, D = 128;
  auto a = random({T, H, D}), b = random({T, H, D});
  auto lse_a = lse_tensor(H, T, device(), rng(), false), lse_b = lse_tensor(H, T, device(), rng(), false);
  const auto expected = golden::merge_attention_states(a.values(), lse_a.values(), b.values(), lse_b.values(), T, H, D);
  ops::merge_attention_states(a, lse_a, b, lse_b, a, &lse_b.view());
  expect_close(a.download("out (over out_a)"), expected.out, dtype(), "out");
  expect_close(lse_b.download("lse (over lse_b)"), expected.lse, DType::f32, "lse");
}

}  // namespace
}  // namespace xhal::test
