#include "comm/bootstrap.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/text_format.hpp"
#include <unistd.h>

#include "comm/engines.hpp"
#include "core/env.hpp"
#include "xhal/error.hpp"

namespace xhal::comm {
namespace {

constexpr const char* kWho = "xhal::comm::Communicator::create";

bool under_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr; }

int env_int(env::Var var) {
  try {
    const auto v = env::integer(var);  // the table bounds it to int's range
    return v ? int(*v) : -1;
  } catch (const Error& e) {
    throw Error(e.code(), format_text("{}: {}", kWho, e.what()));
  }
}

// Why `path` cannot serve as the store on any rank (its directory is missing, or it is a directory),
// or "" when it can: failing at once beats every rank waiting out its timeout.
std::string unusable_store(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (!fs::is_directory(dir, ec)) return format_text("its directory {} does not exist", dir.string());
  if (fs::is_directory(path, ec)) return "it is a directory; expected a file path";
  return "";
}

void share_by_file(std::vector<unsigned char>& bytes, const std::string& path, const RankAndSize& who,
                   std::chrono::milliseconds timeout) {
  namespace fs = std::filesystem;
  if (const std::string why = unusable_store(path); !why.empty()) {
    throw Error(Errc::invalid_argument, format_text("{}: XHAL_STORE=file:{} cannot be used: {}", kWho, path, why));
  }
  if (who.rank == 0) {
    // Written whole under another name, then renamed: readers never see a partial id.
    const std::string tmp = format_text("{}.tmp{}", path, getpid());
    std::error_code ec;
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
      if (!out) {
        fs::remove(tmp, ec);
        throw Error(Errc::invalid_argument, format_text("{}: XHAL_STORE: cannot write {}", kWho, tmp));
      }
    }
    fs::rename(tmp, path, ec);
    if (ec) {
      const std::string why = ec.message();
      fs::remove(tmp, ec);
      throw Error(Errc::invalid_argument, format_text("{}: XHAL_STORE: cannot create {}: {}", kWho, path, why));
    }
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::error_code ec;
    if (fs::exists(path, ec) && fs::file_size(path, ec) == bytes.size()) {
      std::ifstream in(path, std::ios::binary);
      in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()));
      if (in) return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Error(Errc::timeout,
                  format_text("{}: rank {} waited {} ms for rank 0's id in XHAL_STORE file {} (is rank 0 "
                              "running, with the same XHAL_STORE?)",
                              kWho, who.rank, timeout.count(), path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

RankAndSize requested_rank_and_size(const Options& options) {
  return {options.rank >= 0 ? options.rank : env_int(env::Var::rank),
          options.world_size >= 0 ? options.world_size : env_int(env::Var::world_size)};
}

RankAndSize resolve_rank_and_size(const Options& options) {
  auto [rank, size] = requested_rank_and_size(options);
  if ((rank < 0 || size < 0) && under_mpirun()) {
    auto world = create_mpi_communicator(Device::cpu(), options);
    if (rank < 0) rank = world->rank();
    if (size < 0) size = world->size();
  }
  if (rank < 0 || size < 0) {
    throw Error(Errc::invalid_argument,
                format_text("{}: no {}: set Options::rank and Options::world_size, or RANK and WORLD_SIZE, or launch "
                            "under mpirun",
                            kWho, rank < 0 ? "rank" : "world size"));
  }
  if (size < 1 || rank >= size) {
    throw Error(Errc::invalid_argument, format_text("{}: rank {} is not in [0, world size {})", kWho, rank, size));
  }
  return {rank, size};
}

void share_from_rank0(std::vector<unsigned char>& bytes, const RankAndSize& who, std::chrono::milliseconds timeout) {
  if (who.size == 1) return;
  if (const auto store = env::value(env::Var::store)) {
    if (const auto bad = env::problem(env::Var::store, *store)) {
      throw Error(Errc::invalid_argument, format_text("{}: {}", kWho, *bad));
    }
    share_by_file(bytes, env::trim(store->substr(5)), who, timeout);  // after "file:"
    return;
  }
  if (!under_mpirun()) {
    throw Error(Errc::invalid_argument,
                format_text("{}: rank 0's id has no way to the other ranks: set XHAL_STORE=file:<path> (a path all "
                            "ranks see, fresh for each job) or launch under mpirun",
                            kWho));
  }
  Options o;
  o.timeout = timeout;
  auto world = create_mpi_communicator(Device::cpu(), o);
  std::vector<int32_t> words((bytes.size() + 3) / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  const TensorView v(words.data(), DType::i32, {int64_t(words.size())});
  world->broadcast(v, v, 0).wait(timeout);
  std::memcpy(bytes.data(), words.data(), bytes.size());
}

}  // namespace xhal::comm
