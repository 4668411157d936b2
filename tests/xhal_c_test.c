/* The C API (include/xhal/xhal.h), from C: devices, memory status, ops on DLTensors, and errors
 * that come back as a status plus a message. Prints "N passed, N failed". */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "xhal/xhal.h"

static int passed, failed;

#define CHECK(cond)                                                                                          \
  do {                                                                                                       \
    if (cond) {                                                                                              \
      ++passed;                                                                                              \
    } else {                                                                                                 \
      ++failed;                                                                                              \
      fprintf(stderr, "%s:%d: failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, xhal_last_error()); \
    }                                                                                                        \
  } while (0)

static DLTensor tensor(void* data, DLDataType dtype, int ndim, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = NULL; /* contiguous */
  return t;
}

int main(void) {
  const DLDataType f32 = {kDLFloat, 32, 1}, i32 = {kDLInt, 32, 1}, i64 = {kDLInt, 64, 1};
  int32_t count = 0;
  char name[64];
  CHECK(strcmp(xhal_version(), XHAL_VERSION_STRING) == 0);
  CHECK(xhal_device_count(&count) == XHAL_OK && count >= 1);
  CHECK(xhal_device_name(0, name, sizeof name) == XHAL_OK);
  CHECK(xhal_device_name(count, name, sizeof name) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "xhal_device_name") != NULL);
  /* cpu here, cuda:0 on a GPU machine: either way a device name. */
  CHECK(xhal_default_device(name, sizeof name) == XHAL_OK && name[0] != '\0');

  xhal_memory_status mem;
  CHECK(xhal_memory_status_get("cpu", &mem) == XHAL_OK && mem.total_bytes > 0);
  CHECK(xhal_memory_status_get("tpu:0", &mem) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(xhal_synchronize("cpu") == XHAL_OK);
  CHECK(xhal_empty_cache("cpu") == XHAL_OK);
  /* NULL out-parameters are errors naming the argument, never a crash. */
  CHECK(xhal_device_count(NULL) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "xhal_device_count: argument 'count'") != NULL);
  CHECK(xhal_memory_status_get("cpu", NULL) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "xhal_memory_status_get: argument 'out'") != NULL);
  CHECK(xhal_device_name(0, NULL, 8) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(xhal_default_device(NULL, 8) == XHAL_ERR_INVALID_ARGUMENT);

  /* rms_norm of [3, 4] */
  float x[2][4] = {{3, 4, 0, 0}, {1, 1, 1, 1}}, w[4] = {1, 2, 1, 1}, out[2][4];
  int64_t xs[2] = {2, 4}, ws[1] = {4};
  DLTensor tx = tensor(x, f32, 2, xs), tw = tensor(w, f32, 1, ws), to = tensor(out, f32, 2, xs);
  CHECK(xhal_rms_norm(&tx, &tw, 0.0f, &to, NULL) == XHAL_OK);
  CHECK(fabsf(out[0][1] - 4.0f * 2.0f / sqrtf(6.25f)) < 1e-5f);
  CHECK(fabsf(out[1][0] - 1.0f) < 1e-6f);

  /* A bad argument: weight of the wrong size. */
  int64_t bad[1] = {3};
  DLTensor tbad = tensor(w, f32, 1, bad);
  CHECK(xhal_rms_norm(&tx, &tbad, 0.0f, &to, NULL) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "xhal::ops::rms_norm") != NULL);
  CHECK(strstr(xhal_last_error(), "'weight'") != NULL);
  CHECK(xhal_rms_norm(NULL, &tw, 0.0f, &to, NULL) == XHAL_ERR_INVALID_ARGUMENT);
  /* NULL data: with a byte offset (once added before the NULL check), and as an output. */
  DLTensor tnull = tensor(NULL, f32, 2, xs);
  tnull.byte_offset = 16;
  CHECK(xhal_rms_norm(&tx, &tw, 0.0f, &tnull, NULL) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(),
               "xhal_rms_norm: argument 'out': TensorView::from_dlpack: data is NULL but byte_offset is 16") != NULL);
  tnull.byte_offset = 0;
  CHECK(xhal_rms_norm(&tx, &tw, 0.0f, &tnull, NULL) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "argument 'out'") != NULL);
  /* A byte offset that the data pointer makes up for: the same tensor. */
  /* (through an integer: a pointer before the array's start may not be formed) */
  DLTensor tshifted = tensor((void*)((uintptr_t)out - 12), f32, 2, xs);
  tshifted.byte_offset = 12;
  CHECK(xhal_rms_norm(&tx, &tw, 0.0f, &tshifted, NULL) == XHAL_OK);
  CHECK(fabsf(out[1][0] - 1.0f) < 1e-6f);
  /* Malformed DLTensors (as the fuzz target makes them): named by function and argument. */
  DLTensor tweird = tensor(w, f32, 1, ws);
  tweird.dtype.lanes = 4;
  CHECK(xhal_rms_norm(&tx, &tweird, 0.0f, &to, NULL) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "xhal_rms_norm: argument 'weight': DLPack dtype") != NULL);
  tweird = tensor(w, f32, 1, ws);
  tweird.shape = NULL;
  CHECK(xhal_rms_norm(&tx, &tweird, 0.0f, &to, NULL) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "argument 'weight': TensorView::from_dlpack: ndim is 1 but shape is NULL") != NULL);
  tweird = tensor(w, f32, 1, ws);
  *(int32_t*)&tweird.device.device_type = 99; /* C may store any value in the enum */
  CHECK(xhal_rms_norm(&tx, &tweird, 0.0f, &to, NULL) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "DLPack device type 99 is not supported") != NULL);

  /* attention with one key returns v; lse is the score. */
  float q[4] = {1, 0, 0, 0}, k[4] = {2, 0, 0, 0}, v[4] = {5, 6, 7, 8}, o[4], lse[1];
  int64_t qs[4] = {1, 1, 1, 4}, ls[3] = {1, 1, 1};
  DLTensor tq = tensor(q, f32, 4, qs), tk = tensor(k, f32, 4, qs), tv = tensor(v, f32, 4, qs),
           tob = tensor(o, f32, 4, qs), tl = tensor(lse, f32, 3, ls);
  xhal_attention_params params = xhal_attention_params_default();
  params.scale = 1.0f;
  CHECK(xhal_attention(&tq, &tk, &tv, &tob, &params, &tl, NULL) == XHAL_OK);
  CHECK(o[0] == 5 && o[3] == 8);
  CHECK(fabsf(lse[0] - 2.0f) < 1e-6f);

  /* rope_cache into a caller buffer, then rope at position 0 is the identity. */
  float cache[8][4];
  int64_t cs[2] = {8, 4};
  DLTensor tc = tensor(cache, f32, 2, cs);
  CHECK(xhal_rope_cache(8, 4, 10000.0, &tc) == XHAL_OK);
  CHECK(cache[0][0] == 1.0f && cache[0][2] == 0.0f);
  /* rope_cache into NULL, and of a size whose bytes overflow: errors, nothing written. */
  DLTensor tcnull = tensor(NULL, f32, 2, cs);
  CHECK(xhal_rope_cache(8, 4, 10000.0, &tcnull) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "xhal_rope_cache: argument 'out'") != NULL);
  int64_t huge[2] = {((int64_t)1 << 61) + 1, 2};
  DLTensor thuge = tensor(cache, f32, 2, huge);
  CHECK(xhal_rope_cache(huge[0], 2, 10000.0, &thuge) == XHAL_ERR_INVALID_ARGUMENT);
  /* rope_cache_scaled: linear by 2 halves the frequencies (row 2 of the scaled cache is row 1 of
   * the plain one); no scaling, an unknown type and a llama3 scaling without its original context
   * are refused. */
  float scaled[8][4];
  DLTensor tsc = tensor(scaled, f32, 2, cs);
  xhal_rope_scaling linear = {1, 2.0, 0, 1.0, 4.0, 32.0, 1.0, 0.0};
  CHECK(xhal_rope_cache_scaled(8, 4, 10000.0, &linear, &tsc) == XHAL_OK);
  CHECK(fabsf(scaled[2][0] - cache[1][0]) < 1e-6f && fabsf(scaled[2][2] - cache[1][2]) < 1e-6f);
  CHECK(xhal_rope_cache_scaled(8, 4, 10000.0, NULL, &tsc) == XHAL_ERR_INVALID_ARGUMENT);
  xhal_rope_scaling unknown = linear, llama3 = linear;
  unknown.type = 4;
  llama3.type = 2;
  CHECK(xhal_rope_cache_scaled(8, 4, 10000.0, &unknown, &tsc) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "scaling.type") != NULL);
  CHECK(xhal_rope_cache_scaled(8, 4, 10000.0, &llama3, &tsc) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "original_max_position") != NULL);
  int32_t pos[1] = {0};
  int64_t ps[1] = {1}, hs[3] = {1, 1, 4};
  DLTensor tp = tensor(pos, i32, 1, ps), th = tensor(v, f32, 3, hs), tk2 = tensor(k, f32, 3, hs);
  CHECK(xhal_rope(&th, &tk2, &tp, &tc, 1, NULL) == XHAL_OK);
  CHECK(v[0] == 5 && v[1] == 6);
  pos[0] = 8;
  CHECK(xhal_rope(&th, &tk2, &tp, &tc, 1, NULL) == XHAL_ERR_INVALID_ARGUMENT);

  /* linear with bias */
  float a[2] = {1, 2}, wt[2][2] = {{1, 1}, {0, 3}}, bias[2] = {10, 20}, y[2];
  int64_t as[2] = {1, 2}, wts[2] = {2, 2}, bs[1] = {2};
  DLTensor ta = tensor(a, f32, 2, as), twt = tensor(wt, f32, 2, wts), tb = tensor(bias, f32, 1, bs),
           ty = tensor(y, f32, 2, as);
  CHECK(xhal_linear(&ta, &twt, &tb, &ty, NULL) == XHAL_OK);
  CHECK(y[0] == 13 && y[1] == 26);

  /* fused_add_rms_norm: residual becomes x + residual. */
  float xr[4] = {1, 1, 1, 1}, res[4] = {2, 2, 2, 2}, n[4];
  int64_t rs[2] = {1, 4};
  DLTensor txr = tensor(xr, f32, 2, rs), tres = tensor(res, f32, 2, rs), tn = tensor(n, f32, 2, rs);
  CHECK(xhal_fused_add_rms_norm(&txr, &tres, &tw, 0.0f, &tn, NULL) == XHAL_OK);
  CHECK(res[0] == 3.0f && fabsf(n[1] - 2.0f) < 1e-6f);

  /* swiglu and swiglu_packed agree: silu(0) * u = 0, silu(g) * 1 = g / (1 + e^-g). */
  float g[2] = {0, 2}, u[2] = {5, 1}, packed[4] = {0, 2, 5, 1}, s1[2], s2[2];
  int64_t gs[2] = {1, 2}, pks[2] = {1, 4};
  DLTensor tg = tensor(g, f32, 2, gs), tu = tensor(u, f32, 2, gs), ts1 = tensor(s1, f32, 2, gs),
           tpk = tensor(packed, f32, 2, pks), ts2 = tensor(s2, f32, 2, gs);
  CHECK(xhal_swiglu(&tg, &tu, &ts1, NULL) == XHAL_OK);
  CHECK(xhal_swiglu_packed(&tpk, &ts2, NULL) == XHAL_OK);
  CHECK(s1[0] == 0.0f && fabsf(s1[1] - 2.0f / (1.0f + expf(-2.0f))) < 1e-6f);
  CHECK(s1[0] == s2[0] && s1[1] == s2[1]);
  CHECK(xhal_swiglu_packed(&tg, &ts1, NULL) == XHAL_ERR_INVALID_ARGUMENT);

  /* layer_norm of [1, 3, 5, 7] (mean 4, variance 5): (x - 4) / sqrt(5) * 2 + 1. */
  float nx[4] = {1, 3, 5, 7}, nw[4] = {2, 2, 2, 2}, nb[4] = {1, 1, 1, 1}, no[4];
  int64_t nrs[2] = {1, 4}, nws[1] = {4};
  DLTensor tnx = tensor(nx, f32, 2, nrs), tnw = tensor(nw, f32, 1, nws), tnb = tensor(nb, f32, 1, nws),
           tno = tensor(no, f32, 2, nrs);
  CHECK(xhal_layer_norm(&tnx, &tnw, &tnb, 0.0f, &tno, NULL) == XHAL_OK);
  CHECK(fabsf(no[0] - (1.0f - 6.0f / sqrtf(5.0f))) < 1e-5f && fabsf(no[3] - (1.0f + 6.0f / sqrtf(5.0f))) < 1e-5f);
  CHECK(xhal_layer_norm(&tnx, &tnw, &tnx, 0.0f, &tno, NULL) == XHAL_ERR_INVALID_ARGUMENT);

  /* argmax: the first largest value of each row, its value too; f32 indices are refused. */
  float am[2][4] = {{1, 7, 7, -2}, {-1, -3, -1, -5}}, amv[2];
  int64_t ami[2], ams[2] = {2, 4}, ams1[1] = {2};
  DLTensor tam = tensor(am, f32, 2, ams), tami = tensor(ami, i64, 1, ams1), tamv = tensor(amv, f32, 1, ams1);
  CHECK(xhal_argmax(&tam, &tami, &tamv, NULL) == XHAL_OK);
  CHECK(ami[0] == 1 && ami[1] == 0 && amv[0] == 7.0f && amv[1] == -1.0f);
  CHECK(xhal_argmax(&tam, &tami, NULL, NULL) == XHAL_OK);
  CHECK(xhal_argmax(&tam, &tamv, NULL, NULL) == XHAL_ERR_INVALID_ARGUMENT);

  /* top_k: the two largest of each row, ties by position; k above V is refused. */
  float tkv[2][2];
  int32_t tki[2][2];
  int64_t tks[2] = {2, 2}, tks5[2] = {2, 5};
  DLTensor ttkv = tensor(tkv, f32, 2, tks), ttki = tensor(tki, i32, 2, tks);
  CHECK(xhal_top_k(&tam, &ttkv, &ttki, NULL) == XHAL_OK);
  CHECK(tki[0][0] == 1 && tki[0][1] == 2 && tkv[0][0] == 7.0f && tki[1][0] == 0 && tki[1][1] == 2 &&
        tkv[1][1] == -1.0f);
  DLTensor ttkv5 = tensor(tkv, f32, 2, tks5);
  CHECK(xhal_top_k(&tam, &ttkv5, &ttki, NULL) == XHAL_ERR_INVALID_ARGUMENT);

  /* quantize to e4m3 with one dynamic scale for the tensor (granularity 0; the scale 4 / 448 and
   * the codes 56, -112, 224, 448 times it),
   * dequantize back; a granularity outside the enum is refused. */
  const DLDataType e4m3 = {10, 8, 1};
  float qx[4] = {0.5f, -1.0f, 2.0f, 4.0f}, qscale[1] = {-1.0f}, qb[4];
  uint8_t qc[4];
  int64_t qshape[1] = {4}, sshape[1] = {1};
  DLTensor tqx = tensor(qx, f32, 1, qshape), tqc = tensor(qc, e4m3, 1, qshape), tqs = tensor(qscale, f32, 1, sshape),
           tqb = tensor(qb, f32, 1, qshape);
  CHECK(xhal_quantize(&tqx, &tqc, &tqs, 0, 0, 1, NULL) == XHAL_OK);
  CHECK(qscale[0] == 4.0f / 448.0f && qc[3] == 0x7E && qc[1] == (0x80 | 0x6E));
  CHECK(xhal_dequantize(&tqc, &tqs, &tqb, 0, 0, NULL) == XHAL_OK);
  CHECK(fabsf(qb[0] - 0.5f) < 1e-6f && fabsf(qb[3] - 4.0f) < 1e-6f);
  CHECK(xhal_quantize(&tqx, &tqc, &tqs, 9, 0, 1, NULL) == XHAL_ERR_INVALID_ARGUMENT);

  /* linear_fp8 of the codes above as one row against two rows of w: [1,4] x [2,4]^T with the
   * tensor's scale for x and one scale a row of w; w's second row is x's codes again. */
  uint8_t wc[2][4] = {{0x38, 0x38, 0x38, 0x38}, {0, 0, 0, 0}}; /* 1.0 each, zeros */
  float wscale[2] = {2.0f, 1.0f}, lout[2] = {-1.0f, -1.0f};
  int64_t lxs[2] = {1, 4}, lws[2] = {2, 4}, lwss[2] = {2, 1}, los[2] = {1, 2};
  DLTensor tlx = tensor(qc, e4m3, 2, lxs), tlw = tensor(wc, e4m3, 2, lws), tlws = tensor(wscale, f32, 2, lwss),
           tlfo = tensor(lout, f32, 2, los);
  CHECK(xhal_linear_fp8(&tlx, &tqs, &tlw, &tlws, NULL, &tlfo, NULL) == XHAL_OK);
  CHECK(fabsf(lout[0] - 2.0f * 5.5f) < 1e-4f && lout[1] == 0.0f);
  CHECK(xhal_linear_fp8(&tlx, &tqs, &tlw, &tqs, NULL, &tqx, NULL) == XHAL_ERR_INVALID_ARGUMENT);

  /* linear_int8: codes {1, -2, 3, 4} against rows {1, 1, 1, 1} and {0, 0, 0, 0}, x scale 0.5, w
   * scales 2 and 1, bias {1, -1}: out = (6 * 0.5 * 2 + 1, -1). */
  int8_t ic[4] = {1, -2, 3, 4}, iw[2][4] = {{1, 1, 1, 1}, {0, 0, 0, 0}};
  float ixs[1] = {0.5f}, ibias[2] = {1.0f, -1.0f};
  const DLDataType i8 = {kDLInt, 8, 1};
  DLTensor tix = tensor(ic, i8, 2, lxs), tiw = tensor(iw, i8, 2, lws), tixs = tensor(ixs, f32, 1, sshape),
           tib = tensor(ibias, f32, 1, lws);
  CHECK(xhal_linear_int8(&tix, &tixs, &tiw, &tlws, &tib, &tlfo, NULL) == XHAL_OK);
  CHECK(lout[0] == 7.0f && lout[1] == -1.0f);
  CHECK(xhal_linear_int8(&tlx, &tixs, &tiw, &tlws, &tib, &tlfo, NULL) == XHAL_ERR_INVALID_ARGUMENT); /* fp8 x */

  /* sample: top_k 1 keeps the largest logit whatever the draw; per-row temperature 0 is greedy;
   * f32 tokens and top_p 0 are refused. */
  xhal_sample_params sap = {1.0f, 1, 1.0f, 0.0f, 42, 7};
  int64_t sat[2] = {-1, -1};
  float sar[2] = {0.0f, 0.0f};
  DLTensor tsat = tensor(sat, i64, 1, ams1), tsar = tensor(sar, f32, 1, ams1);
  CHECK(xhal_sample(&tam, &tsat, &sap, NULL, NULL) == XHAL_OK);
  CHECK(sat[0] == 1 && sat[1] == 0);
  xhal_sample_rows sarows = {&tsar, NULL, NULL, NULL, NULL, NULL};
  sat[0] = sat[1] = -1;
  CHECK(xhal_sample(&tam, &tsat, NULL, &sarows, NULL) == XHAL_OK && sat[0] == 1 && sat[1] == 0);
  CHECK(xhal_sample(&tam, &tamv, NULL, NULL, NULL) == XHAL_ERR_INVALID_ARGUMENT);
  sap.top_p = 0.0f;
  CHECK(xhal_sample(&tam, &tsat, &sap, NULL, NULL) == XHAL_ERR_INVALID_ARGUMENT);

  /* softmax of [0, ln 3] is [1/4, 3/4]; a masked entry gets 0; in place; an i64 out is refused. */
  float sm[2][2] = {{0.0f, 1.0986123f}, {-INFINITY, 5.0f}}, smo[2][2];
  int64_t sms[2] = {2, 2};
  DLTensor tsm = tensor(sm, f32, 2, sms), tsmo = tensor(smo, f32, 2, sms);
  CHECK(xhal_softmax(&tsm, &tsmo, NULL) == XHAL_OK);
  CHECK(fabsf(smo[0][0] - 0.25f) < 1e-6f && fabsf(smo[0][1] - 0.75f) < 1e-6f && smo[1][0] == 0.0f && smo[1][1] == 1.0f);
  CHECK(xhal_softmax(&tsm, &tsm, NULL) == XHAL_OK && sm[1][1] == 1.0f);
  CHECK(xhal_softmax(&tsm, &tami, NULL) == XHAL_ERR_INVALID_ARGUMENT);

  /* add and mul: with a full y and with a row for every row; a y row of the wrong size is refused. */
  float ex[2][2] = {{1, 2}, {3, 4}}, ey[2][2] = {{10, 20}, {30, 40}}, er[2] = {2, -1}, eo[2][2];
  int64_t es[2] = {2, 2}, ers[1] = {2}, ebad[1] = {3};
  DLTensor tex = tensor(ex, f32, 2, es), tey = tensor(ey, f32, 2, es), ter = tensor(er, f32, 1, ers),
           teo = tensor(eo, f32, 2, es), tebad = tensor(er, f32, 1, ebad);
  CHECK(xhal_add(&tex, &tey, &teo, NULL) == XHAL_OK && eo[0][0] == 11.0f && eo[1][1] == 44.0f);
  CHECK(xhal_mul(&tex, &ter, &teo, NULL) == XHAL_OK && eo[0][0] == 2.0f && eo[0][1] == -2.0f && eo[1][0] == 6.0f);
  CHECK(xhal_add(&tex, &tebad, &teo, NULL) == XHAL_ERR_INVALID_ARGUMENT);

  /* gelu_and_mul: gelu(0) * u = 0, gelu(2) = 2 Phi(2) = 1.9544997 (erf), 1.9545977 (tanh); packed
   * agrees; an unknown approximation is refused. */
  CHECK(xhal_gelu_and_mul(&tg, &tu, &ts1, 0, NULL) == XHAL_OK); /* erf */
  CHECK(s1[0] == 0.0f && fabsf(s1[1] - 1.9544997f) < 1e-5f);
  CHECK(xhal_gelu_and_mul_packed(&tpk, &ts2, 1, NULL) == XHAL_OK); /* tanh */
  CHECK(s2[0] == 0.0f && fabsf(s2[1] - 1.9545977f) < 1e-5f);
  CHECK(xhal_gelu_and_mul(&tg, &tu, &ts1, 7, NULL) == XHAL_ERR_INVALID_ARGUMENT);

  /* attention_varlen with one sequence of one token returns v. */
  float vq[4] = {1, 0, 0, 0}, vk[4] = {1, 0, 0, 0}, vv[4] = {9, 8, 7, 6}, vo[4];
  int32_t cu[2] = {0, 1};
  int64_t ts3[3] = {1, 1, 4}, cus[1] = {2};
  DLTensor tvq = tensor(vq, f32, 3, ts3), tvk = tensor(vk, f32, 3, ts3), tvv = tensor(vv, f32, 3, ts3),
           tvo = tensor(vo, f32, 3, ts3), tcu = tensor(cu, i32, 1, cus);
  CHECK(xhal_attention_varlen(&tvq, &tvk, &tvv, &tcu, &tcu, 1, 1, &tvo, NULL, NULL, NULL) == XHAL_OK);
  CHECK(vo[0] == 9 && vo[3] == 6);

  /* paged_attention over one block holding one key returns its value. */
  int32_t table[1] = {0}, lens[1] = {1};
  int64_t cache_shape[4] = {1, 1, 1, 4}, one[1] = {1}, table_shape[2] = {1, 1};
  DLTensor tkc = tensor(vk, f32, 4, cache_shape), tvc = tensor(vv, f32, 4, cache_shape),
           ttab = tensor(table, i32, 2, table_shape), tlen = tensor(lens, i32, 1, one);
  vo[0] = 0;
  CHECK(xhal_paged_attention(&tvq, &tkc, &tvc, &ttab, &tlen, &tvo, NULL, NULL) == XHAL_OK);
  CHECK(vo[0] == 9 && vo[3] == 6);
  /* paged_prefill: the same query as a one-token chunk of a one-token sequence. */
  vo[0] = 0;
  CHECK(xhal_paged_prefill(&tvq, &tkc, &tvc, &tcu, &ttab, &tlen, 1, &tvo, NULL, NULL, NULL) == XHAL_OK);
  CHECK(vo[0] == 9 && vo[3] == 6);
  table[0] = 5;
  CHECK(xhal_paged_attention(&tvq, &tkc, &tvc, &ttab, &tlen, &tvo, NULL, NULL) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "block_table") != NULL);

  /* merge_attention_states of two equal parts (lse 0 each) is their mean with lse log 2; a part
   * with lse -inf is not read, so its NaN does not reach the output. */
  float ma[2] = {1, 3}, mb[2] = {3, NAN}, mo[2], la[1] = {0}, lb[1] = {0}, lo[1];
  int64_t ms3[3] = {1, 1, 2}, ls2[2] = {1, 1};
  DLTensor tma = tensor(ma, f32, 3, ms3), tmb = tensor(mb, f32, 3, ms3), tmo = tensor(mo, f32, 3, ms3),
           tla = tensor(la, f32, 2, ls2), tlb = tensor(lb, f32, 2, ls2), tlo = tensor(lo, f32, 2, ls2);
  mb[1] = 5;
  CHECK(xhal_merge_attention_states(&tma, &tla, &tmb, &tlb, &tmo, &tlo, NULL) == XHAL_OK);
  CHECK(fabsf(mo[0] - 2.0f) < 1e-6f && fabsf(mo[1] - 4.0f) < 1e-6f && fabsf(lo[0] - logf(2.0f)) < 1e-6f);
  mb[1] = NAN;
  lb[0] = -INFINITY;
  CHECK(xhal_merge_attention_states(&tma, &tla, &tmb, &tlb, &tmo, NULL, NULL) == XHAL_OK);
  CHECK(mo[0] == 1.0f && mo[1] == 3.0f);
  CHECK(xhal_merge_attention_states(&tma, &tla, &tmb, &tma, &tmo, NULL, NULL) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "argument 'lse_b'") != NULL);

  /* kv_cache_write: token 0 to slot 3 (block 1, row 1), token 1 skipped. */
  float kn[4] = {1, 2, 3, 4}, vn[4] = {5, 6, 7, 8}, kcache[8] = {0}, vcache[8] = {0};
  int64_t slot_vals[2] = {3, -1}, kvs[3] = {2, 1, 2}, caches[4] = {2, 2, 1, 2}, two[1] = {2};
  DLTensor tkn = tensor(kn, f32, 3, kvs), tvn = tensor(vn, f32, 3, kvs), tkcache = tensor(kcache, f32, 4, caches),
           tvcache = tensor(vcache, f32, 4, caches), tslots = tensor(slot_vals, i64, 1, two);
  CHECK(xhal_kv_cache_write(&tkn, &tvn, &tslots, &tkcache, &tvcache, NULL) == XHAL_OK);
  CHECK(kcache[6] == 1 && kcache[7] == 2 && vcache[6] == 5 && vcache[7] == 6 && kcache[0] == 0 && vcache[4] == 0);
  slot_vals[1] = 4;
  CHECK(xhal_kv_cache_write(&tkn, &tvn, &tslots, &tkcache, &tvcache, NULL) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "slot_mapping") != NULL);
  /* The same into e4m3 caches with scales 0.5 (keys) and 2 (values): codes of 2, 4 and 2.5, 3. */
  uint8_t k8[8] = {0}, v8[8] = {0};
  float k8_scale[1] = {0.5f}, v8_scale[1] = {2.0f};
  DLTensor tk8 = tensor(k8, e4m3, 4, caches), tv8 = tensor(v8, e4m3, 4, caches), tk8s = tensor(k8_scale, f32, 1, one),
           tv8s = tensor(v8_scale, f32, 1, one);
  slot_vals[1] = -1;
  CHECK(xhal_kv_cache_write_scaled(&tkn, &tvn, &tslots, &tk8, &tv8, &tk8s, &tv8s, NULL) == XHAL_OK);
  CHECK(k8[6] == 0x40 && k8[7] == 0x48 && v8[6] == 0x42 && v8[7] == 0x44 && k8[0] == 0 && v8[5] == 0);
  CHECK(xhal_kv_cache_write_scaled(&tkn, &tvn, &tslots, &tk8, &tv8, &tk8s, NULL, NULL) == XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "argument 'v_scale'") != NULL);

  /* adamw_step and global_grad_norm over a list of two parameters: with g = 1 and lr 0.5 the first
   * step moves each weight by -0.5 (m / sqrt(v) = 1 after bias correction); the norm is sqrt(3). */
  float w1[1] = {1}, w2[2] = {2, 3}, g1[1] = {1}, g2[2] = {1, 1}, m1[1] = {0}, m2[2] = {0, 0}, v1[1] = {0},
        v2[2] = {0, 0}, norm[1], clip[1];
  int64_t s1n[1] = {1}, s2n[1] = {2};
  DLTensor tw1 = tensor(w1, f32, 1, s1n), tw2 = tensor(w2, f32, 1, s2n), tg1 = tensor(g1, f32, 1, s1n),
           tg2 = tensor(g2, f32, 1, s2n), tm1 = tensor(m1, f32, 1, s1n), tm2 = tensor(m2, f32, 1, s2n),
           tv1 = tensor(v1, f32, 1, s1n), tv2 = tensor(v2, f32, 1, s2n), tnorm = tensor(norm, f32, 1, one),
           tclip = tensor(clip, f32, 1, one);
  const DLTensor *ws_list[2] = {&tw1, &tw2}, *gs_list[2] = {&tg1, &tg2}, *ms_list[2] = {&tm1, &tm2},
                 *vs_list[2] = {&tv1, &tv2};
  CHECK(xhal_global_grad_norm(2, gs_list, &tnorm, &tclip, 1.0f, NULL) == XHAL_OK);
  CHECK(fabsf(norm[0] - sqrtf(3.0f)) < 1e-6f && fabsf(clip[0] - 1.0f / sqrtf(3.0f)) < 1e-6f);
  const xhal_adamw_params hyper = {0.5f, 0.9f, 0.999f, 0.0f, 0.0f, 1};
  CHECK(xhal_adamw_step(2, ws_list, gs_list, ms_list, vs_list, NULL, NULL, NULL, &hyper, NULL) == XHAL_OK);
  CHECK(fabsf(w1[0] - 0.5f) < 1e-4f && fabsf(w2[0] - 1.5f) < 1e-4f && fabsf(w2[1] - 2.5f) < 1e-4f);
  /* A gradient whose length differs from its parameter's: named with its entry, nothing written. */
  const float w1_after = w1[0];
  gs_list[1] = &tg1;
  CHECK(xhal_adamw_step(2, ws_list, gs_list, ms_list, vs_list, NULL, NULL, NULL, &hyper, NULL) ==
        XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "xhal::ops::adamw_step: argument 'grad[1]'") != NULL);
  CHECK(w1[0] == w1_after);
  CHECK(xhal_adamw_step(2, ws_list, NULL, ms_list, vs_list, NULL, NULL, NULL, &hyper, NULL) ==
        XHAL_ERR_INVALID_ARGUMENT);
  CHECK(strstr(xhal_last_error(), "xhal_adamw_step: argument 'grads'") != NULL);

  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
