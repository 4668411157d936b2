/* The backend plugin ABI, version 2: what libxhal_<name>.so exports and what the core hands to it.
 *
 * A plugin exports two symbols. xhal_plugin_abi_version() returns XHAL_PLUGIN_ABI_VERSION; the core
 * reads it first and refuses a plugin of another version without initialising it. Then
 * xhal_plugin_init(host, api, msg, msg_len) fills the table (api->struct_size says how much the
 * core can read) and registers kernels through host->register_kernel.
 *
 * Conventions, the same for every member:
 * - The first argument is the context the other side gave: `self` (the plugin instance the plugin
 *   set in its table), `ctx` (the host's, or a kernel's own from its descriptor).
 * - A member that can fail returns xhal_status and, on failure, writes a NUL-terminated message to
 *   msg[msg_len] (the caller's buffer, at least 256 bytes). There is no thread-local error state.
 * - Members marked (optional) may be NULL. Every member must be thread-safe.
 * - Tensors cross as DLPack DLTensors with strides in elements, never NULL strides.
 * - Structs start with struct_size and only ever grow at their end: a reader uses a member only
 *   when the writer's struct_size covers it.
 */
#ifndef XHAL_PLUGIN_H
#define XHAL_PLUGIN_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#include "xhal/op_table.h"
#include "xhal/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XHAL_PLUGIN_ABI_VERSION 2
#define XHAL_PLUGIN_ENTRY "xhal_plugin_init"
#define XHAL_PLUGIN_ABI_ENTRY "xhal_plugin_abi_version"

/* Codes are fixed. Kernels register for the codes below XHAL_DTYPE_COUNT and for F8_E4M3, F8_E5M2
 * and I8, which key the calls whose storage type decides the kernel (an fp8 KV cache); U8 keys
 * none. */
typedef enum xhal_dtype {
  XHAL_DTYPE_F32 = 0,
  XHAL_DTYPE_F16 = 1,
  XHAL_DTYPE_BF16 = 2,
  XHAL_DTYPE_F64 = 3,
  XHAL_DTYPE_I32 = 4,
  XHAL_DTYPE_I64 = 5,
  XHAL_DTYPE_COUNT = 6,
  XHAL_DTYPE_F8_E4M3 = 16,
  XHAL_DTYPE_F8_E5M2 = 17,
  XHAL_DTYPE_I8 = 18,
  XHAL_DTYPE_U8 = 19
} xhal_dtype;

struct xhal_host_api;

/* One op call, validated by the core (shapes, dtypes, devices, strides, aliasing). */
typedef struct xhal_op_call {
  uint32_t struct_size;
  xhal_op op;
  xhal_dtype dtype; /* the compute dtype shared by the op's float inputs */
  int32_t device; /* index on the plugin's backend */
  void* stream; /* native stream; NULL = the backend's default stream */
  uint32_t num_tensors; /* slots in `tensors`: the op's highest slot + 1 (op_table.h) */
  const DLTensor* const* tensors; /* indexed by the op's slot constants; absent ones NULL */
  const void* params; /* the op's parameter struct (op_table.h), NULL for ops without one */
  const struct xhal_host_api* host; /* scratch memory, logging */
  uint32_t flags; /* XHAL_CALL_* bits; read only when struct_size covers it */
} xhal_op_call;

/* xhal_op_call.flags */
enum {
  /* Deterministic mode (XHAL_DETERMINISTIC): the kernel must give bitwise-identical results run to
   * run for the same inputs and device; one that cannot (atomics, a split whose order depends on
   * timing) refuses the call from supports() so that the next kernel runs, or none. */
  XHAL_CALL_DETERMINISTIC = 1u << 0
};

typedef xhal_status (*xhal_kernel_run_fn)(void* ctx, const xhal_op_call* call, char* msg, size_t msg_len);
typedef const char* (*xhal_kernel_supports_fn)(void* ctx, const xhal_op_call* call);

/* A kernel. supports() returns NULL when it can run the call, else a static reason string.
 * run() assumes the core validated the arguments; it may still refuse data-dependent errors (a
 * block index out of range) with a status and message. The core copies the descriptor. */
typedef struct xhal_kernel_desc {
  uint32_t struct_size;
  const char* name; /* "<backend>.<kernel>", unique per (op, dtype) */
  xhal_op op;
  xhal_dtype dtype;
  int32_t priority; /* highest supported priority wins */
  int32_t is_reference; /* the backend's reference implementation (XHAL_FORCE_REFERENCE) */
  double rtol, atol; /* accuracy class: |out - exact| <= atol + rtol*|exact| vs float64 */
  void* ctx; /* passed to supports() and run() */
  xhal_kernel_supports_fn supports; /* (optional) */
  xhal_kernel_run_fn run;
} xhal_kernel_desc;

