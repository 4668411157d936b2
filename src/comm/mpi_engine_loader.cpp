// Loading the MPI engine (libxhal_mpi.so) when the first cpu communicator is made: libxhal itself
// never links libmpi, so a program that uses no cpu collectives runs where MPI is not installed.
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "comm/engines.hpp"
#include "core/plugin_loader.hpp"
#include "core/text_format.hpp"
#include "xhal/error.hpp"

namespace xhal::comm {
namespace {

struct LoadedEngine {
  const MpiEngine* engine = nullptr;
  std::string why;  // when engine is NULL
};

// Opened once; the handle stays open (MPI is finalised at exit by the engine itself).
LoadedEngine load_engine() {
  std::string tried;
  for (const std::string& dir : xhal_library_dirs()) {
    const std::string path = dir + "/" + kMpiEngineFile;
    if (std::string why = writable_reason(path); !why.empty()) return {nullptr, why};
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      tried += format_text("{}{}", tried.empty() ? "" : "; ", err ? err : path);
      continue;
    }
    using Entry = const MpiEngine* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, kMpiEngineEntry));
    if (entry == nullptr) return {nullptr, format_text("{} has no {}", path, kMpiEngineEntry)};
    return {entry(), ""};
  }
  return {nullptr, tried};
}

}  // namespace

std::shared_ptr<Communicator> create_mpi_communicator(const Device& device, const Options& options) {
  static const LoadedEngine loaded = load_engine();
  if (loaded.engine == nullptr) {
    throw Error(Errc::unsupported,
                format_text("xhal::comm::Communicator::create: {} needs the MPI engine {}, which cannot be loaded "
                            "({}); it is built where MPI is (Debian: libopenmpi-dev) and needs libmpi at run time",
                            device.str(), kMpiEngineFile, loaded.why.empty() ? "not built" : loaded.why));
  }
  return loaded.engine->create(device, options);
}

}  // namespace xhal::comm
