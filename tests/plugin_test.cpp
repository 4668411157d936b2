// Plugin loading (include/xhal/plugin.h): run with XHAL_PLUGIN_PATH pointing at a directory of
// deliberately broken plugins. The search path opens every file whose <name> is a backend name, and
// each broken one, loaded again explicitly, is refused with a clear reason; the CPU plugin, found
// next to libxhal, keeps working.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

// The record of a search-path plugin whose path contains `file`.
BackendInfo search_path_record(const std::string& file) {
  for (const auto& b : DeviceManager::instance().backends()) {
    if (b.path.find(file) != std::string::npos) return b;
  }
  ADD_FAILURE() << "no record of " << file << " among the plugins found";
  return {};
}

// The broken plugin `file` of the test directory, loaded explicitly.
BackendInfo record_for(const std::string& file) {
  return DeviceManager::instance().load_plugin(std::string(XHAL_TEST_PLUGIN_DIR) + "/" + file);
}

TEST(Plugin, SearchPathOpensOnlyBackendNames) {
  // Found in XHAL_PLUGIN_PATH, a library whose <name> is not a backend name is recorded, not
  // opened: its constructor would otherwise have run before any check.
  auto b = search_path_record("libxhal_ConstructorProbe.so");
  EXPECT_FALSE(b.loaded);
  EXPECT_NE(b.reason.find("not opened: 'ConstructorProbe' is not a backend name ([a-z][a-z0-9_]{0,31})"),
            std::string::npos)
      << b.reason;
  EXPECT_EQ(std::getenv("XHAL_TEST_PROBE_CONSTRUCTED"), nullptr) << "the library's constructor ran";
}

TEST(Plugin, SearchPathOpensAnyBackendName) {
  // The zoo's names are backend names nobody ships: each was opened and refused for what it is.
  EXPECT_NE(search_path_record("libxhal_wrongabi.so").reason.find("a plugin of ABI version 43"), std::string::npos);
  EXPECT_NE(search_path_record("libxhal_abiv1.so").reason.find("a plugin of ABI version 1"), std::string::npos);
  EXPECT_NE(search_path_record("libxhal_noentry.so").reason.find("missing entry point"), std::string::npos);
}

// A copy of a test plugin in a fresh directory, with the given modes for the file and directory.
std::string plugin_copy(const std::string& name, mode_t file_mode, mode_t dir_mode) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("xhal_plugin_modes_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "libxhal_wrongabi.so";
  fs::copy_file(fs::path(XHAL_TEST_PLUGIN_DIR) / "libxhal_wrongabi.so", file);
  chmod(file.c_str(), file_mode);
  chmod(dir.c_str(), dir_mode);
  return file.string();
}

TEST(Plugin, FileWritableByOthersIsRefusedUnopened) {
  const std::string path = plugin_copy("file", 0666, 0755);
  auto b = DeviceManager::instance().load_plugin(path);
  EXPECT_FALSE(b.loaded);
  EXPECT_NE(b.reason.find("refused: " + path + " is writable by users other than its owner and root (mode 0666)"),
            std::string::npos)
      << b.reason;
  EXPECT_EQ(b.reason.find("ABI version"), std::string::npos) << "it was opened: " << b.reason;
}

TEST(Plugin, DirectoryWritableByOthersIsRefusedUnopened) {
  const std::string path = plugin_copy("dir", 0644, 0777);
  auto b = DeviceManager::instance().load_plugin(path);
  EXPECT_FALSE(b.loaded);
  EXPECT_NE(b.reason.find("is writable by users other than its owner and root (mode 0777)"), std::string::npos)
      << b.reason;
  // Once the directory is closed again, the same file is opened (and refused for its ABI).
  chmod(std::filesystem::path(path).parent_path().c_str(), 0755);
  b = DeviceManager::instance().load_plugin(path);
  EXPECT_NE(b.reason.find("a plugin of ABI version 43"), std::string::npos) << b.reason;
}

TEST(Plugin, WrongAbiVersionIsRefusedBeforeInit) {
  // Its init would fail with "must never be called": the version is asked first.
  auto b = record_for("libxhal_wrongabi.so");
  EXPECT_FALSE(b.loaded);
  EXPECT_NE(b.reason.find("a plugin of ABI version 43; this xhal loads ABI version 2 plugins: rebuild it"),
            std::string::npos)
      << b.reason;
}

TEST(Plugin, AbiVersion1PluginIsRefusedBeforeInit) {
  // Its init aborts the process: the core must tell a version 1 plugin by its missing symbol.
  auto b = record_for("libxhal_abiv1.so");
  EXPECT_FALSE(b.loaded);
  EXPECT_NE(b.reason.find("a plugin of ABI version 1 (it has no xhal_plugin_abi_version); this xhal loads "
                          "ABI version 2 plugins"),
            std::string::npos)
      << b.reason;
}

