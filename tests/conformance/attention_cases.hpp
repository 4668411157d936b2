// The attention cases' shared vocabulary: a case's shape and params, its description for
// SCOPED_TRACE, its golden mask, and the [B,H,S,D] layout. Used by the forward and backward tests.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "golden/golden.hpp"
#include "test_tensor.hpp"
#include "xhal/ops.hpp"

namespace xhal::test {

// Physical order [B,H,S,D] for a logical [B,S,H,D] tensor.
inline const Layout kHeadsFirst{{0, 2, 1, 3}, 0};

struct AttnCase {
  int64_t B, Sq, Sk, Hq, Hkv, D, Dv;
  AttentionParams params;
  bool lse = true;
  Layout layout = {};
};

inline std::string describe(const AttnCase& c) {
  return fmt::format(
      "B {} Sq {} Sk {} Hq {} Hkv {} D {} Dv {} causal {} window ({},{}) softcap {} "
      "scale {} strided {}",
      c.B, c.Sq, c.Sk, c.Hq, c.Hkv, c.D, c.Dv, c.params.causal, c.params.window_left, c.params.window_right,
      c.params.softcap, c.params.scale, !c.layout.order.empty());
}

inline golden::AttentionMask mask_of(const AttentionParams& p, int64_t D) {
  return {p.scale != 0 ? p.scale : 1.0 / std::sqrt(double(D)), p.causal, p.window_left, p.window_right, p.softcap};
}

}  // namespace xhal::test
