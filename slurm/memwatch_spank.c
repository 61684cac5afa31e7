/* memwatch_spank.so: a SPANK plugin that runs a Slurm job's tasks under memwatch's shim.
 *
 *   sbatch|srun|salloc --memwatch[=WORKLOAD] [--memwatch-params batch=8,dim=128]
 *                      [--memwatch-argv-params RULES] [--memwatch-config-params RULES]
 *
 * plugstack.conf arguments: shim=PATH (libmemwatch.so, required), endpoint=EP (the daemon's
 * ingest endpoint, MEMWATCH_ENDPOINT), default=on (watch every job, not only those that ask).
 *
 * On the submitting side the options go into the job's control environment (SPANK_MEMWATCH_*),
 * which is what memwatch's job_submit.lua reads to size the job. On the node the tasks get
 * LD_PRELOAD and the shim's variables; the shim tags each run with SLURM_JOB_ID/SLURM_STEP_ID
 * and the daemon stores the node's name with it. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

SPANK_PLUGIN(memwatch, 1)

enum { kTextMax = 1024, kConnectTimeoutMs = 1000 };

/* What the job asked for (set by the option callbacks, in every context). */
static int job_watched;
static char job_workload[kTextMax];
static char job_params[kTextMax];
static char job_argv_params[kTextMax];
static char job_config_params[kTextMax];

/* What the site configured (plugstack.conf). */
static char site_shim[kTextMax];
static char site_endpoint[kTextMax];
static int site_default_on;

/* Whether this node reaches the daemon: decided once per step, in slurmstepd before the tasks
 * fork, so every task of the step agrees. */
static int daemon_reachable = 1;

static int copy_text(char* to, const char* from, const char* what) {
  if (from == NULL) from = "";
  if (strlen(from) >= kTextMax) {
    slurm_error("memwatch: %s is longer than %d characters", what, kTextMax - 1);
    return -1;
  }
  strcpy(to, from);
  return 0;
}

/* Workload names as the shim takes them: letters, digits, '_', '-', '.', at most 63. */
static int valid_workload(const char* name) {
  size_t n = strlen(name);
  if (n == 0 || n > 63) return 0;
  for (size_t i = 0; i < n; ++i) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-' || c == '.'))
      return 0;
  }
  return 1;
}

static int on_memwatch(int val, const char* value, int remote) {
  (void)val;
  (void)remote;
  job_watched = 1;
  if (value == NULL || *value == '\0') return 0;
  if (!valid_workload(value)) {
    slurm_error(
        "memwatch: --memwatch=%s: a workload name is letters, digits, '_', '-', '.' "
        "(at most 63)",
        value);
    return -1;
  }
  return copy_text(job_workload, value, "--memwatch");
}

static int on_params(int val, const char* value, int remote) {
  (void)val;
  (void)remote;
  job_watched = 1;
  return copy_text(job_params, value, "--memwatch-params");
}

static int on_argv_params(int val, const char* value, int remote) {
  (void)val;
  (void)remote;
  job_watched = 1;
  return copy_text(job_argv_params, value, "--memwatch-argv-params");
}

static int on_config_params(int val, const char* value, int remote) {
  (void)val;
  (void)remote;
  job_watched = 1;
  return copy_text(job_config_params, value, "--memwatch-config-params");
}

static struct spank_option options[] = {
    {"memwatch", "WORKLOAD",
     "Measure the job's memory with memwatch and size it from its model (WORKLOAD: the "
     "workload's name; default: the program's)",
     2, 0, on_memwatch},
    {"memwatch-params", "LIST",
     "The job's parameters for memwatch, name=number[,name=number...] (batch=8,dim=128)", 1, 0,
     on_params},
    {"memwatch-argv-params", "RULES",
     "Take memwatch's parameters from the program's flags (--batch-size:batch,...)", 1, 0,
     on_argv_params},
    {"memwatch-config-params", "RULES",
     "Take memwatch's parameters from the program's config file (--config:train.batch:batch,...)",
     1, 0, on_config_params},
    SPANK_OPTIONS_TABLE_END};

