// attention and attention_varlen on Hopper through wgmma (flash_attention_sm90.cuh): preferred
// over the mma.sync kernel on sm_90 devices for D = 64 and 128 when the plugin carries sm_90a code.
#include "flash_attention_sm90.cuh"
#include "flash_launch.cuh"

namespace xhal::gpu {
namespace {

// True when `device` is compute capability 9.0, cached per device.
bool is_sm90(int device) {
  static int cc[64] = {};
  if (device < 0 || device >= 64) return false;
  if (cc[device] == 0) {
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    cc[device] = major * 10 + minor;
  }
  return cc[device] == 90;
}

const char* wgmma_supports(const xhal_op_call* c) {
  if (const char* why = flash_supports(c)) return why;
  const DLTensor* q = c->t[XHAL_SLOT_Q];
  const int64_t D = q->shape[q->ndim - 1];
  if (D != 64 && D != 128) return "head dim not 64 or 128";
  if (!is_sm90(c->device_index)) return "device is not sm_90 (wgmma)";
  return nullptr;
}

struct WgmmaFlash {
  static constexpr const char* kName = "flash attention (wgmma)";
  template <class E>
  static void launch(const xhal_op_call* c, const AttnLayout& a, const Sequences& seqs, int64_t max_rows) {
    // 64-key tiles keep the registers within two blocks per multiprocessor.
    if (a.D == 64) launch_flash_tile<E, WgmmaFlashKernels, WgmmaFlashTile<64, 64, 2>>(c, a, seqs, max_rows);
    else launch_flash_tile<E, WgmmaFlashKernels, WgmmaFlashTile<128, 64, 2>>(c, a, seqs, max_rows);
  }
};
template <class E>
using WgmmaFlashDense = FlashDense<WgmmaFlash, E>;
template <class E>
using WgmmaFlashVarlen = FlashVarlen<WgmmaFlash, E>;

}  // namespace

void register_attention_sm90_kernels(const xhal_host_api* host) {
#if defined(XHAL_CUDA_SM90A)
  const kernels::KernelTraits wgmma{20, false, wgmma_supports};
  register_half_kernels<WgmmaFlashDense>(host, "cuda.flash_attention_wgmma", XHAL_OP_ATTENTION, wgmma);
  register_half_kernels<WgmmaFlashVarlen>(host, "cuda.flash_attention_varlen_wgmma",
                                          XHAL_OP_ATTENTION_VARLEN, wgmma);
#else
  (void)host;  // built without sm_90a code: the mma.sync kernel serves Hopper too
#endif
}

}  // namespace xhal::gpu
