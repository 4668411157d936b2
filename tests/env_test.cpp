// The environment variables' rules (src/core/env.hpp): every variable of the table given garbage
// (empty, spaces, upper case, overflow, negative, words), each refusal a message naming the
// variable, the value as given and what is accepted. How each reader then acts on a bad value is
// tested where it reads it (tests/CMakeLists.txt runs those with the variable set).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "comm/bootstrap.hpp"
#include "core/env.hpp"
#include "xhal/error.hpp"

namespace xhal {
namespace {

using env::Var;

// Texts every variable is given; whether each is accepted is the table below.
const std::vector<std::string> kGarbage = {"",           "   ",          "bogus", "-5",   "18446744073709551617",
                                           "4294967296", "17179869185G", "2^64",  "1.5G", "TRUE",
                                           "WARN",       " 1 ",          "file:", "cu da"};

// The garbage each variable accepts (every other text of kGarbage must be refused).
struct Expectation {
  Var var;
  std::vector<std::string> accepted;
};
const std::vector<Expectation> kExpected = {
    {Var::backend_type, {"", "   ", "bogus", "TRUE", "WARN"}},  // names; which exist is decided at use
    {Var::plugin_path, kGarbage},
    {Var::log_level, {"", "   ", "WARN"}},
    {Var::allocator, {"", "   "}},
    {Var::memory_limit, {"", "   ", "4294967296", " 1 "}},
    {Var::strict, {"", "   ", "TRUE", " 1 "}},
    {Var::deterministic, {"", "   ", "TRUE", " 1 "}},
    {Var::force_reference, kGarbage},  // lists: the reader judges the items
    {Var::disable_kernels, kGarbage},
    {Var::cpu_disable, kGarbage},
    {Var::rank, {"", "   ", " 1 "}},
    {Var::world_size, {"", "   ", " 1 "}},
    {Var::store, {"", "   "}},
    {Var::check, {"", "   "}},
    {Var::check_action, {"", "   "}},
    {Var::trace, kGarbage},
    {Var::fault_alloc, {"", "   ", "4294967296", " 1 "}},
};

TEST(Env, EveryVariableOfTheTableIsCovered) {
  ASSERT_EQ(env::table().size(), kExpected.size());
  for (size_t i = 0; i < kExpected.size(); ++i) EXPECT_EQ(env::table()[i].var, kExpected[i].var);
}

TEST(Env, GarbageIsRefusedNamingTheVariableAndTheValue) {
  for (const auto& [var, accepted] : kExpected) {
    const auto& info = env::info(var);
    for (const std::string& text : kGarbage) {
      const bool ok = std::find(accepted.begin(), accepted.end(), text) != accepted.end();
      const auto problem = env::problem(var, text);
      EXPECT_EQ(!problem.has_value(), ok) << info.name << "='" << text << "': " << problem.value_or("accepted");
      if (!problem) continue;
      EXPECT_EQ(problem->rfind(std::string(info.name) + "='" + text + "': expected ", 0), 0u) << *problem;
      EXPECT_GT(problem->size(), info.name.size() + text.size() + 14) << "says nothing of what is accepted";
    }
  }
}

TEST(Env, ByteCountsAreExactAndOverflowChecked) {
  EXPECT_EQ(env::parse_bytes("64M"), uint64_t(64) << 20);
  EXPECT_EQ(env::parse_bytes(" 2gib "), uint64_t(2) << 30);
  EXPECT_EQ(env::parse_bytes("1t"), uint64_t(1) << 40);
  EXPECT_EQ(env::parse_bytes("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(env::parse_bytes("16777215T"), uint64_t(16777215) << 40);
  // Each of these once became a small number (the top bits shifted out) or no limit.
  for (const char* text :
       {"18446744073709551616", "18446744073709551617", "17179869185G", "16777216T", "-1", "1.5G", "G", "12Q"}) {
    EXPECT_FALSE(env::parse_bytes(text).has_value()) << text;
  }
}

TEST(Env, IntegersKeepToTheirRange) {
  EXPECT_EQ(env::problem(Var::rank, "0"), std::nullopt);
  EXPECT_EQ(env::problem(Var::rank, "2147483646"), std::nullopt);
  // RANK=4294967296 once became rank 0, WORLD_SIZE=4294967297 world size 1, RANK=-5 unset.
  EXPECT_EQ(env::problem(Var::rank, "4294967296"), "RANK='4294967296': expected an integer in [0, 2147483646]");
  EXPECT_EQ(env::problem(Var::rank, "-5"), "RANK='-5': expected an integer in [0, 2147483646]");
  EXPECT_EQ(env::problem(Var::world_size, "4294967297"),
            "WORLD_SIZE='4294967297': expected an integer in [1, 2147483647]");
  EXPECT_EQ(env::problem(Var::world_size, "0"), "WORLD_SIZE='0': expected an integer in [1, 2147483647]");
}

TEST(Env, ChoicesAndFlagsIgnoreCaseAndSpaces) {
  setenv("XHAL_LOG_LEVEL", " Info ", 1);
  EXPECT_EQ(env::choice_text(Var::log_level), "info");
  setenv("XHAL_STRICT", "YES", 1);
  EXPECT_EQ(env::flag(Var::strict), true);
  setenv("XHAL_STRICT", "Off", 1);
  EXPECT_EQ(env::flag(Var::strict), false);
  setenv("XHAL_STRICT", "bogus", 1);
  try {
    env::flag(Var::strict);
    ADD_FAILURE() << "XHAL_STRICT=bogus accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_STREQ(e.what(), "XHAL_STRICT='bogus': expected 1, true, on, yes, 0, false, off or no");
  }
  unsetenv("XHAL_LOG_LEVEL");
  unsetenv("XHAL_STRICT");
}

TEST(Env, ListsAreTrimmedAndLowerCased) {
  setenv("XHAL_DISABLE_KERNELS", " CPU.Rms_Norm ,, cpu.swiglu ,", 1);
  EXPECT_EQ(env::list(Var::disable_kernels), (std::vector<std::string>{"cpu.rms_norm", "cpu.swiglu"}));
  unsetenv("XHAL_DISABLE_KERNELS");
  EXPECT_TRUE(env::list(Var::disable_kernels).empty());
}

// RANK and WORLD_SIZE are read at each Communicator::create: a value out of range is an error
// naming the variable, before any engine is touched.
TEST(Env, RankOutOfRangeIsRefusedAtCreate) {
  for (const auto& [name, text] : {std::pair{"RANK", "4294967296"}, std::pair{"RANK", "-5"},
                                   std::pair{"WORLD_SIZE", "4294967297"}, std::pair{"WORLD_SIZE", "0"}}) {
    setenv(name, text, 1);
    try {
      comm::requested_rank_and_size(comm::Options{});
      ADD_FAILURE() << name << "=" << text << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(std::string(name) + "='" + text + "': expected an integer in ["),
                std::string::npos)
          << e.what();
    }
    unsetenv(name);
  }
}

// XHAL_STORE whose path cannot work fails at once on every rank with the reason, leaving nothing
// behind (a directory once left <dir>.tmpPID; a missing directory made rank 1 wait its timeout).
TEST(Env, UnusableStoreFailsAtOnce) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "xhal_store_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "a_directory");
  const struct Case {
    std::string path;
    int rank;
    const char* why;
  } cases[] = {{(dir / "a_directory").string(), 0, "it is a directory"},
               {(dir / "a_directory").string(), 1, "it is a directory"},
               {(dir / "missing" / "store").string(), 0, "does not exist"},
               {(dir / "missing" / "store").string(), 1, "does not exist"}};
  for (const Case& c : cases) {
    setenv("XHAL_STORE", ("file:" + c.path).c_str(), 1);
    std::vector<unsigned char> id(16, 7);
    const auto start = std::chrono::steady_clock::now();
    try {
      comm::share_from_rank0(id, {c.rank, 2}, std::chrono::seconds(20));
      ADD_FAILURE() << c.path << " accepted on rank " << c.rank;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.why), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "waited for " << c.path;
  }
  unsetenv("XHAL_STORE");
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir)) left.push_back(entry.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"a_directory"}) << "files left behind";
  // A usable store still works: rank 0 writes, rank 1 reads.
  setenv("XHAL_STORE", ("file:" + (dir / "store").string()).c_str(), 1);
  std::vector<unsigned char> sent(16, 42), received(16, 0);
  comm::share_from_rank0(sent, {0, 2}, std::chrono::seconds(5));
  comm::share_from_rank0(received, {1, 2}, std::chrono::seconds(5));
  EXPECT_EQ(received, sent);
  unsetenv("XHAL_STORE");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xhal
