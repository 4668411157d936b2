/* The backend plugin ABI: what libxhal_<backend>.so exports and what the core hands to it.
 *
 * A plugin exports one symbol, xhal_plugin_init. The core passes a filled xhal_host_api and an
 * xhal_plugin_api whose struct_size says how much the core can read; the plugin checks
 * host->abi_version, fills the table and registers its kernels through host->register_kernel.
 * Every function returns an xhal_status; after a failure, last_error() describes it (per thread).
 * Members marked (optional) may be left NULL. All functions must be thread-safe.
 * Tensors cross the boundary as DLPack DLTensor (strides in elements, never NULL here).
 */
#ifndef XHAL_PLUGIN_H
#define XHAL_PLUGIN_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#include "xhal/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XHAL_PLUGIN_ABI_VERSION 1
#define XHAL_PLUGIN_ENTRY "xhal_plugin_init"

typedef enum xhal_dtype {
  XHAL_DTYPE_F32 = 0,
  XHAL_DTYPE_F16 = 1,
  XHAL_DTYPE_BF16 = 2,
  XHAL_DTYPE_F64 = 3,
  XHAL_DTYPE_I32 = 4,
  XHAL_DTYPE_I64 = 5,
  XHAL_DTYPE_COUNT = 6
} xhal_dtype;

typedef enum xhal_op {
  XHAL_OP_ATTENTION = 0,
  XHAL_OP_ATTENTION_VARLEN = 1,
  XHAL_OP_PAGED_ATTENTION = 2,
  XHAL_OP_RMS_NORM = 3,
  XHAL_OP_FUSED_ADD_RMS_NORM = 4,
  XHAL_OP_SWIGLU = 5,
  XHAL_OP_SWIGLU_PACKED = 6,
  XHAL_OP_ROPE = 7,
  XHAL_OP_LINEAR = 8,
  XHAL_OP_COUNT = 9
} xhal_op;

/* Tensor slots of xhal_op_call.t, per op. Absent optional tensors are NULL. */
enum {
  /* attention, attention_varlen, paged_attention */
  XHAL_SLOT_Q = 0, XHAL_SLOT_K = 1, XHAL_SLOT_V = 2, XHAL_SLOT_OUT = 3, XHAL_SLOT_LSE = 4,
  XHAL_SLOT_CU_SEQLENS_Q = 5, XHAL_SLOT_CU_SEQLENS_K = 6, /* attention_varlen */
  XHAL_SLOT_BLOCK_TABLE = 5, XHAL_SLOT_SEQ_LENS = 6,       /* paged_attention (K, V = caches) */
  /* rms_norm, fused_add_rms_norm: x, weight, out, residual (in/out) */
  XHAL_SLOT_X = 0, XHAL_SLOT_WEIGHT = 1, XHAL_SLOT_NORM_OUT = 2, XHAL_SLOT_RESIDUAL = 3,
  /* swiglu: gate, up, out; swiglu_packed: x (slot 0), out */
  XHAL_SLOT_GATE = 0, XHAL_SLOT_UP = 1, XHAL_SLOT_ACT_OUT = 2,
  /* rope: q, k (in place), positions, cos_sin_cache */
  XHAL_SLOT_ROPE_Q = 0, XHAL_SLOT_ROPE_K = 1, XHAL_SLOT_POSITIONS = 2, XHAL_SLOT_COS_SIN = 3,
  /* linear: x, w, bias, out */
  XHAL_SLOT_LINEAR_X = 0, XHAL_SLOT_LINEAR_W = 1, XHAL_SLOT_BIAS = 2, XHAL_SLOT_LINEAR_OUT = 3,
  XHAL_MAX_OP_TENSORS = 8
};

typedef struct xhal_op_params {
  float scale;          /* attention: softmax scale (already defaulted to 1/sqrt(D)) */
  int32_t causal;       /* attention: bottom-right aligned causal mask */
  int64_t window_left;  /* attention: -1 = unbounded */
  int64_t window_right; /* attention: -1 = unbounded */
  float softcap;        /* attention: 0 = off */
  int64_t max_seqlen_q, max_seqlen_k; /* attention_varlen */
  float eps;            /* rms_norm */
  int32_t rope_neox;    /* rope: 1 = rotate halves (neox), 0 = interleaved pairs (gptj) */
} xhal_op_params;

struct xhal_host_api;

typedef struct xhal_op_call {
  xhal_op op;
  xhal_dtype dtype;     /* the compute dtype shared by the op's float inputs */
  int32_t device_index;
  void* stream;         /* native stream; NULL = the backend's default stream */
  const DLTensor* t[XHAL_MAX_OP_TENSORS];
  xhal_op_params params;
  const struct xhal_host_api* host; /* for scratch memory */
} xhal_op_call;

/* A kernel. supports() returns NULL when it can run the call, else a static reason string.
 * run() assumes arguments were validated by the core (shapes, dtypes, devices, strides); it may
 * still refuse data-dependent errors (e.g. a block index out of range) with a status and message. */
typedef struct xhal_kernel_desc {
  uint32_t struct_size;
  const char* name;
  xhal_op op;
  xhal_dtype dtype;
  int32_t priority;      /* highest supported priority wins */
  int32_t is_reference;  /* the backend's reference implementation (XHAL_FORCE_REFERENCE) */
  double rtol, atol;     /* accuracy class: |out - exact| <= atol + rtol*|exact| vs float64 */
  const char* (*supports)(const xhal_op_call* call);               /* (optional) */
  xhal_status (*run)(const xhal_op_call* call, char* msg, size_t msg_len);
} xhal_kernel_desc;

