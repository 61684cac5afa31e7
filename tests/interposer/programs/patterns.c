/* Programs with known allocation patterns, run under libmemwatch.so by the tests. Each pattern
 * tracks its own expectation with malloc_usable_size (the bytes the allocator set aside, which
 * is what memwatch counts) and prints {"peak":..,"live":..} relative to the program's start,
 * after the peak and after freeing, so its own stdio buffer cannot move the peak. It knows
 * nothing of memwatch. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1024L * 1024L)

static long g_live, g_peak;       /* heap, as the program sees it */
static long g_mmap_live, g_mmap_peak, g_host_peak;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void note(long heap_delta, long mmap_delta) {
  pthread_mutex_lock(&g_lock);
  g_live += heap_delta;
  g_mmap_live += mmap_delta;
  if (g_live > g_peak) g_peak = g_live;
  if (g_mmap_live > g_mmap_peak) g_mmap_peak = g_mmap_live;
  if (g_live + g_mmap_live > g_host_peak) g_host_peak = g_live + g_mmap_live;
  pthread_mutex_unlock(&g_lock);
}

static void* take(void* p) {
  if (p == NULL) abort();
  memset(p, 1, malloc_usable_size(p)); /* touch it, as a real program would */
  note((long)malloc_usable_size(p), 0);
  return p;
}

static void give(void* p) {
  note(-(long)malloc_usable_size(p), 0);
  free(p);
}

/* Output goes through write(2) from a stack buffer: stdio's buffer would be an allocation of
 * its own that a never-freeing pattern would carry into its peak. */
static void say(const char* format, ...) __attribute__((format(printf, 1, 2)));
static void say(const char* format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(line, sizeof line, format, args);
  va_end(args);
  if (n > 0 && write(STDOUT_FILENO, line, (size_t)n) < 0) abort();
}

static void print_expected(void) {
  say("{\"peak\":%ld,\"live\":%ld,\"mmap_peak\":%ld,\"host_peak\":%ld}\n", g_peak, g_live,
      g_mmap_peak, g_host_peak);
}

static void* resized(long old_bytes, void* block) {
  if (block == NULL) abort();
  note((long)malloc_usable_size(block) - old_bytes, 0);
  return block;
}

/* Every heap path, with a peak in the middle. */
static void heap_paths(void) {
  void* a = take(malloc(1 * MiB));
  void* b = take(calloc(256, 4096));
  long before = (long)malloc_usable_size(a);
  a = resized(before, realloc(a, 3 * MiB));
  void* c = NULL;
  if (posix_memalign(&c, 64, 2 * MiB) != 0) abort();
  take(c);
  void* d = take(aligned_alloc(4096, 1 * MiB));
  void* e = take(memalign(256, 512 * 1024));
  void* f = take(valloc(1 * MiB));
  void* g = take(pvalloc(1 * MiB + 1));
  /* Small blocks: counted exactly when the test sets MEMWATCH_BATCH_BYTES=0. */
  void* small[64];
  for (int i = 0; i < 64; ++i) small[i] = take(malloc((size_t)(16 + 24 * i)));
  void* r = take(reallocarray(NULL, 1000, 100));
  before = (long)malloc_usable_size(r);
  r = resized(before, reallocarray(r, 3000, 100));
  before = (long)malloc_usable_size(a);
  a = resized(before, realloc(a, 512 * 1024)); /* shrink */
  for (int i = 0; i < 64; ++i) give(small[i]);
  give(r);
  give(a);
  give(b);
  give(c);
  give(d);
  give(e);
  give(f);
  give(g);
  /* A second, lower hill: the peak must stay the first one. */
  void* h = take(malloc(2 * MiB));
  give(h);
}

static void* map_anon(size_t len, int prot, int flags) {
  void* p = mmap(NULL, len, prot, flags | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) abort();
  return p;
}