TEST(Plugin, FailingInitIsRefusedAndLeavesNoKernels) {
  auto b = record_for("libxhal_failinginit.so");
  EXPECT_FALSE(b.loaded);
  EXPECT_NE(b.reason.find("initialisation failed: driver version 0 is older"), std::string::npos) << b.reason;
  for (const auto& k : registry::list_kernels()) EXPECT_NE(k.name, "failing.rms_norm");
}

TEST(Plugin, IncompleteTableIsRefusedNamingTheMember) {
  auto b = record_for("libxhal_incompletetable.so");
  EXPECT_FALSE(b.loaded);
  EXPECT_NE(b.reason.find("function table is incomplete: event_query is not set"), std::string::npos) << b.reason;
  for (const auto& k : registry::list_kernels()) EXPECT_NE(k.name, "incomplete.rms_norm");
}

TEST(Plugin, InitInterruptedByAnExceptionIsRefusedAndLeavesNoKernels) {
  auto b = record_for("libxhal_interruptedinit.so");
  EXPECT_FALSE(b.loaded);
  EXPECT_NE(b.reason.find("initialisation threw: vendor runtime lost its device daemon"), std::string::npos)
      << b.reason;
  for (const auto& k : registry::list_kernels()) EXPECT_NE(k.name, "interrupted.rms_norm");
  EXPECT_FALSE(DeviceManager::instance().has_device(Device{DeviceType::ze, 0}));
}

TEST(Plugin, MissingSymbolIsRefusedNamingIt) {
  auto b = record_for("libxhal_missingsymbol.so");
  EXPECT_FALSE(b.loaded);
  EXPECT_NE(b.reason.find("xhal_test_vendor_symbol_that_does_not_exist"), std::string::npos) << b.reason;
}

TEST(Plugin, LibraryWithoutEntryPointIsRefused) {
  auto b = record_for("libxhal_noentry.so");
  EXPECT_FALSE(b.loaded);
  EXPECT_NE(b.reason.find("missing entry point xhal_plugin_init"), std::string::npos) << b.reason;
}

TEST(Plugin, CpuBackendStillWorks) {
  auto& manager = DeviceManager::instance();
  ASSERT_TRUE(manager.has_device(Device::cpu()));
  std::vector<float> x{1, 2, 3, 4}, w{1, 1, 1, 1}, out(4);
  ops::rms_norm(TensorView(x.data(), DType::f32, {1, 4}), TensorView(w.data(), DType::f32, {4}), 0.0f,
                TensorView(out.data(), DType::f32, {1, 4}));
  EXPECT_NEAR(out[3], 4.0 / std::sqrt(7.5), 1e-6);
}

TEST(Plugin, SearchPathComesFirst) {
  auto backends = DeviceManager::instance().backends();
  auto first_test_plugin = std::find_if(backends.begin(), backends.end(), [](const BackendInfo& b) {
    return b.path.find(XHAL_TEST_PLUGIN_DIR) != std::string::npos;
  });
  auto cpu =
      std::find_if(backends.begin(), backends.end(), [](const BackendInfo& b) { return b.name == "cpu" && b.loaded; });
  ASSERT_NE(first_test_plugin, backends.end());
  ASSERT_NE(cpu, backends.end());
  EXPECT_LT(first_test_plugin - backends.begin(), cpu - backends.begin())
      << "XHAL_PLUGIN_PATH is searched before the directory of libxhal";
}

TEST(Plugin, ExplicitLoadOfDuplicateBackendIsRefused) {
  auto b = DeviceManager::instance().load_plugin(XHAL_TEST_DUPLICATE_PLUGIN);
  EXPECT_FALSE(b.loaded);
  EXPECT_NE(b.reason.find("backend cpu is already provided by"), std::string::npos) << b.reason;
  EXPECT_TRUE(DeviceManager::instance().has_device(Device::cpu()));
}

TEST(Plugin, ExplicitLoadOfMissingFileIsRefused) {
  auto b = DeviceManager::instance().load_plugin("/nonexistent/libxhal_cuda.so");
  EXPECT_FALSE(b.loaded);
  EXPECT_NE(b.reason.find("cannot open"), std::string::npos) << b.reason;
}

TEST(Plugin, ExplicitBackendWithoutPluginSaysWhy) {
  // This build has no ze plugin: selecting it must fail with a reason rather than fall back to
  // the CPU.
  setenv("BACKEND_TYPE", "intel", 1);
  try {
    DeviceManager::instance().default_device();
    ADD_FAILURE() << "BACKEND_TYPE=intel must not fall back";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::backend_unavailable);
    EXPECT_NE(std::string(e.what()).find("BACKEND_TYPE=intel: the ze plugin (libxhal_ze.so) was not found"),
              std::string::npos)
        << e.what();
  }
  unsetenv("BACKEND_TYPE");
}

}  // namespace
}  // namespace xhal