static int read_site_arguments(int ac, char** av) {
  for (int i = 0; i < ac; ++i) {
    if (strncmp(av[i], "shim=", 5) == 0) {
      if (copy_text(site_shim, av[i] + 5, "shim=") != 0) return -1;
    } else if (strncmp(av[i], "endpoint=", 9) == 0) {
      if (copy_text(site_endpoint, av[i] + 9, "endpoint=") != 0) return -1;
    } else if (strcmp(av[i], "default=on") == 0) {
      site_default_on = 1;
    } else if (strcmp(av[i], "default=off") == 0) {
      site_default_on = 0;
    } else {
      slurm_error(
          "memwatch: unknown plugstack.conf argument '%s' (known: shim=PATH, "
          "endpoint=EP, default=on|off)",
          av[i]);
      return -1;
    }
  }
  return 0;
}

int slurm_spank_init(spank_t sp, int ac, char** av) {
  if (read_site_arguments(ac, av) != 0) return -1;
  for (struct spank_option* o = options; o->name != NULL; ++o)
    if (spank_option_register(sp, o) != ESPANK_SUCCESS) return -1;
  return 0;
}

/* On the submitting side: hand the request to the controller, where job_submit.lua reads it. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (spank_remote(sp) || !job_watched) return 0;
  const spank_context_t context = spank_context();
  if (context != S_CTX_LOCAL && context != S_CTX_ALLOCATOR) return 0;
  const struct {
    const char* name;
    const char* value;
  } control[] = {{"MEMWATCH_WORKLOAD", job_workload}, {"MEMWATCH_PARAMS", job_params}};
  for (size_t i = 0; i < sizeof control / sizeof control[0]; ++i)
    if (control[i].value[0] != '\0')
      spank_job_control_setenv(sp, control[i].name, control[i].value, 1);
  return 0;
}

/* Connects to the daemon's ingest endpoint and hangs up: a reachable daemon accepts. */
static int endpoint_reachable(const char* endpoint) {
  if (strncmp(endpoint, "ipc://", 6) == 0) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(endpoint + 6) >= sizeof address.sun_path) return 0;
    strcpy(address.sun_path, endpoint + 6);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    const int ok = connect(fd, (struct sockaddr*)&address, sizeof address) == 0;
    close(fd);
    return ok;
  }
  if (strncmp(endpoint, "tcp://", 6) != 0) return 1; /* a transport we cannot probe: try it */
  char host[kTextMax];
  strcpy(host, endpoint + 6);
  char* colon = strrchr(host, ':');
  if (colon == NULL) return 0;
  *colon = '\0';
  const char* port = colon + 1;
  const char* name = host;
  if (name[0] == '[') { /* tcp://[::1]:5555 */
    ++name;
    char* close_bracket = strchr(name, ']');
    if (close_bracket != NULL) *close_bracket = '\0';
  }
  if (strcmp(name, "*") == 0 || name[0] == '\0') name = "127.0.0.1";
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
  struct addrinfo* found = NULL;
  if (getaddrinfo(name, port, &hints, &found) != 0) return 0;
  int ok = 0;
  for (struct addrinfo* a = found; a != NULL && !ok; a = a->ai_next) {
    const int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ok = 1;
    } else if (errno == EINPROGRESS) {
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      int error = 0;
      socklen_t length = sizeof error;
      ok = poll(&p, 1, kConnectTimeoutMs) == 1 &&
           getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
    }
    close(fd);
  }
  freeaddrinfo(found);
  return ok;
}

static int step_is_watched(void) {
  return job_watched || site_default_on;
}

int slurm_spank_user_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!spank_remote(sp) || !step_is_watched()) return 0;
  if (site_shim[0] == '\0' || access(site_shim, R_OK) != 0) {
    daemon_reachable = 0;
    return 0;
  }
  daemon_reachable = site_endpoint[0] == '\0' || endpoint_reachable(site_endpoint);
  return 0;
}

