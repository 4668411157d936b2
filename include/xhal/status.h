/* Status codes shared by the plugin ABI and the C API. They mirror xhal::Errc one to one. */
#ifndef XHAL_STATUS_H
#define XHAL_STATUS_H

typedef enum xhal_status {
  XHAL_OK = 0,
  XHAL_ERR_INVALID_ARGUMENT = 1,
  XHAL_ERR_UNSUPPORTED = 2,
  XHAL_ERR_OUT_OF_MEMORY = 3,
  XHAL_ERR_BACKEND_UNAVAILABLE = 4,
  XHAL_ERR_DEVICE = 5,
  XHAL_ERR_COMM = 6,
  XHAL_ERR_TIMEOUT = 7,
  XHAL_ERR_INTERNAL = 8,
  XHAL_NOT_READY = 9 /* an event or stream still has work queued; not an error */
} xhal_status;

#endif
