/* A library named like a plugin of no known backend, whose constructor leaves a mark: found in the
 * search path it must not be opened (opening runs this constructor before anything is checked). */
#include <stdlib.h>

__attribute__((constructor)) static void mark_opened(void) { setenv("XHAL_TEST_PROBE_CONSTRUCTED", "1", 1); }
