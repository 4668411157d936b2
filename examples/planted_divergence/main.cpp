// A planted divergence for docs/debugging.md: with --plant, a swiglu kernel with a migration bug
// (rows are done 16 elements at a time, and the tail of a row whose length is not a multiple of
// 16 reads `up` one element off) is registered for the CPU backend above the CPU's own
// kernels, as a vendor plugin would register it. The program then runs a small MLP block
// (rms_norm, linear, swiglu, linear) and prints a checksum. Run it with XHAL_CHECK=cpu to find the
// diverging op.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "xhal/xhal.hpp"

namespace {

// silu(gate) * up on f32 rows (of 16 elements or more); the tail reads up[i - 1].
xhal_status swiglu_with_tail_bug(void*, const xhal_op_call* c, char*, size_t) {
  const DLTensor* gate = c->tensors[XHAL_SWIGLU_GATE];
  const int64_t n = gate->shape[gate->ndim - 1], rows = gate->shape[0];
  const auto* g = static_cast<const float*>(gate->data);
  const auto* u = static_cast<const float*>(c->tensors[XHAL_SWIGLU_UP]->data);
  auto* out = static_cast<float*>(c->tensors[XHAL_SWIGLU_OUT]->data);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t whole = n / 16 * 16;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = r * n + i;
      const float up = i < whole ? u[j] : u[j - 1];  // the bug
      out[j] = g[j] / (1.0f + std::exp(-g[j])) * up;
    }
  }
  return XHAL_OK;
}

xhal::Tensor random(const std::vector<int64_t>& shape, std::mt19937& rng, float scale) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> host(static_cast<size_t>(n));
  for (float& v : host) v = dist(rng);
  return xhal::Tensor::from_host(host.data(), shape, xhal::DType::f32, xhal::Device::cpu());
}

}  // namespace

int main(int argc, char** argv) {
  const bool plant = argc > 1 && std::strcmp(argv[1], "--plant") == 0;
  try {
    if (plant) {
      xhal_kernel_desc desc{};
      desc.struct_size = sizeof desc;
      desc.name = "vendor.swiglu_tail_bug";
      desc.op = XHAL_OP_SWIGLU;
      desc.dtype = XHAL_DTYPE_F32;
      desc.priority = 100;
      desc.rtol = desc.atol = 2e-5;
      desc.run = swiglu_with_tail_bug;
      xhal::registry::register_kernel(xhal::DeviceType::cpu, desc);
    }
    const xhal::Device cpu = xhal::Device::cpu();
    const int64_t tokens = 4, hidden = 256, inter = 1000;  // 1000 = 62 * 16 + 8: rows with a tail
    std::mt19937 rng(7);
    const xhal::Tensor x = random({tokens, hidden}, rng, 1.0f), norm_w = random({hidden}, rng, 1.0f);
    const xhal::Tensor w_gate = random({inter, hidden}, rng, 0.06f), w_up = random({inter, hidden}, rng, 0.06f);
    const xhal::Tensor w_down = random({hidden, inter}, rng, 0.03f);
    const auto f32 = [&](int64_t rows, int64_t cols) {
      return xhal::Tensor::empty({rows, cols}, xhal::DType::f32, cpu);
    };
    xhal::Tensor h = f32(tokens, hidden), gate = f32(tokens, inter), up = f32(tokens, inter);
    xhal::Tensor act = f32(tokens, inter), out = f32(tokens, hidden);
    xhal::ops::rms_norm(x, norm_w, 1e-6f, h);
    xhal::ops::linear(h, w_gate, nullptr, gate);
    xhal::ops::linear(h, w_up, nullptr, up);
    xhal::ops::swiglu(gate, up, act);
    xhal::ops::linear(act, w_down, nullptr, out);
    std::vector<float> result(static_cast<size_t>(tokens * hidden));
    out.copy_to_host(result.data());
    double sum = 0;
    for (float v : result) sum += std::abs(v);
    std::printf("MLP block (%s swiglu kernel): sum |out| = %.6f\n", plant ? "planted" : "the CPU's", sum);
  } catch (const xhal::Error& e) {
    std::fprintf(stderr, "planted_divergence: %s\n", e.what());
    return 1;
  }
  return 0;
}