typedef enum xhal_log_level {
  XHAL_LOG_DEBUG = 0,
  XHAL_LOG_INFO = 1,
  XHAL_LOG_WARN = 2,
  XHAL_LOG_ERROR = 3
} xhal_log_level;

/* What the core offers a plugin; valid from init until process exit. */
typedef struct xhal_host_api {
  uint32_t struct_size;
  uint32_t abi_version;
  void* ctx;
  xhal_status (*register_kernel)(void* ctx, const xhal_kernel_desc* desc, char* msg, size_t msg_len);
  void (*log)(void* ctx, xhal_log_level level, const char* text);
  /* Scratch memory from the core's caching allocator of (backend, device), ordered on stream. */
  xhal_status (*scratch_alloc)(void* ctx, int32_t device, size_t bytes, void* stream, void** ptr, char* msg,
                               size_t msg_len);
  void (*scratch_free)(void* ctx, int32_t device, void* ptr);
  /* Runs another call on this plugin's backend through the core's kernel choice (a kernel that
   * rewrites its call, such as one dequantizing an fp8 cache, hands the rest to the best kernel of
   * the compute dtype). The call is not validated again: the caller builds it from a valid one.
   * Read only when struct_size covers it (cores before it lack the member). */
  xhal_status (*dispatch)(void* ctx, const xhal_op_call* call, char* msg, size_t msg_len);
} xhal_host_api;

typedef enum xhal_copy_kind {
  XHAL_COPY_HOST_TO_DEVICE = 0,
  XHAL_COPY_DEVICE_TO_HOST = 1,
  XHAL_COPY_DEVICE_TO_DEVICE = 2
} xhal_copy_kind;

/* Device properties, read through query_int and query_text. A key the plugin does not know
 * returns XHAL_ERR_UNSUPPORTED; new keys are appended. */
typedef enum xhal_query {
  XHAL_QUERY_NAME = 0, /* text: "NVIDIA H100 80GB HBM3" */
  XHAL_QUERY_ARCH = 1, /* text: "sm_90", "gfx90a", "avx512" */
  XHAL_QUERY_TOTAL_MEMORY = 2, /* bytes */
  XHAL_QUERY_COMPUTE_UNITS = 3, /* SMs, CUs, or CPU cores */
  XHAL_QUERY_WARP_SIZE = 4 /* 32 on NVIDIA, 64 on AMD, SIMD lanes of f32 on CPU */
} xhal_query;

/* Collectives of a backend's vendor library (NCCL, RCCL), used by xhal::comm. */
typedef enum xhal_comm_op {
  XHAL_COMM_ALL_REDUCE = 0,
  XHAL_COMM_ALL_GATHER = 1, /* count: elements per rank (of in) */
  XHAL_COMM_REDUCE_SCATTER = 2, /* count: elements per rank (of out) */
  XHAL_COMM_BROADCAST = 3, /* peer: the root */
  XHAL_COMM_SEND = 4,
  XHAL_COMM_RECV = 5
} xhal_comm_op;

typedef enum xhal_reduce {
  XHAL_REDUCE_SUM = 0,
  XHAL_REDUCE_PROD = 1,
  XHAL_REDUCE_MIN = 2,
  XHAL_REDUCE_MAX = 3,
  XHAL_REDUCE_AVG = 4
} xhal_reduce;

#define XHAL_COMM_ID_BYTES 128 /* the bootstrap id rank 0 makes and the core hands to every rank */

typedef struct xhal_comm_api {
  uint32_t struct_size;
  const char* engine; /* "nccl", "rccl" */
  void* self; /* the engine instance, the first argument of make_id and create */
  /* Each failure writes a message naming the vendor call to msg[len]; the handle `comm` is the
   * context of the members that take one. */
  xhal_status (*make_id)(void* self, void* id, char* msg, size_t len);
  /* Gives up with XHAL_ERR_TIMEOUT when the other ranks have not joined within timeout_ms. */
  xhal_status (*create)(void* self, int32_t device, const void* id, int32_t rank, int32_t size, int64_t timeout_ms,
                        void** comm, char* msg, size_t len);
  /* Enqueues one op on `stream` (never waits for it). */
  xhal_status (*enqueue)(void* comm, xhal_comm_op op, const void* in, void* out, size_t count, xhal_dtype dtype,
                         xhal_reduce reduce, int32_t peer, void* stream, char* msg, size_t len);
  /* XHAL_OK while healthy; the engine's asynchronous error (a failed peer, ...) once it has one. */
  xhal_status (*check)(void* comm, char* msg, size_t len);
  void (*abort)(void* comm); /* returns without waiting for peers; frees comm */
  void (*destroy)(void* comm); /* after its ops completed; frees comm */
} xhal_comm_api;

