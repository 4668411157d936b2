// What the C API's functions share: turning a C++ exception into a status and this thread's
// message, DLTensors into views (a malformed one named by function and argument), C lists and
// streams into their C++ forms.
#pragma once

#include <cstdio>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/op_table.hpp"
#include "core/text_format.hpp"
#include "xhal/xhal.h"
#include "xhal/xhal.hpp"

namespace xhal::capi {

// The message of this thread's last failed call (xhal_last_error).
inline thread_local std::string t_last_error;

template <class F>
xhal_status guarded(F&& body) {
  try {
    body();
    t_last_error.clear();
    return XHAL_OK;
  } catch (const xhal::Error& e) {
    t_last_error = e.what();
    return static_cast<xhal_status>(e.code());
  } catch (const std::bad_alloc&) {
    t_last_error = "host memory exhausted";
    return XHAL_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    t_last_error = e.what();
    return XHAL_ERR_INTERNAL;
  }
}

// An out-parameter the function writes; NULL is an error naming the function and the argument.
template <class T>
T& out_param(T* p, const char* function, const char* arg) {
  if (p == nullptr) {
    throw xhal::Error(xhal::Errc::invalid_argument,
                      std::string(function) + ": argument '" + arg + "': expected a pointer to write to, got NULL");
  }
  return *p;
}

inline void copy_name(const std::string& text, char* out, size_t len, const char* function) {
  out_param(out, function, "name");
  if (len > 0) std::snprintf(out, len, "%s", text.c_str());
}

// The DLTensor as a view; a malformed one (rank, dtype, device) is an error naming the function and
// the argument.
inline xhal::TensorView view(const DLTensor* t, std::string_view op, std::string_view arg) {
  if (t == nullptr) {
    throw xhal::Error(xhal::Errc::invalid_argument,
                      format_text("xhal_{}: argument '{}': expected a tensor, got NULL", op, arg));
  }
  try {
    return xhal::TensorView::from_dlpack(*t);
  } catch (const xhal::Error& e) {
    throw xhal::Error(e.code(), format_text("xhal_{}: argument '{}': {}", op, arg, e.what()));
  }
}

// The same for a tensor of an op, named by its slot in the op table.
inline xhal::TensorView view(const DLTensor* t, xhal::Op op, int slot) {
  return view(t, xhal::op_name(op), xhal::slot_name(op, slot));
}

inline std::optional<xhal::TensorView> optional_view(const DLTensor* t, xhal::Op op, int slot) {
  if (t == nullptr) return std::nullopt;
  return view(t, op, slot);
}

// A C list argument: `count` tensors (none may be NULL), or none when the array itself is NULL and
// the argument is optional.
inline std::vector<xhal::TensorView> list_views(size_t count, const DLTensor* const* list, xhal::Op op, int slot,
                                                bool optional = false) {
  std::vector<xhal::TensorView> views;
  if (list == nullptr && optional) return views;
  const std::string_view name = xhal::slot_name(op, slot);
  if (list == nullptr) {
    throw xhal::Error(xhal::Errc::invalid_argument,
                      format_text("xhal_{}: argument '{}s': expected an array of {} tensors, got NULL",
                                  xhal::op_name(op), name, count));
  }
  views.reserve(count);
  for (size_t i = 0; i < count; ++i) views.push_back(view(list[i], xhal::op_name(op), format_text("{}[{}]", name, i)));
  return views;
}

inline xhal::AttentionParams attention_params(const xhal_attention_params* p) {
  if (p == nullptr) return {};
  return {p->scale, p->causal != 0, p->window_left, p->window_right, p->softcap};
}

// A stream handle for `native` on the device of `out` (NULL native: the current stream).
inline std::optional<xhal::Stream> stream_for(const xhal::TensorView& out, void* native) {
  if (native == nullptr) return std::nullopt;
  return xhal::DeviceManager::instance().wrap_stream(out.device(), native);
}

inline const xhal::Stream* ptr(const std::optional<xhal::Stream>& s) { return s ? &*s : nullptr; }
inline const xhal::TensorView* ptr(const std::optional<xhal::TensorView>& v) { return v ? &*v : nullptr; }

}  // namespace xhal::capi