/* Anonymous mappings beside the heap; file, shared and PROT_NONE mappings are not counted. */
static void mmap_beside_heap(const char* self) {
  void* heap = take(malloc(8 * MiB));
  char* m = map_anon(16 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE);
  note(0, 16 * MiB);
  memset(m, 2, 16 * MiB);
  /* Unmap 4 MiB from the middle: two mappings remain. */
  if (munmap(m + 6 * MiB, 4 * MiB) != 0) abort();
  note(0, -4 * MiB);
  /* Grow the tail piece (6 MiB) to 14 MiB, wherever it lands. */
  char* tail = mremap(m + 10 * MiB, 6 * MiB, 14 * MiB, MREMAP_MAYMOVE);
  if (tail == MAP_FAILED) abort();
  note(0, 8 * MiB);
  /* Not counted: shared anonymous, a reservation, a file. */
  void* shared = map_anon(32 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED);
  void* reserved = map_anon(64 * MiB, PROT_NONE, MAP_PRIVATE);
  int fd = open(self, O_RDONLY);
  void* file = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  if (file == MAP_FAILED) abort();
  munmap(file, 4096);
  close(fd);
  munmap(shared, 32 * MiB);
  munmap(reserved, 64 * MiB);
  /* An unmap of a range never mapped counts nothing. */
  munmap(m + 6 * MiB, 4 * MiB);
  munmap(m, 6 * MiB);
  note(0, -6 * MiB);
  munmap(tail, 14 * MiB);
  note(0, -14 * MiB);
  give(heap);
}

struct hold_args {
  pthread_barrier_t* barrier;
  size_t bytes;
};

static void* hold(void* arg) {
  struct hold_args* a = arg;
  void* p = take(malloc(a->bytes));
  pthread_barrier_wait(a->barrier); /* both hold */
  pthread_barrier_wait(a->barrier);
  give(p);
  return NULL;
}

/* Two threads holding at once: the peak is their sum. */
static void threads_hold(void) {
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, 3);
  struct hold_args a = {&barrier, 24 * MiB}, b = {&barrier, 40 * MiB};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, hold, &a);
  pthread_create(&tb, NULL, hold, &b);
  pthread_barrier_wait(&barrier);
  pthread_barrier_wait(&barrier);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
}

static void* free_all(void* arg) {
  void** blocks = arg;
  for (int i = 0; i < 10; ++i) give(blocks[i]);
  return NULL;
}

/* Allocated on one thread, freed on another. */
static void cross_thread_free(void) {
  void* blocks[10];
  for (int i = 0; i < 10; ++i) blocks[i] = take(malloc(1 * MiB));
  pthread_t t;
  pthread_create(&t, NULL, free_all, blocks);
  pthread_join(t, NULL);
}

/* Allocates and never frees. */
static void never_free(void) {
  for (int i = 0; i < 5; ++i) take(malloc(1 * MiB));
}

