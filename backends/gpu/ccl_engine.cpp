// NCCL (cuda) or RCCL (hip) behind xhal_comm_api, from one source: RCCL implements NCCL's C API
// under the same names and values, so the differences are the library's name, the stream type and
// the device call, all from vendor_device_api.hpp. The library (libnccl.so.2, librccl.so.1) is opened
// on first use (dlopen), so the plugin loads and runs without it, and a missing library is an
// error naming it. The few declarations used are restated below from NCCL's public C API (nccl.h),
// whose values are stable across releases.
#include "ccl_engine.hpp"

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>

#include "backends/gpu/vendor_device_api.hpp"

namespace xhal::gpu {
namespace {

// --- NCCL's C API, as much as this engine uses ---
using ncclComm_t = struct ncclComm*;
struct ncclUniqueId {
  char internal[128];
};
using ncclResult_t = int;  // 0: success, 7: in progress
constexpr ncclResult_t ncclSuccess = 0, ncclInProgress = 7;
enum ncclDataType : int { ncclInt32 = 2, ncclInt64 = 4, ncclFloat16 = 6, ncclFloat32 = 7, ncclBfloat16 = 9 };
enum ncclRedOp : int { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };
static_assert(sizeof(ncclUniqueId) == XHAL_COMM_ID_BYTES, "NCCL's unique id is 128 bytes");
// The communicator configuration as NCCL 2.17 defined it (ncclConfig_v21700); later releases
// accept it by its size and version fields.
struct ncclConfig {
  size_t size = sizeof(ncclConfig);
  unsigned int magic = 0xcafebeef;
  unsigned int version = 21700;  // NCCL_VERSION(2, 17, 0)
  int blocking = INT_MIN, cgaClusterSize = INT_MIN, minCTAs = INT_MIN, maxCTAs = INT_MIN;
  const char* netName = nullptr;
  int splitShare = INT_MIN;
};

struct Nccl {
  const char* (*GetErrorString)(ncclResult_t);
  ncclResult_t (*GetUniqueId)(ncclUniqueId*);
  ncclResult_t (*CommInitRankConfig)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig*);
  ncclResult_t (*CommFinalize)(ncclComm_t);
  ncclResult_t (*CommDestroy)(ncclComm_t);
  ncclResult_t (*CommAbort)(ncclComm_t);
  ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t*);
  ncclResult_t (*AllReduce)(const void*, void*, size_t, int, int, ncclComm_t, gpuStream_t);
  ncclResult_t (*AllGather)(const void*, void*, size_t, int, ncclComm_t, gpuStream_t);
  ncclResult_t (*ReduceScatter)(const void*, void*, size_t, int, int, ncclComm_t, gpuStream_t);
  ncclResult_t (*Broadcast)(const void*, void*, size_t, int, int, ncclComm_t, gpuStream_t);
  ncclResult_t (*Send)(const void*, size_t, int, int, ncclComm_t, gpuStream_t);
  ncclResult_t (*Recv)(void*, size_t, int, int, ncclComm_t, gpuStream_t);
  ncclResult_t (*CommSplit)(ncclComm_t, int, int, ncclComm_t*, ncclConfig*);  // NULL before NCCL 2.18
  char error[256] = {};  // why loading failed, empty when loaded
};