static void set_task_env(spank_t sp, const char* name, const char* value) {
  if (value[0] != '\0') spank_setenv(sp, name, value, 1);
}

/* LD_PRELOAD with the shim after whatever the job preloads itself; once, as a step started from
 * a watched batch script inherits the script's LD_PRELOAD. */
static void add_preload(spank_t sp) {
  char current[kTextMax];
  char preload[2 * kTextMax + 2];
  if (spank_getenv(sp, "LD_PRELOAD", current, sizeof current) != ESPANK_SUCCESS) current[0] = '\0';
  if (strstr(current, site_shim) != NULL) return;
  if (current[0] != '\0')
    snprintf(preload, sizeof preload, "%s:%s", current, site_shim);
  else
    snprintf(preload, sizeof preload, "%s", site_shim);
  spank_setenv(sp, "LD_PRELOAD", preload, 1);
}

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!spank_remote(sp) || !step_is_watched()) return 0;
  if (!daemon_reachable) {
    uint32_t task = 0;
    spank_get_item(sp, S_TASK_GLOBAL_ID, &task);
    if (task == 0) {
      char node[256] = "this node";
      if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof node) != ESPANK_SUCCESS)
        gethostname(node, sizeof node);
      if (site_shim[0] == '\0' || access(site_shim, R_OK) != 0)
        fprintf(stderr,
                "memwatch: the shim '%s' is not readable on %s; the job runs without "
                "memwatch\n",
                site_shim, node);
      else
        fprintf(stderr,
                "memwatch: memwatchd at %s cannot be reached from %s; the job runs "
                "without memwatch\n",
                site_endpoint, node);
      fflush(stderr);
    }
    return 0;
  }
  add_preload(sp);
  /* Each task of a step is a run of its own, tagged with the step: not a member of the batch
   * script's run, whose MEMWATCH_JOB the step inherits from srun's environment. */
  spank_unsetenv(sp, "MEMWATCH_JOB");
  set_task_env(sp, "MEMWATCH_ENDPOINT", site_endpoint);
  set_task_env(sp, "MEMWATCH_WORKLOAD", job_workload);
  set_task_env(sp, "MEMWATCH_PARAMS", job_params);
  set_task_env(sp, "MEMWATCH_ARGV_PARAMS", job_argv_params);
  set_task_env(sp, "MEMWATCH_CONFIG_PARAMS", job_config_params);
  /* Slurm sets no SLURM_STEP_ID in a batch script; sacct calls that step JOBID.batch. A step
   * started from the script inherits the tag and has its own (SLURM_STEP_ID). */
  uint32_t job_id = 0, step_id = 0;
  if (spank_get_item(sp, S_JOB_STEPID, &step_id) == ESPANK_SUCCESS &&
      step_id == SLURM_BATCH_SCRIPT && spank_get_item(sp, S_JOB_ID, &job_id) == ESPANK_SUCCESS) {
    char tag[32];
    snprintf(tag, sizeof tag, "%u.batch", job_id);
    spank_setenv(sp, "MEMWATCH_SCHEDULER_JOB", tag, 1);
  } else {
    spank_unsetenv(sp, "MEMWATCH_SCHEDULER_JOB");
  }
  /* The job's own allocation is the capacity a run is judged against, unless the user says. */
  char capacity[64];
  uint64_t allocated_mb = 0;
  if (spank_getenv(sp, "MEMWATCH_CAPACITY", capacity, sizeof capacity) != ESPANK_SUCCESS &&
      spank_get_item(sp, S_JOB_ALLOC_MEM, &allocated_mb) == ESPANK_SUCCESS && allocated_mb > 0) {
    snprintf(capacity, sizeof capacity, "host=%lluMiB", (unsigned long long)allocated_mb);
    spank_setenv(sp, "MEMWATCH_CAPACITY", capacity, 1);
  }
  return 0;
}