/* The parent holds 8 MiB, the child adds 4 MiB on top of what it inherited. */
static void fork_child(void) {
  void* held = take(malloc(8 * MiB));
  pid_t pid = fork();
  if (pid == 0) {
    void* more = take(malloc(4 * MiB));
    give(more);
    say("{\"child\":%d,\"peak\":%ld}\n", getpid(), g_peak);
    exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  void* after = take(malloc(2 * MiB));
  give(after);
  give(held);
}

/* Grows by STEP MiB every STEP_MS until TOTAL MiB, holds them HOLD_MS, frees them: a steady
 * climb (or, with STEP = TOTAL, a flat level) for the capacity watch. */
static void grow(long total, long step, long step_ms, long hold_ms) {
  enum { kMaxBlocks = 4096 };
  static void* blocks[kMaxBlocks];
  int n = 0;
  for (long held = 0; held + step <= total && n < kMaxBlocks; held += step) {
    blocks[n++] = take(malloc((size_t)step * MiB));
    usleep((useconds_t)(step_ms * 1000));
  }
  usleep((useconds_t)(hold_ms * 1000));
  while (n > 0) give(blocks[--n]);
}

static void output_checksum(void) {
  unsigned long sum = 0;
  for (int round = 0; round < 50; ++round) {
    size_t n = (size_t)(1000 + round * 7919);
    unsigned char* p = malloc(n);
    for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(i * 31 + round);
    p = realloc(p, n * 2);
    for (size_t i = 0; i < n; ++i) sum = sum * 131 + p[i];
    free(p);
  }
  say("checksum %lu\n", sum);
}

static void* exit_later(void* arg) {
  (void)arg;
  take(malloc(3 * MiB));
  exit(7);
}

static int errno_kept(void) {
  errno = 4242;
  void* p = malloc(100);
  free(p);
  void* big = malloc(4 * MiB);
  free(big);
  void* m = map_anon(1 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE);
  munmap(m, 1 * MiB);
  int kept = errno == 4242;
  /* And a failing call still reports its own error. */
  errno = 0;
  int bad = munmap((void*)1, 4096) == -1 && errno == EINVAL;
  say("{\"errno_kept\":%d,\"error_reported\":%d}\n", kept, bad);
  return 0;
}

/* A C program (python3 is one) that loads the C++ runtime later, as extension modules do: the
 * operator new that the global scope gives its C++ libraries is counted like any malloc. */
static void cxx_new_after_dlopen(void) {
  if (dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL) == NULL) abort();
  void* (*new_block)(size_t) = (void* (*)(size_t))dlsym(RTLD_DEFAULT, "_Znwm");
  void (*delete_block)(void*) = (void (*)(void*))dlsym(RTLD_DEFAULT, "_ZdlPv");
  if (new_block == NULL || delete_block == NULL) abort();
  void* p = take(new_block(24 * MiB));
  note(-(long)malloc_usable_size(p), 0);
  delete_block(p);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    say("usage: %s PATTERN\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  if (strcmp(mode, "none") == 0) return 0;
  if (strcmp(mode, "heap_paths") == 0) heap_paths();
  else if (strcmp(mode, "mmap_beside_heap") == 0) mmap_beside_heap(argv[0]);
  else if (strcmp(mode, "threads_hold") == 0) threads_hold();
  else if (strcmp(mode, "cross_thread_free") == 0) cross_thread_free();
  else if (strcmp(mode, "never_free") == 0) never_free();
  else if (strcmp(mode, "fork") == 0) fork_child();
  else if (strcmp(mode, "checksum") == 0) { output_checksum(); return 0; }
  else if (strcmp(mode, "errno") == 0) return errno_kept();
  else if (strcmp(mode, "cxx_new_after_dlopen") == 0) cxx_new_after_dlopen();
  else if (strcmp(mode, "exec") == 0) {
    take(malloc(16 * MiB));
    char* args[] = {argv[0], "exec_child", NULL};
    execv(argv[0], args);
    return 1;
  } else if (strcmp(mode, "exec_child") == 0) {
    void* p = take(malloc(3 * MiB));
    give(p);
    say("{\"peak\":%ld,\"preload\":\"%s\"}\n", g_peak, getenv("LD_PRELOAD") ? "set" : "unset");
    return 0;
  } else if (strcmp(mode, "exit_from_thread") == 0) {
    pthread_t t;
    pthread_create(&t, NULL, exit_later, NULL);
    pthread_join(t, NULL);
    return 0;
  } else if (strcmp(mode, "alloc_mib") == 0 && argc > 2) {
    /* A workload whose peak is its parameter: N MiB held at once. */
    void* p = take(malloc((size_t)atol(argv[2]) * MiB));
    give(p);
  } else if (strcmp(mode, "grow") == 0 && argc > 5) {
    grow(atol(argv[2]), atol(argv[3]), atol(argv[4]), atol(argv[5]));
  } else if (strcmp(mode, "underscore_exit") == 0) {
    take(malloc(2 * MiB));
    _exit(5);
  } else if (strcmp(mode, "vfork") == 0) {
    /* A vfork child shares our memory: its _exit must not write or spoil our report. */
    pid_t pid = vfork();
    if (pid == 0) {
      execl("/nonexistent/program", "program", (char*)NULL);
      _exit(3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    void* p = take(malloc(4 * MiB));
    give(p);
  } else if (strcmp(mode, "abort") == 0) {
    take(malloc(6 * MiB));
    abort();
  } else if (strcmp(mode, "hold") == 0) {
    take(malloc(20 * MiB));
    say("ready\n");
    for (;;) pause();
  } else {
    say("unknown pattern %s\n", mode);
    return 2;
  }
  print_expected();
  return 0;
}
