#include "core/trace.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

#include "core/env.hpp"
#include "core/instrumentation.hpp"
#include "core/json_text.hpp"
#include "core/logging.hpp"
#include "core/op_table.hpp"
#include "core/plugin_call.hpp"
#include "core/runtime.hpp"
#include "core/text_format.hpp"
#include "xhal/dtype.hpp"
#include "xhal/error.hpp"
#include "xhal/tensor_view.hpp"
#include "xhal/trace.hpp"

namespace xhal {
namespace {

// The open trace file. Events are appended under the mutex, one per line, each followed by a
// comma except that the closing bracket written by stop_trace() follows the last one.
// A call whose event waits for its device time: the event's text up to its last argument, and its
// timing.
struct PendingEvent {
  std::string head;
  trace::DeviceTiming timing;
};

struct TraceFile {
  std::mutex mutex;
  std::FILE* file = nullptr;
  std::string path;
  bool first_event = true;
  bool close_at_exit = false;
  std::vector<PendingEvent> pending;  // in call order
};
TraceFile& trace_file() {
  static TraceFile* t = new TraceFile;  // never destroyed: the exit handler closes the file
  return *t;
}

// Small per-thread numbers for the trace's "tid" (the viewers draw one row per thread).
int thread_number() {
  static std::atomic<int> next{1};
  thread_local const int number = next++;
  return number;
}

// Whether the write reached the file: flushed each time, so that a crash leaves every finished call
// in it, and so that a full disk is found at the call that met it.
bool write_event(TraceFile& t, const std::string& json) {
  const bool written = std::fprintf(t.file, "%s%s", t.first_event ? "" : ",\n", json.c_str()) >= 0;
  t.first_event = false;
  return std::fflush(t.file) == 0 && written;
}

// Closes the file after a failed write; tracing stops. Called with the file's lock held.
void abandon_trace(TraceFile& t, int error) {
  instrumentation::set(instrumentation::kTrace, false);
  std::fclose(t.file);
  t.file = nullptr;
  t.pending.clear();
  log(LogLevel::error, "xhal trace: writing '{}' failed ({}); tracing stopped", t.path, std::strerror(error));
}

// Writes the pending events whose device work has finished (all of them, waiting, when `wait`);
// an event whose timing fails is written without device time. Called with the file's lock held.
void resolve_pending(TraceFile& t, bool wait) {
  size_t done = 0;
  for (; done < t.pending.size(); ++done) {
    const PendingEvent& p = t.pending[done];
    const xhal_status ready = p.timing.finished(wait);
    if (ready == XHAL_NOT_READY) break;  // later calls on the same stream are not done either
    const auto device_us = ready == XHAL_OK ? p.timing.elapsed_us() : std::nullopt;
    if (t.file != nullptr &&
        !write_event(t,
                     device_us ? format_text("{},\"device_time_us\":{:.3f}}}}}", p.head, *device_us) : p.head + "}}")) {
      abandon_trace(t, errno);
      return;
    }
  }
  t.pending.erase(t.pending.begin(), t.pending.begin() + std::ptrdiff_t(done));
}

// Bytes an op moves: every tensor argument read once, every written one written once (in/out
// arguments both).
int64_t bytes_moved(const xhal_op_call& call) {
  int64_t bytes = 0;
  for (uint32_t i = 0; i < call.num_tensors; ++i) {
    if (call.tensors[i] == nullptr) continue;
    const auto size = int64_t(TensorView::from_dlpack(*call.tensors[i]).nbytes());
    bytes += call_tensor(Op(call.op), i).slot->role == SlotRole::in_out ? 2 * size : size;
  }
  return bytes;
}

void close_trace_at_exit() { stop_trace(); }

}  // namespace

namespace trace {

std::optional<std::string> path_from_env() { return env::value(env::Var::trace); }

int64_t now_ns() {
  static const auto origin = std::chrono::steady_clock::now();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin).count();
}

DeviceTiming::DeviceTiming(const xhal_op_call& call, Device device) {
  const xhal_plugin_api& api = Runtime::get().api(device);
  if (api.timed_event_create == nullptr || api.event_elapsed_ms == nullptr) return;
  api_ = &api;
  device_ = call.device;
  stream_ = call.stream;
  PluginMessage message;
  if (plugin_status<&xhal_plugin_api::timed_event_create>(api, message, device_, &start_) != XHAL_OK ||
      plugin_status<&xhal_plugin_api::timed_event_create>(api, message, device_, &end_) != XHAL_OK ||
      plugin_status<&xhal_plugin_api::event_record>(api, message, device_, start_, stream_) != XHAL_OK) {
    release();  // no device time for this call; its host time is still traced
  }
}

DeviceTiming::~DeviceTiming() { release(); }

DeviceTiming::DeviceTiming(DeviceTiming&& other) noexcept { *this = std::move(other); }

DeviceTiming& DeviceTiming::operator=(DeviceTiming&& other) noexcept {
  if (this != &other) {
    release();
    api_ = other.api_;
    device_ = other.device_;
    stream_ = other.stream_;
    start_ = std::exchange(other.start_, nullptr);
    end_ = std::exchange(other.end_, nullptr);
  }
  return *this;
}

void DeviceTiming::release() {
  if (start_ != nullptr) plugin_call_unchecked<&xhal_plugin_api::event_destroy>(*api_, device_, start_);
  if (end_ != nullptr) plugin_call_unchecked<&xhal_plugin_api::event_destroy>(*api_, device_, end_);
  start_ = end_ = nullptr;
}

void DeviceTiming::stop() {
  PluginMessage message;
  if (end_ != nullptr &&
      plugin_status<&xhal_plugin_api::event_record>(*api_, message, device_, end_, stream_) != XHAL_OK) {
    release();
  }
}

xhal_status DeviceTiming::finished(bool wait) const {
  PluginMessage message;
  return wait ? plugin_status<&xhal_plugin_api::event_synchronize>(*api_, message, device_, end_)
              : plugin_status<&xhal_plugin_api::event_query>(*api_, message, device_, end_);
}

std::optional<double> DeviceTiming::elapsed_us() const {
  float ms = 0;
  PluginMessage message;
  if (plugin_status<&xhal_plugin_api::event_elapsed_ms>(*api_, message, device_, start_, end_, &ms) != XHAL_OK) {
    return std::nullopt;
  }
  return double(ms) * 1e3;
}

void record_op(const xhal_op_call& call, Device device, const Registry::Ran& ran, int64_t start_ns, int64_t end_ns,
               DeviceTiming timing) {
  // Formatted before taking the file's lock, which only orders the writes.
  std::string head =
      format_text(R"({{"name":{},"cat":"op","ph":"X","ts":{:.3f},"dur":{:.3f},"pid":{},"tid":{},)"
                  R"("args":{{"kernel":{},"backend":{},"device":{},"stream":"{}","dtype":{},"shapes":{},"bytes":{})",
                  json_string(op_name(Op(call.op))), double(start_ns) / 1e3, double(end_ns - start_ns) / 1e3, getpid(),
                  thread_number(), json_string(ran.kernel), json_string(device_type_name(device.type)),
                  json_string(device.str()), static_cast<const void*>(call.stream),
                  json_string(dtype_name(DType(call.dtype))), json_string(describe_shapes(call)), bytes_moved(call));
  TraceFile& t = trace_file();
  std::lock_guard lock(t.mutex);
  if (t.file != nullptr && timing.timed()) {
    t.pending.push_back({std::move(head), std::move(timing)});
  } else if (t.file != nullptr && !write_event(t, head + "}}")) {
    abandon_trace(t, errno);
  }
  resolve_pending(t, false);
}

}  // namespace trace

