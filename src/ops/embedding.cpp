// Front ends of embedding and embedding_backward. Ids are checked against the table's rows by the
// kernels (where they read them): see docs/ops.md.
#include "core/text_format.hpp"

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {
namespace {

// ids[T] (i32 or i64, any stride) and the [T, D] float tensor of the token rows (out or dout) in
// `rows_slot`, against the [V, D] table (or its gradient) in `table_slot`.
void check_embedding_args(const ArgChecks& check, const TensorView& ids, int rows_slot, const TensorView& rows,
                          int table_slot, const TensorView& table) {
  check.tensor(table_slot, table, 2);
  check.float_dtype(table_slot, table);
  check.tensor(XHAL_EMBEDDING_IDS, ids, 1, false);
  check.dtype_in(XHAL_EMBEDDING_IDS, ids, {DType::i32, DType::i64});
  check.tensor(rows_slot, rows, 2);
  check.dtype(rows_slot, rows, table.dtype(), format_text(" (same as {})", check.name(table_slot)));
  check.dim(rows_slot, rows, 0, ids.size(0), "tokens of ids");
  check.dim(rows_slot, rows, 1, table.size(1), format_text("columns of {}", check.name(table_slot)));
  check.same_device(XHAL_EMBEDDING_IDS, ids, table.device(), table_slot);
  check.same_device(rows_slot, rows, table.device(), table_slot);
}

}  // namespace

void embedding(const TensorView& ids, const TensorView& table, const TensorView& out, const Stream* stream) {
  const ArgChecks check(Op::embedding);
  check_embedding_args(check, ids, XHAL_EMBEDDING_OUT, out, XHAL_EMBEDDING_TABLE, table);
  check.apart(XHAL_EMBEDDING_OUT, out, {{XHAL_EMBEDDING_IDS, &ids}, {XHAL_EMBEDDING_TABLE, &table}});
  OpCall call(Op::embedding, table.dtype(), table.device(), stream);
  call.set(XHAL_EMBEDDING_IDS, ids);
  call.set(XHAL_EMBEDDING_TABLE, table);
  call.set(XHAL_EMBEDDING_OUT, out);
  call.run();
}

void embedding_backward(const TensorView& ids, const TensorView& dout, const TensorView& dtable, int64_t padding_idx,
                        const Stream* stream) {
  static_assert(XHAL_EMBEDDING_BACKWARD_IDS == XHAL_EMBEDDING_IDS &&
                XHAL_EMBEDDING_BACKWARD_DOUT == XHAL_EMBEDDING_OUT);
  const ArgChecks check(Op::embedding_backward);
  check_embedding_args(check, ids, XHAL_EMBEDDING_BACKWARD_DOUT, dout, XHAL_EMBEDDING_BACKWARD_DTABLE, dtable);
  check.apart(XHAL_EMBEDDING_BACKWARD_DTABLE, dtable,
              {{XHAL_EMBEDDING_BACKWARD_IDS, &ids}, {XHAL_EMBEDDING_BACKWARD_DOUT, &dout}});
  OpCall call(Op::embedding_backward, dtable.dtype(), dtable.device(), stream);
  const xhal_embedding_op_params params{sizeof(xhal_embedding_op_params), padding_idx};
  call.set_params(params);
  call.set(XHAL_EMBEDDING_BACKWARD_IDS, ids);
  call.set(XHAL_EMBEDDING_BACKWARD_DOUT, dout);
  call.set(XHAL_EMBEDDING_BACKWARD_DTABLE, dtable);
  call.run();
}

}  // namespace xhal::ops
