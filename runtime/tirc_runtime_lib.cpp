// Builds the C runtime (tirc_runtime.c, shared with AOT users) into the tirc library, with
// C linkage so that JIT-compiled code and AOT objects find the same symbols. System headers
// come first so that their include guards keep them out of the extern "C" block.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/tirc_runtime.h"

extern "C" {
#include "runtime/tirc_runtime.c"  // NOLINT(bugprone-suspicious-include)
}
