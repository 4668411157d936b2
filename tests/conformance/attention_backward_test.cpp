// Conformance of attention_backward and attention_varlen_backward: head dims 64..256, Dv != D,
// GQA and MQA (dk, dv summed over a group), causal with Sq != Sk, windows, softcap, rows that see
// no key, [B,H,S,D] layouts; packed sequences with an empty one and tokens past the last; NaN and
// infinity at keys no row sees and NaN in a query; the same bits twice in deterministic mode. The
// forward's out and lse come from the float64 reference (out rounded to the dtype, as a forward
// kernel would store it).
#include <fmt/format.h>

#include <cmath>

#include "attention_cases.hpp"
#include "conformance.hpp"
#include "golden/gradients.hpp"

namespace xhal::test {
namespace {

const std::vector<AttnCase> kBackwardCases = {
    {1, 1, 1, 1, 1, 64, 64, {}},
    {2, 37, 37, 4, 2, 64, 64, {.causal = true}},
    {1, 50, 80, 4, 1, 128, 128, {.causal = true}, true, kHeadsFirst},  // Sq < Sk: bottom-right, MQA
    {1, 70, 40, 2, 2, 96, 96, {.causal = true}},  // Sq > Sk: the first rows see nothing
    {1, 100, 100, 2, 1, 64, 64, {.causal = true, .window_left = 16}},
    {1, 40, 70, 3, 1, 64, 64, {.window_left = 5, .window_right = 3}},
    {2, 33, 65, 2, 2, 64, 64, {.scale = 0.3f, .causal = true, .softcap = 5.0f}},
    {1, 40, 40, 4, 2, 192, 128, {.causal = true}},  // Dv != D
    {1, 17, 30, 2, 1, 256, 256, {}},
    {1, 150, 150, 2, 2, 128, 128, {.causal = true}, true, kHeadsFirst},  // several query and key tiles
    {1, 70, 300, 4, 2, 64, 64, {.causal = true, .window_left = 200}},  // windows across 256-key tiles
    {0, 5, 5, 4, 2, 64, 64, {.causal = true}},  // empty batch
    {1, 3, 0, 2, 1, 64, 64, {}},  // no keys: dq is zero
};

// The gradients of one batched case from dout, with the forward's out and lse from the reference.
struct BackwardRun {
  TestTensor dq, dk, dv;
  golden::AttentionGradients expected;
};

BackwardRun run_backward(const AttnCase& c, const TestTensor& q, const TestTensor& k, const TestTensor& v,
                         const TestTensor& dout, DType dtype, Device device) {
  const golden::AttentionMask mask = mask_of(c.params, c.D);
  const auto fwd = golden::attention(q.values(), k.values(), v.values(), c.B, c.Sq, c.Sk, c.Hq, c.Hkv, c.D, c.Dv, mask);
  auto out = TestTensor::of({c.B, c.Sq, c.Hq, c.Dv}, dtype, device, fwd.out, c.layout);
  auto lse = TestTensor::of({c.B, c.Hq, c.Sq}, DType::f32, device, fwd.lse);
  BackwardRun r{TestTensor::poisoned({c.B, c.Sq, c.Hq, c.D}, dtype, device, c.layout),
                TestTensor::poisoned({c.B, c.Sk, c.Hkv, c.D}, dtype, device, c.layout),
                TestTensor::poisoned({c.B, c.Sk, c.Hkv, c.Dv}, dtype, device, c.layout),
                golden::attention_backward(dout.values(), q.values(), k.values(), v.values(), c.B, c.Sq, c.Sk, c.Hq,
                                           c.Hkv, c.D, c.Dv, mask)};
  ops::attention_backward(dout, q, k, v, out, lse, r.dq, r.dk, r.dv, c.params);
  return r;
}

TEST_P(Conformance, AttentionBackward) {
  for (const AttnCase& c : kBackwardCases) {
    SCOPED_TRACE(describe(c));
    auto q = random({c.B, c.Sq, c.Hq, c.D}, c.layout);
    auto k = random({c.B, c.Sk, c.Hkv, c.D}, c.layout);
    auto v = random({c.B, c.Sk, c.Hkv, c.Dv}, c.layout);
    auto dout = random({c.B, c.Sq, c.Hq, c.Dv}, c.layout);
    const BackwardRun r = run_backward(c, q, k, v, dout, dtype(), device());
    expect_close(r.dq.download("dq"), r.expected.dq, dtype(), "dq");
    expect_close(r.dk.download("dk"), r.expected.dk, dtype(), "dk");
    expect_close(r.dv.download("dv"), r.expected.dv, dtype(), "dv");
  }
}

TEST_P(Conformance, AttentionVarlenBackward) {
  // Sequences of 5, 0, 35 and 1 queries against 7, 2, 41 and 0 keys, then 4 query tokens and 5 key
  // tokens past the last sequence (their gradients are zero).
  const std::vector<int64_t> cu_q = {0, 5, 5, 40, 41}, cu_k = {0, 7, 9, 50, 50};
  const int64_t Tq = 45, Tk = 55, Hq = 4, Hkv = 2, D = 64, Dv = 64;
  for (const AttentionParams& params : {AttentionParams{.causal = true}, AttentionParams{.window_left = 6}}) {
    SCOPED_TRACE(fmt::format("causal {} window_left {}", params.causal, params.window_left));
    const golden::AttentionMask mask = mask_of(params, D);
    auto q = random({Tq, Hq, D}), k = random({Tk, Hkv, D}), v = random({Tk, Hkv, Dv}), dout = random({Tq, Hq, Dv});
    // The reference over the covered tokens; the rows past them see no key (out 0, lse -inf).
    const auto head = [](const std::vector<double>& x, int64_t rows, int64_t width) {
      return std::vector<double>(x.begin(), x.begin() + rows * width);
    };
    const auto fwd = golden::attention_varlen(head(q.values(), 41, Hq * D), head(k.values(), 50, Hkv * D),
                                              head(v.values(), 50, Hkv * Dv), cu_q, cu_k, Hq, Hkv, D, Dv, mask);
    std::vector<double> out_values = fwd.out, lse_values;
    out_values.resize(size_t(Tq * Hq * Dv), 0.0);
    for (int64_t h = 0; h < Hq; ++h) {
      lse_values.insert(lse_values.end(), fwd.lse.begin() + h * 41, fwd.lse.begin() + (h + 1) * 41);
      lse_values.insert(lse_values.end(), size_t(Tq - 41), -INFINITY);
    }
    auto out = TestTensor::of({Tq, Hq, Dv}, dtype(), device(), out_values);
    auto lse = TestTensor::of({Hq, Tq}, DType::f32, device(), lse_values);
    auto cu_q_t = ints({5}, cu_q), cu_k_t = ints({5}, cu_k);
    auto dq = poisoned({Tq, Hq, D}), dk = poisoned({Tk, Hkv, D}), dv = poisoned({Tk, Hkv, Dv});
    ops::attention_varlen_backward(dout, q, k, v, cu_q_t, cu_k_t, 35, 41, out, lse, dq, dk, dv, params);
    auto expected = golden::attention_varlen_backward(head(dout.values(), 41, Hq * Dv), head(q.values(), 41, Hq * D),
                                                      head(k.values(), 50, Hkv * D), head(v.values(), 50, Hkv * Dv),
                                                      cu_q, cu_k, Hq, Hkv, D, Dv, mask);
    expected.dq.resize(size_t(Tq * Hq * D), 0.0);
    expected.dk.resize(size_t(Tk * Hkv * D), 0.0);
    expected.dv.resize(size_t(Tk * Hkv * Dv), 0.0);
    expect_close(dq.download("dq"), expected.dq, dtype(), "dq");
    expect_close(dk.download("dk"), expected.dk, dtype(), "dk");
    expect_close(dv.download("dv"), expected.dv, dtype(), "dv");
  }
}

// Keys no row sees (left of every row's window) hold NaN and infinity: their gradients are zero and
// no other gradient is touched. A NaN in one query row makes that row's dq NaN, and the dk and dv
// of the keys that row sees. Also with the keys' non-finite values alone (a kernel must find them
// in k and v, not only in q), at both tensor-core head dims.
TEST_P(Conformance, AttentionBackwardNonFinite) {
  for (const int64_t D : {int64_t(64), int64_t(128)}) {
    for (const bool q_nan : {true, false}) {
      SCOPED_TRACE(fmt::format("D {}, {}", D, q_nan ? "a NaN in q too" : "k and v only"));
      const AttnCase c{1, 4, 10, 2, 1, D, D, {.causal = true, .window_left = 2}};  // rows see keys 4..9 only
      auto q = random({1, 4, 2, D});
      if (q_nan) q = q.with({{(2 * 2 + 1) * D + 3, std::nan("")}});  // row 2, head 1
      auto k = random({1, 10, 1, D}).with({{1 * D + 5, std::nan("")}, {3 * D, INFINITY}});
      auto v = random({1, 10, 1, D}).with({{0 * D + 7, -INFINITY}, {2 * D + 1, std::nan("")}});
      auto dout = random({1, 4, 2, D});
      const BackwardRun r = run_backward(c, q, k, v, dout, dtype(), device());
      expect_close_nan_for_nan(r.dq.download("dq"), r.expected.dq, dtype(), "dq");
      expect_close_nan_for_nan(r.dk.download("dk"), r.expected.dk, dtype(), "dk");
      expect_close_nan_for_nan(r.dv.download("dv"), r.expected.dv, dtype(), "dv");
    }
  }
}

// The same bits twice in deterministic mode, where many key blocks add into every dq row (700
// keys, no mask): unordered f32 atomics would differ from run to run in the last bits. On CUDA
// the tensor-core kernel keeps the call (it orders its dq additions) for f16 and bf16.
TEST_P(Conformance, AttentionBackwardDeterministic) {
  registry::set_deterministic(true);
  for (const AttnCase& c :
       {AttnCase{2, 130, 130, 8, 2, 64, 64, {.causal = true}}, AttnCase{1, 200, 700, 2, 1, 128, 128, {}}}) {
    SCOPED_TRACE(describe(c));
    auto q = random({c.B, c.Sq, c.Hq, c.D}), k = random({c.B, c.Sk, c.Hkv, c.D});
    auto v = random({c.B, c.Sk, c.Hkv, c.Dv}), dout = random({c.B, c.Sq, c.Hq, c.Dv});
    std::vector<std::vector<double>> runs;
    for (int run = 0; run < 2; ++run) {
      const BackwardRun r = run_backward(c, q, k, v, dout, dtype(), device());
      runs.push_back(r.dq.download("dq"));
      runs.push_back(r.dk.download("dk"));
      runs.push_back(r.dv.download("dv"));
    }
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(runs[i], runs[i + 3]) << "gradient " << i << " differs between two runs";
    if (device().type == DeviceType::cuda && dtype() != DType::f32) {
      auto out = poisoned({c.B, c.Sq, c.Hq, c.Dv}), dq = poisoned({c.B, c.Sq, c.Hq, c.D});
      auto dk = poisoned({c.B, c.Sk, c.Hkv, c.D}), dv = poisoned({c.B, c.Sk, c.Hkv, c.Dv});
      auto lse = TestTensor::poisoned({c.B, c.Hq, c.Sq}, DType::f32, device());
      const registry::Explanation ex =
          registry::explain([&] { ops::attention_backward(dout, q, k, v, out, lse, dq, dk, dv, c.params); });
      for (const registry::Candidate& candidate : ex.candidates) {
        if (candidate.taken) {
          EXPECT_EQ(candidate.kernel.find("generic"), std::string::npos) << ex.str();
        }
      }
    }
  }
  registry::set_deterministic(false);
}

}  // namespace
}  // namespace xhal::test
