// Everything a C++ user of xhal needs.
#pragma once

#include "xhal/device.hpp"
#include "xhal/device_manager.hpp"
#include "xhal/dtype.hpp"
#include "xhal/error.hpp"
#include "xhal/check.hpp"
#include "xhal/trace.hpp"
#include "xhal/fp8.hpp"
#include "xhal/half.hpp"
#include "xhal/ops.hpp"
#include "xhal/registry.hpp"
#include "xhal/stream.hpp"
#include "xhal/tensor.hpp"
#include "xhal/tensor_view.hpp"
