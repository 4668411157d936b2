// The conformance fixture: every test runs once per (backend, dtype). A backend with no device in
// this process is skipped with its name and the reason (see backend_status()).
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "test_tensor.hpp"
#include "xhal/xhal.hpp"

namespace xhal::test {

class Conformance : public ::testing::TestWithParam<std::tuple<DeviceType, DType>> {
 protected:
  void SetUp() override;

  Device device() const { return device_; }
  DType dtype() const { return std::get<1>(GetParam()); }
  std::mt19937_64& rng() { return rng_; }

  TestTensor random(const std::vector<int64_t>& shape, Layout layout = {}) {
    return TestTensor::random(shape, dtype(), device_, rng_, -1, 1, layout);
  }
  TestTensor poisoned(const std::vector<int64_t>& shape, Layout layout = {}) {
    return TestTensor::poisoned(shape, dtype(), device_, layout);
  }
  TestTensor ints(const std::vector<int64_t>& shape, const std::vector<int64_t>& values, DType type = DType::i32) {
    return TestTensor::of(shape, type, device_, std::vector<double>(values.begin(), values.end()));
  }

 private:
  Device device_;
  std::mt19937_64 rng_;
  uint64_t seed_ = 0;
};

// "" when `type` has a device here, else why not.
std::string backend_status(DeviceType type);

// The backends the suite is instantiated for (default cpu, cuda, hip, ze); set before
// InitGoogleTest.
void set_conformance_backends(std::vector<DeviceType> backends);

}  // namespace xhal::test
