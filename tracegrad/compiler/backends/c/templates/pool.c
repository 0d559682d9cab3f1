/* The worker thread of split programs (backends/c/batch_split.py, batch_split.c.j2): one
 * per process, in this small library of its own, which backends/c/pool.py builds once per
 * cache and never unloads (a program's library may be unloaded while the worker runs on);
 * every split program gets tg_parallel2's address at load time (tg_set_pool).
 *
 * tg_parallel2 runs fn(a0, w0) on the calling thread and fn(a1, w1) on the worker. The worker
 * spins for TG_SPIN_NS after its last job (a training loop calls again within microseconds),
 * then sleeps on a condition variable. Whoever comes first claims the second half: the caller
 * takes it itself when the worker has not started it by the time its own half is done (worker
 * asleep, or its core busy), so a call is never slower than running both halves in a row by
 * more than the wake-up; a caller that finds the worker taken by another thread's program, and
 * a child process after fork (no worker), run both halves themselves. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#define TG_SPIN_NS 200000L

typedef int (*tg_half_fn)(void **, char *);

static struct {
  pthread_mutex_t caller;      /* held by the thread whose program uses the worker */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int started;                 /* 0: no worker yet, 1: running, -1: cannot start one */
  long seq;                    /* the caller's job counter */
  atomic_long posted;          /* the last job posted */
  atomic_long claim;           /* 2 * job: open; 2 * job + 1: claimed */
  atomic_long done;            /* the last job the worker finished */
  atomic_int sleeping;
  atomic_long worker_runs;     /* jobs the worker ran (tg_pool_worker_runs: for tests) */
  tg_half_fn fn;
  void **args;
  char *ws;
  int rc;
} tg_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static inline void tg_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static long tg_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void *tg_worker(void *unused) {
  (void)unused;
  long seen = atomic_load(&tg_pool.posted);
  for (;;) {
    long s, idle_since = tg_now_ns();
    unsigned spins = 0;
    while ((s = atomic_load(&tg_pool.posted)) == seen) {
      tg_relax();
      if (++spins % 256 || tg_now_ns() - idle_since < TG_SPIN_NS) continue;
      pthread_mutex_lock(&tg_pool.mu);
      atomic_store(&tg_pool.sleeping, 1);
      while (atomic_load(&tg_pool.posted) == seen) pthread_cond_wait(&tg_pool.cv, &tg_pool.mu);
      atomic_store(&tg_pool.sleeping, 0);
      pthread_mutex_unlock(&tg_pool.mu);
    }
    seen = s;
    long open = 2 * s;
    if (atomic_compare_exchange_strong(&tg_pool.claim, &open, 2 * s + 1)) {
      tg_pool.rc = tg_pool.fn(tg_pool.args, tg_pool.ws);
      atomic_fetch_add(&tg_pool.worker_runs, 1);
      atomic_store(&tg_pool.done, s);
    }
  }
  return 0;
}

static void tg_pool_after_fork(void) {
  /* the child has no worker, and the locks may have been held at the fork */
  pthread_mutex_init(&tg_pool.caller, 0);
  pthread_mutex_init(&tg_pool.mu, 0);
  pthread_cond_init(&tg_pool.cv, 0);
  tg_pool.started = 0;
  atomic_store(&tg_pool.sleeping, 0);
}

static int tg_serial2(tg_half_fn fn, void **a0, char *w0, void **a1, char *w1) {
  int rc = fn(a0, w0);
  return rc ? rc : fn(a1, w1);
}

static atomic_int tg_threads = 2;  /* tg.set_num_threads (backends/c/threads.py) */

void tg_pool_set_threads(int n) { atomic_store(&tg_threads, n); }

long tg_pool_worker_runs(void) { return atomic_load(&tg_pool.worker_runs); }

int tg_parallel2(tg_half_fn fn, void **a0, char *w0, void **a1, char *w1) {
  if (atomic_load(&tg_threads) < 2 || pthread_mutex_trylock(&tg_pool.caller) != 0)
    return tg_serial2(fn, a0, w0, a1, w1);
  if (tg_pool.started == 0) {
    pthread_attr_t attr;
    pthread_t t;
    tg_pool.started = -1;
    if (pthread_attr_init(&attr) == 0) {
      pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
      if (pthread_create(&t, &attr, tg_worker, 0) == 0) tg_pool.started = 1;
      pthread_attr_destroy(&attr);
    }
    static int fork_handler;
    if (!fork_handler) fork_handler = pthread_atfork(0, 0, tg_pool_after_fork) == 0;
  }
  if (tg_pool.started < 0) {
    pthread_mutex_unlock(&tg_pool.caller);
    return tg_serial2(fn, a0, w0, a1, w1);
  }
  long s = ++tg_pool.seq;
  tg_pool.fn = fn;
  tg_pool.args = a1;
  tg_pool.ws = w1;
  atomic_store(&tg_pool.claim, 2 * s);
  atomic_store(&tg_pool.posted, s);
  if (atomic_load(&tg_pool.sleeping)) {
    pthread_mutex_lock(&tg_pool.mu);
    pthread_cond_signal(&tg_pool.cv);
    pthread_mutex_unlock(&tg_pool.mu);
  }
  int rc0 = fn(a0, w0), rc1;
  long open = 2 * s;
  if (atomic_compare_exchange_strong(&tg_pool.claim, &open, 2 * s + 1)) {
    rc1 = fn(a1, w1);  /* the worker had not started it: run it here */
  } else {
    /* (after a while, yield: on a busy machine the worker may be waiting for this core) */
    for (unsigned spins = 0; atomic_load(&tg_pool.done) != s; spins++) {
      if (spins < 100000) tg_relax();
      else sched_yield();
    }
    rc1 = tg_pool.rc;
  }
  pthread_mutex_unlock(&tg_pool.caller);
  return rc0 ? rc0 : rc1;
}