void start_trace(const std::string& path) {
  trace::read_trace_env();
  trace::open_trace(path);
}

void trace::read_trace_env() {
  static std::once_flag once;
  std::call_once(once, [] {  // an exception (a file it cannot create) leaves it unread, to throw again
    if (const auto trace_path = path_from_env()) {
      try {
        open_trace(*trace_path);
      } catch (const Error& e) {
        throw Error(e.code(), format_text("XHAL_TRACE={}: {}", *trace_path, e.what()));
      }
    }
  });
}

void trace::open_trace(const std::string& path) {
  stop_trace();
  TraceFile& t = trace_file();
  {
    std::lock_guard lock(t.mutex);
    t.file = std::fopen(path.c_str(), "w");
    if (t.file == nullptr) {
      throw Error(Errc::invalid_argument,
                  format_text("xhal trace: cannot create '{}': {}", path, std::strerror(errno)));
    }
    t.first_event = true;
    t.path = path;
    std::fputs("[\n", t.file);
    if (!write_event(
            t, format_text(R"j({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"xhal ops (host time)"}}}})j",
                           getpid()))) {
      const int error = errno;
      std::fclose(t.file);
      t.file = nullptr;
      throw Error(Errc::invalid_argument, format_text("xhal trace: cannot write '{}': {}", path, std::strerror(error)));
    }
    if (!t.close_at_exit) {
      t.close_at_exit = true;
      std::atexit(close_trace_at_exit);
    }
  }
  trace::now_ns();  // the clock's origin, if no op set it yet
  instrumentation::set(instrumentation::kTrace, true);
}

void stop_trace() {
  TraceFile& t = trace_file();
  std::lock_guard lock(t.mutex);
  if (t.file == nullptr) return;
  instrumentation::set(instrumentation::kTrace, false);
  resolve_pending(t, true);
  std::fputs("\n]\n", t.file);
  std::fclose(t.file);
  t.file = nullptr;
}

bool tracing() {
  TraceFile& t = trace_file();
  std::lock_guard lock(t.mutex);
  return t.file != nullptr;
}

}  // namespace xhal
