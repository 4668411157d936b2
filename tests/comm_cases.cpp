#include "comm_cases.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "xhal/error.hpp"
#include "xhal/half.hpp"
#include "xhal/tensor.hpp"

namespace xhal::comm::test {
namespace {

constexpr DType kDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64};

// `n` elements of `dtype`, set and read on the host as doubles, on the communicator's device
// (uploaded before an op, downloaded after).
class Buffer {
 public:
  Buffer(DType dtype, int64_t n, Device device) : dtype_(dtype), n_(n), host_(size_t(n) * dtype_size(dtype) + 1) {
    if (device.type != DeviceType::cpu) dev_ = Tensor::empty({std::max<int64_t>(n, 1)}, dtype, device);
  }
  TensorView view() const { return view_at(0, n_); }
  TensorView view_at(int64_t offset, int64_t n) const {
    unsigned char* base = dev_ ? static_cast<unsigned char*>(dev_->data()) : const_cast<unsigned char*>(host_.data());
    return TensorView(base + size_t(offset) * dtype_size(dtype_), dtype_, {n},
                      dev_ ? dev_->view().device() : Device::cpu());
  }
  void upload() {
    if (dev_) dev_->copy_from_host(host_.data());
  }
  void download() {
    if (dev_) dev_->copy_to_host(host_.data());
  }
  void set(int64_t i, double v) {
    unsigned char* p = host_.data() + size_t(i) * dtype_size(dtype_);
    switch (dtype_) {
      case DType::f32: *reinterpret_cast<float*>(p) = float(v); break;
      case DType::f16: *reinterpret_cast<uint16_t*>(p) = float_to_f16(float(v)); break;
      case DType::bf16: *reinterpret_cast<uint16_t*>(p) = float_to_bf16(float(v)); break;
      case DType::i32: *reinterpret_cast<int32_t*>(p) = int32_t(v); break;
      default: *reinterpret_cast<int64_t*>(p) = int64_t(v); break;
    }
  }
  double get(int64_t i) const {
    const unsigned char* p = host_.data() + size_t(i) * dtype_size(dtype_);
    switch (dtype_) {
      case DType::f32: return *reinterpret_cast<const float*>(p);
      case DType::f16: return f16_to_float(*reinterpret_cast<const uint16_t*>(p));
      case DType::bf16: return bf16_to_float(*reinterpret_cast<const uint16_t*>(p));
      case DType::i32: return *reinterpret_cast<const int32_t*>(p);
      default: return double(*reinterpret_cast<const int64_t*>(p));
    }
  }

 private:
  DType dtype_;
  int64_t n_;
  std::vector<unsigned char> host_;  // +1 byte: never empty
  std::optional<Tensor> dev_;
};

// Rank r's element i for each reduction, and the exact reduction over `ranks` ranks.
double input(ReduceOp op, int r, int64_t i) {
  switch (op) {
    case ReduceOp::prod: return double(1 + (r + i) % 2);
    case ReduceOp::min:
    case ReduceOp::max: return double((r * 3 + i) % 11) - 5;
    default: return double((r + 1) * (i % 7 + 1));
  }
}
double reduced(ReduceOp op, int ranks, int64_t i) {
  double acc = input(op, 0, i);
  for (int r = 1; r < ranks; ++r) {
    const double v = input(op, r, i);
    acc = op == ReduceOp::prod  ? acc * v
          : op == ReduceOp::min ? std::min(acc, v)
          : op == ReduceOp::max ? std::max(acc, v)
                                : acc + v;
  }
  return op == ReduceOp::avg ? acc / ranks : acc;
}
double gathered(int r, int64_t i) { return double((r + 1) + i % 5); }

bool is_float(DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16; }

}  // namespace

void all_reduce_cases(Communicator& c, const std::vector<int64_t>& counts) {
  for (DType dtype : kDTypes) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg}) {
      if (op == ReduceOp::avg && !is_float(dtype)) continue;
      for (int64_t n : counts) {
        for (bool in_place : {false, true}) {
          SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " " << reduce_op_name(op) << " n " << n
                                          << (in_place ? " in place" : ""));
          Buffer in(dtype, n, c.device()), out(dtype, n, c.device());
          for (int64_t i = 0; i < n; ++i) in.set(i, input(op, c.rank(), i)), out.set(i, -99);
          in.upload(), out.upload();
          Buffer& result = in_place ? in : out;
          c.all_reduce(in.view(), result.view(), op).wait();
          result.download();
          int wrong = 0;
          for (int64_t i = 0; i < n; ++i) wrong += result.get(i) != reduced(op, c.size(), i);
          EXPECT_EQ(wrong, 0) << "first: got " << (n ? result.get(0) : 0) << " want "
                              << (n ? reduced(op, c.size(), 0) : 0);
        }
      }
    }
  }
}

