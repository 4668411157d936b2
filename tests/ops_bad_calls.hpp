// The catalogue of bad calls ops_test checks: for every op, inputs each argument check must
// refuse, with the error code and the argument the message must name.
#pragma once

#include <functional>
#include <vector>

#include "op_buffers.hpp"
#include "xhal/xhal.hpp"

namespace xhal {

struct BadCall {
  const char* what;
  Errc code;
  const char* op;
  const char* arg;  // must appear quoted in the message
  std::function<void(Buffers&)> call;
};

const std::vector<BadCall>& bad_calls();
// The serving ops' part of it (ops_bad_calls_serving.cpp).
std::vector<BadCall> serving_bad_calls();

}  // namespace xhal
