/* libxhal opened through a relative path, after which the program changes directory: the plugins
 * must still come from libxhal's directory (resolved to an absolute path when the library loaded),
 * so the cpu plugin is found and there is at least one device.
 * Usage: xhal_relative_load_test DIR FILE   (DIR holds libxhal as FILE and the cpu plugin) */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

typedef int (*device_count_fn)(int32_t* count);

int main(int argc, char** argv) {
  if (argc != 3 || chdir(argv[1]) != 0) {
    fprintf(stderr, "usage: %s DIR FILE (DIR must exist)\n", argv[0]);
    return 2;
  }
  char relative[4096];
  snprintf(relative, sizeof relative, "./%s", argv[2]);
  void* xhal = dlopen(relative, RTLD_NOW | RTLD_LOCAL);
  if (xhal == NULL) {
    fprintf(stderr, "cannot open %s: %s\n", relative, dlerror());
    return 2;
  }
  if (chdir("/") != 0) return 2;
  device_count_fn device_count = (device_count_fn)dlsym(xhal, "xhal_device_count");
  int32_t count = 0;
  if (device_count == NULL || device_count(&count) != 0) {
    fprintf(stderr, "xhal_device_count failed\n");
    return 1;
  }
  printf("%d device(s) after chdir(\"/\")\n", (int)count);
  return count >= 1 ? 0 : 1;
}
