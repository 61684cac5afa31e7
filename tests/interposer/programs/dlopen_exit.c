// Loads the libraries named on its command line with dlopen, as Python loads an extension
// module, and then ends as told, running (or not) the exit paths where libraries free what their
// constructors made:
//   exit        atexit handlers, the program's and the libraries' static destructors
//   close       dlclose of every library first, then exit
//   _exit       none of them
//   segv        a real fault (a store through a null pointer)
//   raise-segv  SIGSEGV sent to itself, which is not a fault: nothing re-executes
//   term        SIGTERM sent to itself
// Its output is written unbuffered, so every path shows how far it came.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(const char* text) {
  const size_t length = strlen(text);
  if (write(STDOUT_FILENO, text, length) != (ssize_t)length) _exit(5);
}

static void on_exit_handler(void) { say("atexit handler\n"); }

__attribute__((destructor)) static void on_destruction(void) { say("static destructor\n"); }

int main(int argc, char** argv) {
  if (argc < 2) {
    say("usage: dlopen_exit exit|close|_exit|segv|raise-segv|term LIBRARY...\n");
    return 2;
  }
  const char* end = argv[1];
  atexit(on_exit_handler);
  void* handles[64];
  int loaded = 0;
  for (int i = 2; i < argc && loaded < 64; ++i) {
    void* handle = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
      say("cannot load: ");
      say(dlerror());
      say("\n");
      return 3;
    }
    handles[loaded++] = handle;
    say("loaded ");
    say(argv[i]);
    say("\n");
  }
  // The program's own heap still works beside the libraries' (strdup allocates inside libc).
  char* copy = strdup("memwatch");
  char* grown = realloc(copy, 1 << 20);
  if (grown == NULL) return 4;
  free(grown);

  if (strcmp(end, "exit") == 0) return 0;
  if (strcmp(end, "close") == 0) {
    while (loaded > 0) dlclose(handles[--loaded]);
    say("closed\n");
    return 0;
  }
  if (strcmp(end, "_exit") == 0) _exit(7);
  if (strcmp(end, "segv") == 0) *(volatile int*)(uintptr_t)0 = 1;
  if (strcmp(end, "raise-segv") == 0) raise(SIGSEGV);
  if (strcmp(end, "term") == 0) raise(SIGTERM);
  say("still running\n");
  return 6;
}