// The library, loaded once; nullptr with `why` filled when it cannot be used.
const Nccl* nccl(const char** why) {
  static Nccl lib;
  static const bool loaded = [] {
    // Every connection a collective needs is made while a communicator is created (bounded by the
    // timeout), not lazily by its first op, which on a blocking communicator could wait on a dead
    // peer outside any timeout. A value the user set is kept.
    setenv("NCCL_RUNTIME_CONNECT", "0", 0);
    void* h = dlopen(XHAL_CCL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      std::snprintf(lib.error, sizeof lib.error,
                    XHAL_CCL_LIBRARY
                    " cannot be opened (%s); install %s or put it "
                    "on LD_LIBRARY_PATH",
                    dlerror(), XHAL_CCL_NAME);
      return false;
    }
    bool ok = true;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      if (fn == nullptr && ok) {
        std::snprintf(lib.error, sizeof lib.error, XHAL_CCL_LIBRARY " lacks %s (too old a %s?)", name, XHAL_CCL_NAME);
        ok = false;
      }
    };
    sym(lib.GetErrorString, "ncclGetErrorString");
    sym(lib.GetUniqueId, "ncclGetUniqueId");
    sym(lib.CommInitRankConfig, "ncclCommInitRankConfig");
    sym(lib.CommFinalize, "ncclCommFinalize");
    sym(lib.CommDestroy, "ncclCommDestroy");
    sym(lib.CommAbort, "ncclCommAbort");
    sym(lib.CommGetAsyncError, "ncclCommGetAsyncError");
    sym(lib.AllReduce, "ncclAllReduce");
    sym(lib.AllGather, "ncclAllGather");
    sym(lib.ReduceScatter, "ncclReduceScatter");
    sym(lib.Broadcast, "ncclBroadcast");
    sym(lib.Send, "ncclSend");
    sym(lib.Recv, "ncclRecv");
    lib.CommSplit = reinterpret_cast<decltype(lib.CommSplit)>(dlsym(h, "ncclCommSplit"));
    return ok;
  }();
  *why = lib.error;
  return loaded ? &lib : nullptr;
}

void destroy(void* comm);