void reduce_scatter_cases(Communicator& c, const std::vector<int64_t>& counts) {
  for (DType dtype : kDTypes) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
      for (int64_t n : counts) {
        SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " " << reduce_op_name(op) << " n " << n);
        const int64_t total = n * c.size();
        Buffer in(dtype, total, c.device()), out(dtype, n, c.device());
        for (int64_t j = 0; j < total; ++j) in.set(j, input(op, c.rank(), j));
        in.upload();
        c.reduce_scatter(in.view(), out.view(), op).wait();
        out.download();
        int wrong = 0;
        for (int64_t i = 0; i < n; ++i) wrong += out.get(i) != reduced(op, c.size(), c.rank() * n + i);
        EXPECT_EQ(wrong, 0);
        // In place: the output is this rank's block of the input.
        c.reduce_scatter(in.view(), in.view_at(c.rank() * n, n), op).wait();
        in.download();
        wrong = 0;
        for (int64_t i = 0; i < n; ++i) wrong += in.get(c.rank() * n + i) != reduced(op, c.size(), c.rank() * n + i);
        EXPECT_EQ(wrong, 0) << "in place";
      }
    }
  }
}

void gather_broadcast_ring_cases(Communicator& c, const std::vector<int64_t>& counts) {
  for (DType dtype : kDTypes) {
    for (int64_t n : counts) {
      SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " n " << n);
      const int64_t total = n * c.size(), block = std::max<int64_t>(n, 1);
      Buffer in(dtype, n, c.device()), out(dtype, total, c.device());
      for (int64_t i = 0; i < n; ++i) in.set(i, gathered(c.rank(), i));
      in.upload();
      c.all_gather(in.view(), out.view()).wait();
      out.download();
      int wrong = 0;
      for (int64_t j = 0; j < total; ++j) wrong += out.get(j) != gathered(int(j / block), j % block);
      EXPECT_EQ(wrong, 0) << "all_gather";
      // In place: this rank's input is already its block of the output.
      Buffer both(dtype, total, c.device());
      for (int64_t i = 0; i < n; ++i) both.set(c.rank() * n + i, gathered(c.rank(), i));
      both.upload();
      c.all_gather(both.view_at(c.rank() * n, n), both.view()).wait();
      both.download();
      wrong = 0;
      for (int64_t j = 0; j < total; ++j) wrong += both.get(j) != gathered(int(j / block), j % block);
      EXPECT_EQ(wrong, 0) << "all_gather in place";

      for (int root : {0, c.size() - 1}) {
        Buffer b(dtype, n, c.device());
        for (int64_t i = 0; i < n; ++i) b.set(i, gathered(c.rank(), i));
        b.upload();
        c.broadcast(b.view(), b.view(), root).wait();
        b.download();
        wrong = 0;
        for (int64_t i = 0; i < n; ++i) wrong += b.get(i) != gathered(root, i);
        EXPECT_EQ(wrong, 0) << "broadcast from " << root;
      }

      if (c.size() > 1) {
        // A ring: each rank sends to the next and receives from the previous. Even ranks send
        // first and odd ones receive first, so engines whose point-to-point calls block in issue
        // order (NCCL on one stream) pair up too.
        const int next = (c.rank() + 1) % c.size(), prev = (c.rank() + c.size() - 1) % c.size();
        Buffer got(dtype, n, c.device());
        if (c.rank() % 2 == 0) {
          c.send(in.view(), next).wait();
          c.recv(got.view(), prev).wait();
        } else {
          c.recv(got.view(), prev).wait();
          c.send(in.view(), next).wait();
        }
        got.download();
        wrong = 0;
        for (int64_t i = 0; i < n; ++i) wrong += got.get(i) != gathered(prev, i);
        EXPECT_EQ(wrong, 0) << "recv from " << prev;
      }
    }
  }
  c.barrier().wait();
}

}  // namespace xhal::comm::test
