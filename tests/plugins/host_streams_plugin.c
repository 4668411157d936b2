/* A host-memory backend with real stream and event handles, for the stress test: streams are
 * distinct tokens, and an event reports XHAL_NOT_READY to its first query after each record, so
 * the caching allocator's cross-stream reuse path (a freed block waits for its event) and the
 * trace's deferred device time run. Timed events keep the host clock at record. It claims the ze
 * backend and has one kernel, a plain f32 rms_norm. */
#include <math.h>
#include <stdatomic.h>
#include <time.h>

#include "test_plugin_support.h"

typedef struct {
  atomic_int pending_queries;
  atomic_llong recorded_ns;
} host_event;

static xhal_status make_stream(void* self, int32_t device, void** stream, char* msg, size_t len) {
  (void)self, (void)device, (void)msg, (void)len;
  *stream = malloc(1);
  return *stream ? XHAL_OK : XHAL_ERR_OUT_OF_MEMORY;
}
static xhal_status destroy_handle(void* self, int32_t device, void* handle, char* msg, size_t len) {
  (void)self, (void)device, (void)msg, (void)len;
  free(handle);
  return XHAL_OK;
}
static xhal_status make_event(void* self, int32_t device, void** event, char* msg, size_t len) {
  (void)self, (void)device, (void)msg, (void)len;
  host_event* e = malloc(sizeof *e);
  if (!e) return XHAL_ERR_OUT_OF_MEMORY;
  atomic_init(&e->pending_queries, 0);
  atomic_init(&e->recorded_ns, 0);
  *event = e;
  return XHAL_OK;
}
static xhal_status record(void* self, int32_t device, void* event, void* stream, char* msg, size_t len) {
  (void)self, (void)device, (void)msg, (void)len;
  (void)stream;
  if (event) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    atomic_store(&((host_event*)event)->recorded_ns, (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
    atomic_store(&((host_event*)event)->pending_queries, 1);
  }
  return XHAL_OK;
}
static xhal_status elapsed_ms(void* self, int32_t device, void* start, void* end, float* ms, char* msg, size_t len) {
  (void)self, (void)device, (void)msg, (void)len;
  *ms = (float)(atomic_load(&((host_event*)end)->recorded_ns) - atomic_load(&((host_event*)start)->recorded_ns)) / 1e6f;
  return XHAL_OK;
}
static xhal_status query(void* self, int32_t device, void* event, char* msg, size_t len) {
  (void)self, (void)device, (void)msg, (void)len;
  if (!event) return XHAL_OK;
  host_event* e = event;
  int pending = atomic_load(&e->pending_queries);
  while (pending > 0 && !atomic_compare_exchange_weak(&e->pending_queries, &pending, pending - 1)) {
  }
  return pending > 0 ? XHAL_NOT_READY : XHAL_OK;
}
static xhal_status wait_event(void* self, int32_t device, void* event, char* msg, size_t len) {
  (void)self, (void)device, (void)msg, (void)len;
  if (event) atomic_store(&((host_event*)event)->pending_queries, 0);
  return XHAL_OK;
}

/* rows of x[..., n] (contiguous, as the stress test passes them). */
static xhal_status rms_norm(void* ctx, const xhal_op_call* call, char* msg, size_t len) {
  (void)ctx;
  (void)msg;
  (void)len;
  const DLTensor* x = call->tensors[XHAL_RMS_NORM_X];
  const float* in = x->data;
  const float* w = call->tensors[XHAL_RMS_NORM_WEIGHT]->data;
  float* out = call->tensors[XHAL_RMS_NORM_OUT]->data;
  const int64_t n = x->shape[x->ndim - 1];
  int64_t rows = 1;
  for (int i = 0; i < x->ndim - 1; ++i) rows *= x->shape[i];
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += (double)in[r * n + i] * in[r * n + i];
    const float inv = (float)(1.0 / sqrt(sum / (double)n + ((const xhal_norm_op_params*)call->params)->eps));
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = in[r * n + i] * inv * w[i];
  }
  return XHAL_OK;
}

xhal_status xhal_plugin_init(const xhal_host_api* host, xhal_plugin_api* api, char* reason, size_t reason_len) {
  (void)reason;
  (void)reason_len;
  fill_host_memory_device(api, "ze", "host streams (stress test)");
  api->stream_create = make_stream;
  api->stream_destroy = destroy_handle;
  api->event_create = make_event;
  api->timed_event_create = make_event;
  api->event_elapsed_ms = elapsed_ms;
  api->event_destroy = destroy_handle;
  api->event_record = record;
  api->event_query = query;
  api->event_synchronize = wait_event;
  register_f32_kernel(host, "host_streams.rms_norm", XHAL_OP_RMS_NORM, rms_norm, 0, 1);
  return XHAL_OK;
}