// The core's log (set when the plugin initialises; nothing is logged before).
const xhal_host_api* g_host = nullptr;
void log(xhal_log_level level, const char* format, ...) __attribute__((format(printf, 2, 3)));
void log(xhal_log_level level, const char* format, ...) {
  if (g_host == nullptr || g_host->log == nullptr) return;
  char text[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  g_host->log(g_host->ctx, level, text);
}

xhal_status fail(char* msg, size_t len, xhal_status status, const char* what, const char* detail) {
  if (msg != nullptr && len > 0) std::snprintf(msg, len, "%s: %s", what, detail);
  return status;
}

xhal_status result(const Nccl* lib, ncclResult_t r, const char* what, char* msg, size_t len) {
  if (r == ncclSuccess || r == ncclInProgress) return XHAL_OK;
  return fail(msg, len, XHAL_ERR_COMM, what, lib->GetErrorString(r));
}

int nccl_type(xhal_dtype dtype) {
  switch (dtype) {
    case XHAL_DTYPE_F32: return ncclFloat32;
    case XHAL_DTYPE_F16: return ncclFloat16;
    case XHAL_DTYPE_BF16: return ncclBfloat16;
    case XHAL_DTYPE_I32: return ncclInt32;
    case XHAL_DTYPE_I64: return ncclInt64;
    default: return -1;
  }
}

int nccl_op(xhal_reduce op) {
  switch (op) {
    case XHAL_REDUCE_SUM: return ncclSum;
    case XHAL_REDUCE_PROD: return ncclProd;
    case XHAL_REDUCE_MIN: return ncclMin;
    case XHAL_REDUCE_MAX: return ncclMax;
    default: return ncclAvg;
  }
}

xhal_status make_id(void*, void* id, char* msg, size_t len) {
  const char* why = nullptr;
  const Nccl* lib = nccl(&why);
  if (lib == nullptr) return fail(msg, len, XHAL_ERR_UNSUPPORTED, XHAL_CCL_ENGINE, why);
  return result(lib, lib->GetUniqueId(static_cast<ncclUniqueId*>(id)), "ncclGetUniqueId", msg, len);
}

// Waits while a nonblocking communicator's last call is still in progress; its final state.
ncclResult_t settle(const Nccl* lib, ncclComm_t c, std::chrono::steady_clock::time_point deadline) {
  ncclResult_t state = ncclInProgress;
  while (true) {
    const ncclResult_t r = lib->CommGetAsyncError(c, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress || std::chrono::steady_clock::now() >= deadline) return state;
    std::this_thread::yield();
  }
}

// Splits a blocking communicator off `parent` (same ranks) into *child within `deadline`. Ops on a
// blocking communicator are enqueued directly: on a nonblocking one every op goes through the
// library's asynchronous path, which cost 60-150 us per op below 16 MiB on two H200s. The split
// runs in the library's background (the parent is nonblocking) and writes *child only once it is
// complete, so that pointer is what is polled. On failure the parent is unusable too.
ncclResult_t split_blocking(const Nccl* lib, ncclComm_t parent, int32_t rank,
                            std::chrono::steady_clock::time_point deadline, ncclComm_t* child) {
  ncclConfig config;
  config.blocking = 1;
  *child = nullptr;
  const ncclResult_t r = lib->CommSplit(parent, 0, rank, child, &config);
  if (r != ncclSuccess && r != ncclInProgress) return r;
  const std::atomic_ref<ncclComm_t> made(*child);
  while (made.load(std::memory_order_acquire) == nullptr) {
    ncclResult_t state = ncclInProgress;
    if (const ncclResult_t q = lib->CommGetAsyncError(parent, &state); q != ncclSuccess) return q;
    if (state != ncclSuccess && state != ncclInProgress) return state;
    if (std::chrono::steady_clock::now() >= deadline) return ncclInProgress;
    std::this_thread::yield();
  }
  return settle(lib, *child, deadline);
}

// Nonblocking init, polled up to timeout_ms: a rank that never joins is a timeout, not a hang.
// Then, once every rank is in, the blocking communicator that ops use (split_blocking); with a
// library that has no ncclCommSplit (NCCL before 2.18) the nonblocking one serves, slower for
// small messages.
xhal_status create(void*, int32_t device, const void* id, int32_t rank, int32_t size, int64_t timeout_ms, void** comm,
                   char* msg, size_t len) {
  const char* why = nullptr;
  const Nccl* lib = nccl(&why);
  if (lib == nullptr) return fail(msg, len, XHAL_ERR_UNSUPPORTED, XHAL_CCL_ENGINE, why);
  if (gpuSetDevice(device) != gpuSuccess) return fail(msg, len, XHAL_ERR_DEVICE, "set device", "failed");
  ncclUniqueId uid;
  std::memcpy(&uid, id, sizeof uid);
  ncclConfig config;
  config.blocking = 0;
  ncclComm_t c = nullptr;
  const ncclResult_t r = lib->CommInitRankConfig(&c, size, uid, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) return result(lib, r, "ncclCommInitRankConfig", msg, len);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // A step that did not complete: the half-made communicators are aborted and the step named.
  auto give_up = [&](ncclResult_t state, const char* step, ncclComm_t other) {
    lib->CommAbort(c);
    if (other != nullptr) lib->CommAbort(other);
    if (state != ncclInProgress) return result(lib, state, step, msg, len);
    char detail[160];
    std::snprintf(detail, sizeof detail, "not all %d ranks joined within %lld ms", size,
                  static_cast<long long>(timeout_ms));
    return fail(msg, len, XHAL_ERR_TIMEOUT, step, detail);
  };
  if (const ncclResult_t state = settle(lib, c, deadline); state != ncclSuccess) {
    return give_up(state, "ncclCommInitRankConfig", nullptr);
  }
  if (lib->CommSplit == nullptr) {
    log(XHAL_LOG_WARN, "%s: %s has no ncclCommSplit: ops use a nonblocking communicator (slower for small messages)",
        XHAL_CCL_ENGINE, XHAL_CCL_LIBRARY);
  } else {
    ncclComm_t blocking = nullptr;
    if (const ncclResult_t state = split_blocking(lib, c, rank, deadline, &blocking); state != ncclSuccess) {
      return give_up(state, "ncclCommSplit", blocking);
    }
    destroy(c);
    c = blocking;
  }
  *comm = c;
  return XHAL_OK;
}

xhal_status enqueue(void* comm, xhal_comm_op op, const void* in, void* out, size_t count, xhal_dtype dtype,
                    xhal_reduce reduce, int32_t peer, void* stream, char* msg, size_t len) {
  const char* why = nullptr;
  const Nccl* lib = nccl(&why);
  auto c = static_cast<ncclComm_t>(comm);
  auto s = static_cast<gpuStream_t>(stream);
  const int t = nccl_type(dtype);
  if (t < 0) return fail(msg, len, XHAL_ERR_UNSUPPORTED, XHAL_CCL_ENGINE, "dtype not supported");
  // On a nonblocking communicator a call may return while NCCL still enqueues it: wait for that
  // (briefly; the op itself runs on the stream) so what the caller records after it follows it.
  auto enqueued = [&](ncclResult_t r, const char* what) {
    if (r == ncclInProgress) r = settle(lib, c, std::chrono::steady_clock::now() + std::chrono::seconds(60));
    if (r == ncclInProgress) return fail(msg, len, XHAL_ERR_TIMEOUT, what, "still being enqueued after 60 s");
    return result(lib, r, what, msg, len);
  };
  switch (op) {
    case XHAL_COMM_ALL_REDUCE:
      return enqueued(lib->AllReduce(in, out, count, t, nccl_op(reduce), c, s), "ncclAllReduce");
    case XHAL_COMM_ALL_GATHER: return enqueued(lib->AllGather(in, out, count, t, c, s), "ncclAllGather");
    case XHAL_COMM_REDUCE_SCATTER:
      return enqueued(lib->ReduceScatter(in, out, count, t, nccl_op(reduce), c, s), "ncclReduceScatter");
    case XHAL_COMM_BROADCAST: return enqueued(lib->Broadcast(in, out, count, t, peer, c, s), "ncclBroadcast");
    case XHAL_COMM_SEND: return enqueued(lib->Send(in, count, t, peer, c, s), "ncclSend");
    case XHAL_COMM_RECV: return enqueued(lib->Recv(out, count, t, peer, c, s), "ncclRecv");
  }
  return fail(msg, len, XHAL_ERR_INVALID_ARGUMENT, XHAL_CCL_ENGINE, "unknown op");
}

xhal_status check(void* comm, char* msg, size_t len) {
  const char* why = nullptr;
  const Nccl* lib = nccl(&why);
  ncclResult_t async = ncclSuccess;
  const ncclResult_t r = lib->CommGetAsyncError(static_cast<ncclComm_t>(comm), &async);
  if (r != ncclSuccess) return result(lib, r, "ncclCommGetAsyncError", msg, len);
  return result(lib, async, "NCCL asynchronous error", msg, len);
}

void abort_comm(void* comm) {
  const char* why = nullptr;
  if (const Nccl* lib = nccl(&why)) lib->CommAbort(static_cast<ncclComm_t>(comm));
}

// A nonblocking communicator is finalised (its work flushed) before it is destroyed.
void destroy(void* comm) {
  const char* why = nullptr;
  if (const Nccl* lib = nccl(&why)) {
    auto c = static_cast<ncclComm_t>(comm);
    if (lib->CommFinalize(c) == ncclInProgress)
      settle(lib, c, std::chrono::steady_clock::now() + std::chrono::seconds(60));
    lib->CommDestroy(c);
  }
}

}  // namespace

const xhal_comm_api* ccl_comm_api(const xhal_host_api* host) {
  g_host = host;
  static const xhal_comm_api api{
      sizeof(xhal_comm_api), XHAL_CCL_ENGINE, nullptr, make_id, create, enqueue, check, abort_comm, destroy};
  return &api;
}

}  // namespace xhal::gpu