typedef struct xhal_host_api {
  uint32_t abi_version;
  uint32_t struct_size;
  void* ctx;
  xhal_status (*register_kernel)(void* ctx, const xhal_kernel_desc* desc);
  void (*log)(void* ctx, int level, const char* msg); /* level: 0 debug, 1 info, 2 warn, 3 error */
  /* Scratch memory from the core's caching allocator of (backend, device), ordered on stream. */
  xhal_status (*scratch_alloc)(void* ctx, int32_t device, size_t bytes, void* stream, void** ptr);
  void (*scratch_free)(void* ctx, int32_t device, void* ptr);
} xhal_host_api;

typedef enum xhal_copy_kind {
  XHAL_COPY_HOST_TO_DEVICE = 0,
  XHAL_COPY_DEVICE_TO_HOST = 1,
  XHAL_COPY_DEVICE_TO_DEVICE = 2
} xhal_copy_kind;

typedef struct xhal_device_props {
  char name[128];
  char arch[32];          /* "sm_90", "gfx90a", "avx512", ... */
  uint64_t total_memory;  /* bytes */
  int32_t compute_units;  /* SMs, CUs, or CPU cores */
  int32_t warp_size;      /* 32 on NVIDIA, 64 on AMD, SIMD lanes of f32 on CPU */
} xhal_device_props;

/* Collectives of a backend's vendor library (NCCL, RCCL), used by xhal::comm. */
typedef enum xhal_comm_op {
  XHAL_COMM_ALL_REDUCE = 0,
  XHAL_COMM_ALL_GATHER = 1,     /* count: elements per rank (of in) */
  XHAL_COMM_REDUCE_SCATTER = 2, /* count: elements per rank (of out) */
  XHAL_COMM_BROADCAST = 3,      /* peer: the root */
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
  /* Each failure writes a message naming the vendor call to msg[len]. */
  xhal_status (*make_id)(void* id, char* msg, size_t len);
  /* Gives up with XHAL_ERR_TIMEOUT when the other ranks have not joined within timeout_ms. */
  xhal_status (*create)(int32_t device, const void* id, int32_t rank, int32_t size, int64_t timeout_ms,
                        void** comm, char* msg, size_t len);
  /* Enqueues one op on `stream` (never waits for it). */
  xhal_status (*enqueue)(void* comm, xhal_comm_op op, const void* in, void* out, size_t count,
                         xhal_dtype dtype, xhal_reduce reduce, int32_t peer, void* stream, char* msg,
                         size_t len);
  /* XHAL_OK while healthy; the engine's asynchronous error (a failed peer, ...) once it has one. */
  xhal_status (*check)(void* comm, char* msg, size_t len);
  void (*abort)(void* comm);   /* returns without waiting for peers; frees comm */
  void (*destroy)(void* comm); /* after its ops completed; frees comm */
} xhal_comm_api;

typedef struct xhal_plugin_api {
  uint32_t abi_version;   /* the plugin's XHAL_PLUGIN_ABI_VERSION */
  uint32_t struct_size;   /* set by the core before init: sizeof its xhal_plugin_api */
  const char* backend;    /* "cpu", "cuda", "hip" or "ze" */
  const char* version;    /* plugin and vendor runtime versions, free text */
  int32_t dlpack_device_type;

  /* Never fails: a missing driver means 0 and a reason written to reason[len]. */
  int32_t (*device_count)(char* reason, size_t len);
  xhal_status (*device_props)(int32_t device, xhal_device_props* props);
  xhal_status (*mem_get_info)(int32_t device, size_t* free_bytes, size_t* total_bytes);
  /* Out of memory is XHAL_ERR_OUT_OF_MEMORY, never a crash. */
  xhal_status (*malloc)(int32_t device, size_t bytes, void** ptr);
  xhal_status (*free)(int32_t device, void* ptr);
  xhal_status (*memcpy)(int32_t device, void* dst, const void* src, size_t bytes,
                        xhal_copy_kind kind, void* stream);
  xhal_status (*stream_create)(int32_t device, void** stream);
  xhal_status (*stream_destroy)(int32_t device, void* stream);
  xhal_status (*stream_synchronize)(int32_t device, void* stream);
  xhal_status (*device_synchronize)(int32_t device);
  /* Events; a NULL event is always complete (synchronous backends may return NULL). */
  xhal_status (*event_create)(int32_t device, void** event);
  xhal_status (*event_destroy)(int32_t device, void* event);
  xhal_status (*event_record)(int32_t device, void* event, void* stream);
  xhal_status (*event_query)(int32_t device, void* event); /* XHAL_OK or XHAL_NOT_READY */
  xhal_status (*event_synchronize)(int32_t device, void* event);
  xhal_status (*stream_wait_event)(int32_t device, void* stream, void* event);
  const char* (*last_error)(void);
  void (*shutdown)(void); /* (optional) called once at process exit */
  const xhal_comm_api* comm; /* (optional) collectives; NULL when the backend has none */
  /* (optional) Timing, for the trace's device time: an event that records when the stream reached
   * it (destroyed with event_destroy, recorded with event_record), and the milliseconds between two
   * completed ones. Members from here on are read only when the plugin's struct_size covers them. */
  xhal_status (*timed_event_create)(int32_t device, void** event);
  xhal_status (*event_elapsed_ms)(int32_t device, void* start, void* end, float* ms);
} xhal_plugin_api;

/* The table's size up to its last member every plugin of this ABI version has. */
#define XHAL_PLUGIN_API_MIN_SIZE offsetof(xhal_plugin_api, timed_event_create)

typedef xhal_status (*xhal_plugin_init_fn)(const xhal_host_api* host, xhal_plugin_api* api,
                                           char* reason, size_t reason_len);

#ifdef __cplusplus
}
#endif
#endif
