/* Calls functions compiled ahead of time by `tirc build` (see README.md) and checks them
 * against plain C. Exit status 0 when every result matches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"

int main(void) {
  int failures = 0;

  /* scale_add(n, alpha, X, Y) -> Z: scalars by value, then buffers, then outputs. */
  enum { N = 1000 };
  float* x = malloc(N * sizeof(float));
  float* y = malloc(N * sizeof(float));
  float* z = malloc(N * sizeof(float));
  for (int i = 0; i < N; ++i) {
    x[i] = (float)i * 0.5f;
    y[i] = 1.0f - (float)i;
  }
  if (scale_add(N, 2.0f, x, y, z) != 0) ++failures;
  for (int i = 0; i < N; ++i)
    if (z[i] != 2.0f * x[i] + y[i]) {
      printf("scale_add: z[%d] = %g, expected %g\n", i, z[i], 2.0f * x[i] + y[i]);
      ++failures;
      break;
    }

  /* matmul(A, B) -> C with the file's schedule (parallel + vectorized). */
  static float a[64 * 48], b[48 * 32], c[64 * 32];
  for (int i = 0; i < 64 * 48; ++i) a[i] = (float)((i * 7) % 13) - 6.0f;
  for (int i = 0; i < 48 * 32; ++i) b[i] = (float)((i * 5) % 11) * 0.25f;
  if (matmul(a, b, c) != 0) ++failures;
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 32; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < 48; ++k) acc = acc + a[i * 48 + k] * b[k * 32 + j];
      if (fabsf(c[i * 32 + j] - acc) > 1e-4f) {
        printf("matmul: C[%d, %d] = %g, expected %g\n", i, j, c[i * 32 + j], acc);
        ++failures;
        i = 64;
        break;
      }
    }

  free(x);
  free(y);
  free(z);
  printf(failures ? "FAILED\n" : "ok\n");
  return failures ? 1 : 0;
}
