// xhal::Error and the status codes it mirrors (error.hpp, status.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

TEST(Error, StatusMapsToCodeAndType) {
  try {
    throw_status(XHAL_ERR_OUT_OF_MEMORY, "m");
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.code(), Errc::out_of_memory);
  }
  try {
    throw_status(XHAL_ERR_TIMEOUT, "t");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::timeout);
    EXPECT_STREQ(errc_name(e.code()), "timeout");
  }
  try {
    throw_status(static_cast<xhal_status>(1234), "odd");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::internal);
  }
}

}  // namespace
}  // namespace xhal
