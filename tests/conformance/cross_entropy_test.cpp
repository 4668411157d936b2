// Conformance of cross_entropy and cross_entropy_backward: vocabularies from 1 to 128256 classes,
// unaligned and padded rows, i32 and i64 labels with ignored tokens, label smoothing and z-loss,
// the gradient in place over the logits, and masked (-inf) and NaN logits.
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/golden.hpp"
#include "golden/gradients.hpp"

namespace xhal::test {
namespace {

struct Case {
  int64_t T, V;
  DType labels;
  CrossEntropyParams params;
  int64_t pad;  // extra elements after each row of logits
};

const std::vector<Case> kCases = {
    {1, 1, DType::i32, {}, 0},
    {7, 129, DType::i64, {}, 0},
    {33, 1000, DType::i32, {.label_smoothing = 0.1f}, 0},
    {5, 1001, DType::i64, {.z_loss = 1e-4f}, 3},
    {16, 4096, DType::i32, {.ignore_index = 7, .label_smoothing = 0.05f, .z_loss = 1e-3f}, 8},
    {3, 128256, DType::i64, {}, 0},
    {0, 50, DType::i32, {}, 0},
};

// Labels in 0..V-1, every fifth token ignored.
std::vector<int64_t> labels_for(const Case& c, std::mt19937_64& rng) {
  std::vector<int64_t> labels(size_t(c.T));
  for (size_t t = 0; t < labels.size(); ++t) {
    labels[t] = t % 5 == 4 ? c.params.ignore_index : int64_t(rng() % uint64_t(c.V));
  }
  return labels;
}

TEST_P(Conformance, CrossEntropy) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(fmt::format("T {} V {} smoothing {} z {}", c.T, c.V, c.params.label_smoothing, c.params.z_loss));
    auto logits = TestTensor::random({c.T, c.V}, dtype(), device(), rng(), -8, 8, {{}, c.pad});
    const auto labels = labels_for(c, rng());
    auto labels_t = ints({c.T}, labels, c.labels);
    auto loss = TestTensor::poisoned({c.T}, DType::f32, device());
    auto lse = TestTensor::poisoned({c.T}, DType::f32, device());
    ops::cross_entropy(logits, labels_t, loss, lse, c.params);
    const auto expected = golden::cross_entropy(logits.values(), labels, c.V, c.params.ignore_index,
                                                c.params.label_smoothing, c.params.z_loss);
    // f32 outputs reduced in f32 from the rounded logits: the f32 tolerance whatever the dtype.
    expect_close(loss.download("loss"), expected.loss, DType::f32, "loss");
    expect_close(lse.download("lse"), expected.lse, DType::f32, "lse");
  }
}

TEST_P(Conformance, CrossEntropyBackward) {
  for (const Case& c : kCases) {
    for (const bool in_place : {false, true}) {
      SCOPED_TRACE(fmt::format("T {} V {} smoothing {} z {}{}", c.T, c.V, c.params.label_smoothing, c.params.z_loss,
                               in_place ? ", in place" : ""));
      auto logits = TestTensor::random({c.T, c.V}, dtype(), device(), rng(), -8, 8, {{}, c.pad});
      const auto labels = labels_for(c, rng());
      auto labels_t = ints({c.T}, labels, c.labels);
      const auto lse_values = golden::cross_entropy(logits.values(), labels, c.V, c.params.ignore_index, 0, 0).lse;
      auto lse = TestTensor::of({c.T}, DType::f32, device(), lse_values);
      auto dloss = TestTensor::random({c.T}, DType::f32, device(), rng(), 0.1, 2);
      auto dlogits = poisoned({c.T, c.V});
      const auto expected =
          golden::cross_entropy_backward(logits.values(), labels, c.V, dloss.values(), c.params.ignore_index,
                                         c.params.label_smoothing, c.params.z_loss);
      ops::cross_entropy_backward(logits, labels_t, lse, dloss, in_place ? logits : dlogits, c.params);
      expect_close((in_place ? logits : dlogits).download("dlogits"), expected, dtype(), "dlogits");
    }
  }
}

// Masked classes (-inf) are allowed and get no probability; a row with every class masked has lse
// -inf; a NaN logit makes its row's lse, loss and gradient NaN, and no other row's.
TEST_P(Conformance, CrossEntropyNonFinite) {
  const int64_t T = 4, V = 300;
  const double inf = INFINITY, nan = std::nan("");
  std::vector<std::pair<int64_t, double>> specials;
  for (int64_t j = 0; j < V; j += 3) specials.push_back({j, -inf});  // row 0: a third masked
  for (int64_t j = 0; j < V; ++j) specials.push_back({2 * V + j, -inf});  // row 2: all masked
  specials.push_back({3 * V + 17, nan});  // row 3
  auto logits = TestTensor::random({T, V}, dtype(), device(), rng(), -8, 8).with(specials);
  const std::vector<int64_t> labels = {1, 5, -100, 9};  // row 2 ignored (its loss would be NaN)
  auto labels_t = ints({T}, labels);
  auto loss = TestTensor::of({T}, DType::f32, device(), std::vector<double>(size_t(T), 0.5));
  auto lse = TestTensor::of({T}, DType::f32, device(), std::vector<double>(size_t(T), 0.5));
  ops::cross_entropy(logits, labels_t, loss, lse);
  const auto expected = golden::cross_entropy(logits.values(), labels, V, -100, 0, 0);
  expect_close_nan_for_nan(loss.download("loss"), expected.loss, DType::f32, "loss");
  const auto got_lse = lse.download("lse");
  EXPECT_EQ(got_lse[2], -INFINITY) << "a row of masked classes";
  expect_close_nan_for_nan({got_lse[0], got_lse[1], got_lse[3]}, {expected.lse[0], expected.lse[1], expected.lse[3]},
                           DType::f32, "lse");
  const std::vector<double> dloss_values(size_t(T), 1.0);
  auto dloss = TestTensor::of({T}, DType::f32, device(), dloss_values);
  auto dlogits = poisoned({T, V});
  ops::cross_entropy_backward(logits, labels_t, lse, dloss, dlogits);
  expect_close_nan_for_nan(dlogits.download("dlogits"),
                           golden::cross_entropy_backward(logits.values(), labels, V, dloss_values, -100, 0, 0),
                           dtype(), "dlogits");
}

}  // namespace
}  // namespace xhal::test
