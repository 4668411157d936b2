// Conformance of linear_backward: each subset of the three gradients (dw with dbias is cuBLASLt's
// bias-gradient epilogue, dbias alone or with dx the column sums), empty sums (N = 0: dx is zero;
// M = 0: dw and dbias are zero), padded rows, a NaN in dout, and the same bits twice in
// deterministic mode.
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/gradients.hpp"

namespace xhal::test {
namespace {

struct Wanted {
  bool dx, dw, dbias;
};

// Runs linear_backward for the gradients in `want` and compares them with the golden ones.
void check_linear_backward(const TestTensor& dout, const TestTensor& x, const TestTensor& w, Wanted want,
                           Layout out_layout, bool nan_for_nan) {
  const TensorView dv = dout.view();
  const DType dtype = dv.dtype();
  const int64_t M = dv.size(0), N = dv.size(1), K = x.view().size(1);
  auto dx = TestTensor::poisoned({M, K}, dtype, dv.device(), out_layout);
  auto dw = TestTensor::poisoned({N, K}, dtype, dv.device(), out_layout);
  auto dbias = TestTensor::poisoned({N}, dtype, dv.device());
  const TensorView dx_view = dx, dw_view = dw, dbias_view = dbias;
  ops::linear_backward(dout, x, w, want.dx ? &dx_view : nullptr, want.dw ? &dw_view : nullptr,
                       want.dbias ? &dbias_view : nullptr);
  const auto expected = golden::linear_backward(dout.values(), x.values(), w.values(), M, N, K);
  const auto compare = [&](const std::vector<double>& got, const std::vector<double>& exact, const char* what) {
    if (nan_for_nan) {
      expect_close_nan_for_nan(got, exact, dtype, what);
    } else {
      expect_close(got, exact, dtype, what);
    }
  };
  if (want.dx) compare(dx.download("dx"), expected.dx, "dx");
  if (want.dw) compare(dw.download("dw"), expected.dw, "dw");
  if (want.dbias) compare(dbias.download("dbias"), expected.dbias, "dbias");
}

TEST_P(Conformance, LinearBackward) {
  struct Case {
    int64_t M, N, K;
    int64_t pad;
  };
  // 1000 rows: the column sums in several chunks; 0 in any dimension: the empty sums.
  for (const Case& c :
       {Case{1, 1, 1, 0}, Case{7, 129, 64, 0}, Case{129, 33, 200, 3}, Case{1000, 40, 24, 0}, Case{300, 3, 5, 1},
        Case{17, 250, 96, 0}, Case{0, 5, 7, 0}, Case{3, 0, 7, 0}, Case{3, 5, 0, 0}}) {
    auto dout = random({c.M, c.N}, {{}, c.pad});
    auto x = random({c.M, c.K}, {{}, c.pad});
    auto w = TestTensor::random({c.N, c.K}, dtype(), device(), rng(), -0.1, 0.1);
    for (const Wanted want : {Wanted{true, true, true}, Wanted{true, false, false}, Wanted{false, true, false},
                              Wanted{false, false, true}, Wanted{true, false, true}}) {
      SCOPED_TRACE(fmt::format("M {} N {} K {} pad {}; dx {} dw {} dbias {}", c.M, c.N, c.K, c.pad, want.dx, want.dw,
                               want.dbias));
      check_linear_backward(dout, x, w, want, {{}, c.pad}, false);
    }
  }
}

// A NaN in dout reaches its row of dx, its row of dw and its element of dbias; an infinity in x
// the column of dw it multiplies.
TEST_P(Conformance, LinearBackwardNonFinite) {
  const int64_t M = 40, N = 24, K = 72;
  auto dout = random({M, N}).with({{5 * N + 2, std::nan("")}});
  auto x = random({M, K}).with({{9 * K + 30, INFINITY}});
  auto w = random({N, K});
  check_linear_backward(dout, x, w, {true, true, true}, {}, true);
}

TEST_P(Conformance, LinearBackwardDeterministic) {
  registry::set_deterministic(true);
  const int64_t M = 1000, N = 96, K = 80;
  auto dout = random({M, N}), x = random({M, K}), w = random({N, K});
  std::vector<std::vector<double>> runs;
  for (int run = 0; run < 2; ++run) {
    auto dx = poisoned({M, K}), dw = poisoned({N, K}), dbias = poisoned({N});
    const TensorView dx_view = dx, dw_view = dw, dbias_view = dbias;
    ops::linear_backward(dout, x, w, &dx_view, &dw_view, &dbias_view);
    runs.push_back(dx.download("dx"));
    runs.push_back(dw.download("dw"));
    runs.push_back(dbias.download("dbias"));
  }
  registry::set_deterministic(false);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(runs[i], runs[i + 3]) << "output " << i << " differs between two runs";
}

}  // namespace
}  // namespace xhal::test
