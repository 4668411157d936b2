// Conformance of embedding (i32 and i64 ids, odd and padded rows, an empty batch, an id outside
// the table) and embedding_backward (ids that repeat many times, padding_idx, rows no token
// picks, NaN in dout, and the same bits twice in deterministic mode).
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/golden.hpp"
#include "golden/gradients.hpp"

namespace xhal::test {
namespace {

struct EmbeddingCase {
  int64_t T, V, D;
  DType id_type;
  int64_t pad;
};

const EmbeddingCase kEmbeddingCases[] = {{1, 1, 1, DType::i32, 0},        {7, 50, 64, DType::i64, 0},
                                         {300, 1000, 129, DType::i32, 3}, {0, 5, 8, DType::i32, 0},
                                         {64, 3, 4096, DType::i64, 0},    {2000, 37, 72, DType::i32, 0},
                                         {33, 70000, 40, DType::i64, 8}};

// Ids drawn from 0..V-1, a third of them the same id (a frequent token: a long run after sorting).
std::vector<int64_t> random_ids(int64_t T, int64_t V, std::mt19937_64& rng) {
  std::vector<int64_t> ids(static_cast<size_t>(T));
  for (auto& id : ids) id = rng() % 3 == 0 ? V / 2 : int64_t(rng() % uint64_t(V));
  return ids;
}

TEST_P(Conformance, Embedding) {
  for (const auto& [T, V, D, id_type, pad] : kEmbeddingCases) {
    SCOPED_TRACE(fmt::format("T {} V {} D {} ids {} pad {}", T, V, D, dtype_name(id_type), pad));
    const auto id_values = random_ids(T, V, rng());
    auto ids = ints({T}, id_values, id_type);
    auto table = random({V, D}, {{}, pad});
    auto out = poisoned({T, D}, {{}, pad});
    ops::embedding(ids, table, out);
    expect_close(out.download("out"), golden::embedding(id_values, table.values(), D), dtype(), "out");
  }
}

// An id outside the table: the CPU refuses the call and writes nothing; a GPU writes NaN over that
// token's row (and the others as usual).
TEST_P(Conformance, EmbeddingIdOutOfRange) {
  const int64_t V = 20, D = 48;
  auto table = random({V, D});
  for (const int64_t bad : {int64_t(-1), V, int64_t(1) << 40}) {
    SCOPED_TRACE(fmt::format("id {}", bad));
    const std::vector<int64_t> id_values = {3, bad, 19};
    auto ids = ints({3}, id_values, DType::i64);
    auto out = random({3, D});  // not NaN: the CPU's must compare equal to itself after the call
    if (device().type == DeviceType::cpu) {
      const auto before = out.download("out before");
      EXPECT_THROW(ops::embedding(ids, table, out), Error);
      EXPECT_EQ(out.download("out after"), before) << "out was written";
      continue;
    }
    ops::embedding(ids, table, out);
    auto expected = golden::embedding({3, 0, 19}, table.values(), D);
    for (int64_t d = 0; d < D; ++d) expected[size_t(D + d)] = std::nan("");
    expect_close_nan_for_nan(out.download("out"), expected, dtype(), "out");
  }
}

TEST_P(Conformance, EmbeddingBackward) {
  for (const auto& [T, V, D, id_type, pad] : kEmbeddingCases) {
    for (const int64_t padding_idx : {int64_t(-1), V / 2}) {
      SCOPED_TRACE(
          fmt::format("T {} V {} D {} ids {} pad {} padding_idx {}", T, V, D, dtype_name(id_type), pad, padding_idx));
      const auto id_values = random_ids(T, V, rng());
      auto ids = ints({T}, id_values, id_type);
      auto dout = random({T, D}, {{}, pad});
      auto dtable = poisoned({V, D}, {{}, pad});
      ops::embedding_backward(ids, dout, dtable, padding_idx);
      expect_close(dtable.download("dtable"), golden::embedding_backward(id_values, dout.values(), V, D, padding_idx),
                   dtype(), "dtable");
    }
  }
}

// A NaN in dout makes its token's row of dtable NaN, and no other.
TEST_P(Conformance, EmbeddingBackwardNonFinite) {
  const int64_t T = 50, V = 9, D = 136;
  const auto id_values = random_ids(T, V, rng());
  auto ids = ints({T}, id_values);
  auto dout = random({T, D}).with({{17 * D + 5, std::nan("")}, {30 * D + 100, INFINITY}});
  auto dtable = poisoned({V, D});
  ops::embedding_backward(ids, dout, dtable);
  expect_close_nan_for_nan(dtable.download("dtable"), golden::embedding_backward(id_values, dout.values(), V, D, -1),
                           dtype(), "dtable");
}

TEST_P(Conformance, EmbeddingBackwardDeterministic) {
  registry::set_deterministic(true);
  const int64_t T = 5000, V = 300, D = 200;
  const auto id_values = random_ids(T, V, rng());
  auto ids = ints({T}, id_values);
  auto dout = random({T, D});
  std::vector<std::vector<double>> runs;
  for (int run = 0; run < 2; ++run) {
    auto dtable = poisoned({V, D});
    ops::embedding_backward(ids, dout, dtable);
    runs.push_back(dtable.download("dtable"));
  }
  registry::set_deterministic(false);
  EXPECT_EQ(runs[0], runs[1]) << "dtable differs between two runs";
}

}  // namespace
}  // namespace xhal::test
