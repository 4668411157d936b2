/* xhal's version. The project's build reads it from here; xhal_version() gives the version of the
 * library actually loaded, which a program can compare with the one it was compiled against.
 * docs/versioning.md says what each part promises. */
#ifndef XHAL_VERSION_H
#define XHAL_VERSION_H

#define XHAL_VERSION_MAJOR 0
#define XHAL_VERSION_MINOR 2
#define XHAL_VERSION_PATCH 0
#define XHAL_VERSION_STRING "0.2.0"

#endif
