/* How fast could tiny's step be on two cores? A hand-written C step of the `tiny` workload
 * (MLP 64-128-128-10, tanh, batch 32, cross-entropy, SGD lr 0.1), OpenBLAS one thread per
 * call, timed three ways:
 *   one thread   - the whole step, as tracegrad's generated code runs it;
 *   two threads  - split by features ("tensor parallel"): each thread owns half of every hidden
 *                  layer's units, so it owns those columns of W1, W2 and rows of W3 and updates
 *                  them itself, and the threads meet three times a step (hidden activations,
 *                  logits' partial sums, the first layer's input-gradient partial sums);
 *   half alone   - one thread's half of that work with the other thread idle and no barriers:
 *                  the compute alone, without the data crossing between the cores.
 * The measurement behind docs/performance.md's "tiny on two cores" (ninth session).
 *
 *   L=$(python -c "import scipy_openblas32 as s; print(s.get_lib_dir())")
 *   gcc -O3 -march=native -ffast-math -o /tmp/tiny_tp benchmarks/prototypes/tiny_tensor_parallel.c \
 *       -L$L -lscipy_openblas -Wl,-rpath,$L -lpthread -lmvec -lm && /tmp/tiny_tp
 *
 * -ffast-math only lets gcc vectorize the tanh below through libmvec's expf, as tracegrad's
 * own tg_tanhf vectorizes; the products are OpenBLAS's either way. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <immintrin.h>
#define RELAX() _mm_pause()
#else
#define RELAX() ((void)0)
#endif

void scipy_cblas_sgemm(int, int, int, int, int, int, float, const float *, int, const float *, int,
                       float, float *, int);
void scipy_openblas_set_num_threads(int);
enum { ROW = 101, N_ = 111, T_ = 112 };
#define GEMM(ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc) \
  scipy_cblas_sgemm(ROW, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc)

enum { B = 32, D0 = 64, D1 = 128, D2 = 128, D3 = 10, H = D1 / 2 };
static const float lr = 0.1f;
static float X[B * D0], W1[D0 * D1], b1[D1], W2[D1 * D2], b2[D2], W3[D2 * D3], b3[D3];
static int y[B];
static float H1[B * D1], H2[B * D2], logits[B * D3], dL[2][B * D3], dH2[B * D2], dZ1[B * D1];
static float partial_logits[2][B * D3], partial_dH1[2][B * D1];

static inline float fast_tanh(float x) {
  const float e = expf(2 * fminf(fabsf(x), 10.0f));
  return copysignf(1 - 2 / (e + 1), x);
}

/* softmax cross-entropy's gradient (mean over the batch) of logits lg into d */
static void ce_grad(const float *lg, float *d) {
  for (int i = 0; i < B; i++) {
    float m = -INFINITY, s = 0;
    for (int j = 0; j < D3; j++) m = fmaxf(m, lg[i * D3 + j]);
    for (int j = 0; j < D3; j++) s += d[i * D3 + j] = expf(lg[i * D3 + j] - m);
    for (int j = 0; j < D3; j++) d[i * D3 + j] /= s * B;
    d[i * D3 + y[i]] -= 1.0f / B;
  }
}

/* bias b (n columns from c0, row stride ld) into rows of out, before a product adds to it */
static void rows_of_bias(float *out, int ld, const float *b, int c0, int n) {
  for (int i = 0; i < B; i++) memcpy(out + i * ld + c0, b + c0, n * sizeof(float));
}

/* columns [c0, c0+n) of grad's bias: b -= lr * column sums */
static void bias_step(float *b, const float *g, int ld, int c0, int n) {
  for (int j = c0; j < c0 + n; j++) {
    float s = 0;
    for (int i = 0; i < B; i++) s += g[i * ld + j];
    b[j] -= lr * s;
  }
}

static void step_one_thread(void) {
  rows_of_bias(H1, D1, b1, 0, D1);
  GEMM(N_, N_, B, D1, D0, 1, X, D0, W1, D1, 1, H1, D1);
  for (int i = 0; i < B * D1; i++) H1[i] = fast_tanh(H1[i]);
  rows_of_bias(H2, D2, b2, 0, D2);
  GEMM(N_, N_, B, D2, D1, 1, H1, D1, W2, D2, 1, H2, D2);
  for (int i = 0; i < B * D2; i++) H2[i] = fast_tanh(H2[i]);
  rows_of_bias(logits, D3, b3, 0, D3);
  GEMM(N_, N_, B, D3, D2, 1, H2, D2, W3, D3, 1, logits, D3);
  ce_grad(logits, dL[0]);
  GEMM(N_, T_, B, D2, D3, 1, dL[0], D3, W3, D3, 0, dH2, D2);
  for (int i = 0; i < B * D2; i++) dH2[i] *= 1 - H2[i] * H2[i];
  GEMM(T_, N_, D2, D3, B, -lr, H2, D2, dL[0], D3, 1, W3, D3);
  bias_step(b3, dL[0], D3, 0, D3);
  GEMM(N_, T_, B, D1, D2, 1, dH2, D2, W2, D2, 0, dZ1, D1);
  for (int i = 0; i < B * D1; i++) dZ1[i] *= 1 - H1[i] * H1[i];
  GEMM(T_, N_, D1, D2, B, -lr, H1, D1, dH2, D2, 1, W2, D2);
  bias_step(b2, dH2, D2, 0, D2);
  GEMM(T_, N_, D0, D1, B, -lr, X, D0, dZ1, D1, 1, W1, D1);
  bias_step(b1, dZ1, D1, 0, D1);
}

static atomic_long arrived[3], posted, finished;
static int skip_barriers;
static void meet(int which, long step) {
  if (skip_barriers) return;
  atomic_fetch_add(&arrived[which], 1);
  while (atomic_load(&arrived[which]) < 2 * step) RELAX();
}

