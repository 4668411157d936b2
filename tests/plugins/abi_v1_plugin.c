/* A plugin built against ABI version 1, whose only entry point was xhal_plugin_init (with the
 * argument layout of that version): the core must refuse it with the reason, without calling init. */
#include <stdio.h>
#include <stdlib.h>

struct v1_host_api;
struct v1_plugin_api;

int xhal_plugin_init(const struct v1_host_api* host, struct v1_plugin_api* api, char* reason, size_t reason_len) {
  (void)host;
  (void)api;
  (void)reason;
  (void)reason_len;
  abort(); /* the layouts differ: calling this from a v2 core would already be the bug */
}
