// No exception crosses an OpenMP region or the plugin's C boundary (kernels/kernel_registration.hpp,
// kernels/cpu/region_errors.hpp): a kernel that throws inside its parallel loop returns a status
// with the exception's message, and host memory running out is out_of_memory.
#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <stdexcept>
#include <string>

#include "kernels/cpu/region_errors.hpp"
#include "kernels/kernel_registration.hpp"

namespace xhal {
namespace {

std::atomic<int> g_iterations{0};

// Throws from one iteration of a parallel loop, the way an allocation inside it would.
template <class Exception>
xhal_status throws_in_region(const xhal_op_call*, char*, size_t) {
  cpu::RegionErrors errors;
#pragma omp parallel for num_threads(4)
  for (int i = 0; i < 64; ++i) {
    errors.capture([&] {
      ++g_iterations;
      if (i == 37) throw Exception("iteration 37 failed");
    });
  }
  errors.rethrow();
  return XHAL_OK;
}

xhal_status throws_bad_alloc(const xhal_op_call*, char*, size_t) { throw std::bad_alloc(); }

TEST(KernelGuard, ExceptionInAParallelLoopBecomesTheKernelsStatus) {
  char message[128] = {};
  g_iterations = 0;
  EXPECT_EQ(kernels::guarded<&throws_in_region<std::runtime_error>>(nullptr, nullptr, message, sizeof message),
            XHAL_ERR_INTERNAL);
  EXPECT_STREQ(message, "iteration 37 failed");
  EXPECT_GE(g_iterations.load(), 1);
}

TEST(KernelGuard, HostMemoryRunningOutIsOutOfMemory) {
  char message[128] = {};
  EXPECT_EQ(kernels::guarded<&throws_bad_alloc>(nullptr, nullptr, message, sizeof message), XHAL_ERR_OUT_OF_MEMORY);
  EXPECT_STREQ(message, "host memory exhausted");
}

}  // namespace
}  // namespace xhal