/* thread t's half of the step: hidden units [c0, c0 + H) of both layers */
static void half_step(int t, long step) {
  const int c0 = t * H;
  rows_of_bias(H1, D1, b1, c0, H);
  GEMM(N_, N_, B, H, D0, 1, X, D0, W1 + c0, D1, 1, H1 + c0, D1);
  for (int i = 0; i < B; i++)
    for (int j = c0; j < c0 + H; j++) H1[i * D1 + j] = fast_tanh(H1[i * D1 + j]);
  meet(0, step); /* layer 2 reads all of H1 */
  rows_of_bias(H2, D2, b2, c0, H);
  GEMM(N_, N_, B, H, D1, 1, H1, D1, W2 + c0, D2, 1, H2 + c0, D2);
  for (int i = 0; i < B; i++)
    for (int j = c0; j < c0 + H; j++) H2[i * D2 + j] = fast_tanh(H2[i * D2 + j]);
  GEMM(N_, N_, B, D3, H, 1, H2 + c0, D2, W3 + c0 * D3, D3, 0, partial_logits[t], D3);
  meet(1, step); /* the logits are the sum of both halves' */
  float lg[B * D3];
  for (int i = 0; i < B * D3; i++) lg[i] = partial_logits[0][i] + partial_logits[1][i] + b3[i % D3];
  float *d = dL[t]; /* each thread its own copy: no line written by both */
  ce_grad(lg, d);
  GEMM(N_, T_, B, H, D3, 1, d, D3, W3 + c0 * D3, D3, 0, dH2 + c0, D2);
  for (int i = 0; i < B; i++)
    for (int j = c0; j < c0 + H; j++) dH2[i * D2 + j] *= 1 - H2[i * D2 + j] * H2[i * D2 + j];
  GEMM(T_, N_, H, D3, B, -lr, H2 + c0, D2, d, D3, 1, W3 + c0 * D3, D3);
  if (t == 0) bias_step(b3, d, D3, 0, D3);
  GEMM(N_, T_, B, D1, H, 1, dH2 + c0, D2, W2 + c0, D2, 0, partial_dH1[t], D1);
  GEMM(T_, N_, D1, H, B, -lr, H1, D1, dH2 + c0, D2, 1, W2 + c0, D2);
  bias_step(b2, dH2, D2, c0, H);
  meet(2, step); /* layer 1's input gradient is the sum of both halves' */
  for (int i = 0; i < B; i++)
    for (int j = c0; j < c0 + H; j++)
      dZ1[i * D1 + j] = (partial_dH1[0][i * D1 + j] + partial_dH1[1][i * D1 + j]) * (1 - H1[i * D1 + j] * H1[i * D1 + j]);
  GEMM(T_, N_, D0, H, B, -lr, X, D0, dZ1 + c0, D1, 1, W1 + c0, D1);
  bias_step(b1, dZ1, D1, c0, H);
}

static void *worker(void *unused) {
  (void)unused;
  for (long seen = 0;;) {
    long s;
    while ((s = atomic_load(&posted)) == seen) RELAX();
    half_step(1, seen = s);
    atomic_store(&finished, s);
  }
  return 0;
}

static long steps;
static void step_two_threads(void) {
  atomic_store(&posted, ++steps);
  half_step(0, steps);
  while (atomic_load(&finished) != steps) RELAX();
}
static void half_alone(void) { half_step(0, 0); }

static void init(void) {
  srand(1);
  for (int i = 0; i < B * D0; i++) X[i] = rand() / (float)RAND_MAX - 0.5f;
  for (int i = 0; i < D0 * D1; i++) W1[i] = (rand() / (float)RAND_MAX - 0.5f) * 0.2f;
  for (int i = 0; i < D1 * D2; i++) W2[i] = (rand() / (float)RAND_MAX - 0.5f) * 0.2f;
  for (int i = 0; i < D2 * D3; i++) W3[i] = (rand() / (float)RAND_MAX - 0.5f) * 0.2f;
  memset(b1, 0, sizeof b1), memset(b2, 0, sizeof b2), memset(b3, 0, sizeof b3);
  for (int i = 0; i < B; i++) y[i] = i % D3;
}
static double weights_sum(void) {
  double s = 0;
  for (int i = 0; i < D0 * D1; i++) s += W1[i];
  for (int i = 0; i < D1 * D2; i++) s += 1.3 * W2[i];
  for (int i = 0; i < D2 * D3; i++) s += 0.7 * W3[i];
  for (int j = 0; j < D1; j++) s += b1[j];
  return s;
}
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
enum { STEPS = 20000 };
static double median_us(void (*step)(void)) {
  static double t[STEPS];
  for (int i = 0; i < 100; i++) step();
  for (int i = 0; i < STEPS; i++) {
    const double t0 = now();
    step();
    t[i] = now() - t0;
  }
  qsort(t, STEPS, sizeof t[0], by_value);
  return 1e6 * t[STEPS / 2];
}

int main(void) {
  scipy_openblas_set_num_threads(1);
  pthread_t th;
  pthread_create(&th, 0, worker, 0);
  init();
  for (int i = 0; i < 5; i++) step_one_thread();
  const double one = weights_sum();
  init();
  for (int i = 0; i < 5; i++) step_two_threads();
  const double two = weights_sum();
  printf("same weights after 5 steps: %s (%.6f, %.6f)\n", fabs(one - two) < 1e-3 ? "yes" : "NO", one, two);
  printf("one thread:  median %.1f us\n", median_us(step_one_thread));
  printf("two threads: median %.1f us\n", median_us(step_two_threads));
  skip_barriers = 1;
  printf("half alone:  median %.1f us\n", median_us(half_alone));
  return 0;
}