typedef struct xhal_plugin_api {
  uint32_t struct_size; /* set by the core before init: sizeof its xhal_plugin_api */
  uint32_t abi_version; /* the plugin's XHAL_PLUGIN_ABI_VERSION */
  void* self; /* the plugin instance, the first argument of every member */
  const char* backend; /* the backend it registers: its file's <name>, [a-z][a-z0-9_]{0,31} */
  const char* version; /* plugin and vendor runtime versions, free text */
  int32_t dlpack_device_type; /* DLDeviceType of its memory (kDLExtDev or a vendor's own code) */

  /* Never fails: a missing driver means 0 and a reason written to msg. */
  int32_t (*device_count)(void* self, char* msg, size_t msg_len);
  xhal_status (*query_int)(void* self, int32_t device, xhal_query key, int64_t* value, char* msg, size_t msg_len);
  xhal_status (*query_text)(void* self, int32_t device, xhal_query key, char* value, size_t value_len, char* msg,
                            size_t msg_len);
  xhal_status (*mem_info)(void* self, int32_t device, size_t* free_bytes, size_t* total_bytes, char* msg,
                          size_t msg_len);
  /* Running out of memory is XHAL_ERR_OUT_OF_MEMORY, never a crash. */
  xhal_status (*mem_alloc)(void* self, int32_t device, size_t bytes, void** ptr, char* msg, size_t msg_len);
  xhal_status (*mem_release)(void* self, int32_t device, void* ptr, char* msg, size_t msg_len);
  xhal_status (*mem_copy)(void* self, int32_t device, void* dst, const void* src, size_t bytes, xhal_copy_kind kind,
                          void* stream, char* msg, size_t msg_len);
  xhal_status (*stream_create)(void* self, int32_t device, void** stream, char* msg, size_t msg_len);
  xhal_status (*stream_destroy)(void* self, int32_t device, void* stream, char* msg, size_t msg_len);
  xhal_status (*stream_synchronize)(void* self, int32_t device, void* stream, char* msg, size_t msg_len);
  xhal_status (*device_synchronize)(void* self, int32_t device, char* msg, size_t msg_len);
  /* Events; a NULL event is always complete (synchronous backends may return NULL). */
  xhal_status (*event_create)(void* self, int32_t device, void** event, char* msg, size_t msg_len);
  xhal_status (*event_destroy)(void* self, int32_t device, void* event, char* msg, size_t msg_len);
  xhal_status (*event_record)(void* self, int32_t device, void* event, void* stream, char* msg, size_t msg_len);
  /* XHAL_OK when complete, XHAL_NOT_READY while work is queued. */
  xhal_status (*event_query)(void* self, int32_t device, void* event, char* msg, size_t msg_len);
  xhal_status (*event_synchronize)(void* self, int32_t device, void* event, char* msg, size_t msg_len);
  xhal_status (*stream_wait_event)(void* self, int32_t device, void* stream, void* event, char* msg, size_t msg_len);
  /* (optional) Timing, for the trace's device time: an event that records when the stream reached
   * it (destroyed with event_destroy, recorded with event_record), and the milliseconds between two
   * completed ones. */
  xhal_status (*timed_event_create)(void* self, int32_t device, void** event, char* msg, size_t msg_len);
  xhal_status (*event_elapsed_ms)(void* self, int32_t device, void* start, void* end, float* ms, char* msg,
                                  size_t msg_len);
  void (*shutdown)(void* self); /* (optional) called once at process exit */
  const xhal_comm_api* comm; /* (optional) collectives; NULL when the backend has none */
} xhal_plugin_api;

/* The table's size up to its last member every plugin of this ABI version has. */
#define XHAL_PLUGIN_API_MIN_SIZE (offsetof(xhal_plugin_api, comm) + sizeof(void*))

/* Defines xhal_plugin_abi_version(); a plugin writes XHAL_PLUGIN_DEFINE_ABI_VERSION() once, at file
 * scope, beside its xhal_plugin_init. */
#ifdef __cplusplus
#define XHAL_PLUGIN_EXTERN_C extern "C"
#else
#define XHAL_PLUGIN_EXTERN_C
#endif
#define XHAL_PLUGIN_DEFINE_ABI_VERSION()                                                               \
  XHAL_PLUGIN_EXTERN_C __attribute__((visibility("default"))) uint32_t xhal_plugin_abi_version(void) { \
    return XHAL_PLUGIN_ABI_VERSION;                                                                    \
  }

typedef uint32_t (*xhal_plugin_abi_version_fn)(void);
typedef xhal_status (*xhal_plugin_init_fn)(const xhal_host_api* host, xhal_plugin_api* api, char* msg, size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif
