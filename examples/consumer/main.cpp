// Smallest use of an installed xhal, compiled as C++17: rms_norm on the CPU, one value checked by
// hand. Exit status 0 means the headers, the library and its CPU plugin were all found and agree.
#include <cmath>
#include <cstdio>

#include "xhal/xhal.hpp"

int main() {
  try {
    // Two rows of four; row 1 is x = [1, 2, 3, 4] with weight [0.5, 1, 1.5, 2].
    const float x[8] = {-1.0f, 0.5f, 2.0f, -3.0f, 1.0f, 2.0f, 3.0f, 4.0f};
    const float w[4] = {0.5f, 1.0f, 1.5f, 2.0f};
    const float eps = 1e-6f;
    const xhal::Device cpu = xhal::Device::cpu();
    const xhal::Tensor tx = xhal::Tensor::from_host(x, {2, 4}, xhal::DType::f32, cpu);
    const xhal::Tensor tw = xhal::Tensor::from_host(w, {4}, xhal::DType::f32, cpu);
    const xhal::Tensor out = xhal::Tensor::empty({2, 4}, xhal::DType::f32, cpu);
    xhal::ops::rms_norm(tx, tw, eps, out);
    float got[8];
    out.copy_to_host(got);

    // By hand: mean(x^2) of row 1 = (1 + 4 + 9 + 16) / 4 = 7.5, so out[1][3] = 4 / sqrt(7.5) * 2.
    const double expected = 4.0 / std::sqrt(7.5 + double(eps)) * 2.0;
    if (std::fabs(got[7] - expected) > 1e-5 * std::fabs(expected)) {
      std::fprintf(stderr, "consumer: rms_norm out[1][3] = %.7f, expected %.7f\n", got[7], expected);
      return 1;
    }
    std::printf("consumer: ok\n");
    return 0;
  } catch (const xhal::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 2;
  }
}
