// Slurm SPANK plugin: `srun --gdr=auto CMD` runs the step's tasks in the node's rail network
// namespace, set up by `gdr-harness attach` and given back by `gdr-harness detach`.
//
// The idea not to miss: every root action is the harness's, run from the privileged callbacks
// of slurmstepd (the pattern container plugins use, since Slurm's own --container runs the
// runtime as the user): slurm_spank_init_post_opt attaches the step (preparing the node on its
// first step), slurm_spank_task_init_privileged moves each task into the namespace with
// setns() before the task execs, and slurm_spank_exit detaches, so the last step of a node
// gives the rails back, also after scancel. slurmstepd's loopback ports (the PMIx server) are
// relayed into the namespace (loopback_relay.h), so MPI's wire-up works from there. The user's
// options only choose; a failure stops the step with one line naming what failed (fail closed),
// never a task outside its namespace: a task of a --gdr=auto step whose node could not be
// attached _exit()s in task_init_privileged, so that this holds under `optional` in
// plugstack.conf too (Slurm ignores an optional plugin's failed callbacks).
//
// Each task also gets a mount namespace of its own (slave to the node's): on /sys the plan's
// synthetic sysfs (`gdrproxy sysfs mount`: the rails' RDMA devices and the GPUs, their PCI paths
// as on the host, live port state) where the node's plan has one, else a fresh sysfs of the rail
// namespace (the node's sysfs lists the node's links, not the rails); either way its submounts,
// /sys/fs/cgroup and the like, are carried over; and, where the node has /dev/infiniband, a
// read-only tmpfs there holding only the uverbs nodes of the granted RDMA devices and rdma_cm
// (--gdr-grant=DEV,...: a subset of the devices of the node's plan; by default all of them;
// NCCL_IB_HCA names the granted ones only). This is placement, not a sandbox (docs/SECURITY.md).
//
// plugstack.conf arguments: harness=PATH gdrproxy=PATH default=auto|none and any number of
// env=NAME=VALUE (the node's selection settings for prepare: RDMA_IFACES, RDMA_EXCLUDE_REGEX,
// GDR_HARNESS_STATE, ...). See harness/examples/plugstack.conf.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "loopback_relay.h"

SPANK_PLUGIN(gdr, 1);

enum { kMaxEnv = 32, kLine = 1024, kMaxDev = 32, kName = 64 };

// Settings from plugstack.conf and the user's options; what attach said.
static char harness_path[kLine] = "/usr/lib/gdrproxy/gdr-harness";
static char gdrproxy_path[kLine] = "";
static char* admin_env[kMaxEnv];
static int admin_env_count;
static int mode_auto;  // --gdr=auto (or default=auto)
static int debug;      // --gdr-debug
static int attached;
static char step_key[64];
static char netns_path[kLine];
static char sysfs_plan[kLine];       // attach's sysfs_plan=: the plan's synthetic sysfs, or ""
static char attach_gdrproxy[kLine];  // attach's gdrproxy=: the absolute path the harness used
static char* task_env[kMaxEnv];
static int task_env_count;
static char grant_opt[512];    // --gdr-grant as given ("" when not given)
static int step_applies;       // a --gdr=auto step with tasks: they must end up in the namespace
static char fail_line[kLine];  // why they cannot (the tasks print it and exit)
static char dev_nodes[kMaxDev][kName];  // the granted /dev/infiniband nodes
static int dev_node_count;

static int opt_gdr(int val, const char* optarg, int remote);
static int opt_debug(int val, const char* optarg, int remote);
static int opt_grant(int val, const char* optarg, int remote);

static struct spank_option gdr_options[] = {
    {"gdr", "auto|none",
     "Run the tasks in this node's RDMA rail network namespace (auto) or not (none); the node is "
     "prepared on its first step and given back after its last",
     1, 0, opt_gdr},
    {"gdr-grant", "DEV[,DEV...]|none",
     "With --gdr=auto: the RDMA devices (ibdev names of the node's rails, e.g. mlx5_0) the tasks "
     "get in /dev/infiniband and NCCL_IB_HCA; by default every device of the node's rails",
     1, 0, opt_grant},
    {"gdr-debug", NULL,
     "Set NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH in the tasks (unless set); slower",
     0, 0, opt_debug},
    SPANK_OPTIONS_TABLE_END,
};

static int opt_gdr(int val, const char* optarg, int remote) {
  (void)val;
  (void)remote;
  if (optarg && strcmp(optarg, "auto") == 0) {
    mode_auto = 1;
  } else if (optarg && strcmp(optarg, "none") == 0) {
    mode_auto = 0;
  } else {
    slurm_error("gdr: --gdr takes auto or none");
    return -1;
  }
  return 0;
}

static int opt_debug(int val, const char* optarg, int remote) {
  (void)val;
  (void)optarg;
  (void)remote;
  debug = 1;
  return 0;
}

static int opt_grant(int val, const char* optarg, int remote) {
  (void)val;
  (void)remote;
  size_t n = optarg ? strlen(optarg) : 0;
  int ok = n > 0 && n < sizeof grant_opt && optarg[0] != ',' && optarg[n - 1] != ',';
  for (size_t i = 0; ok && i < n; ++i) {
    char c = optarg[i];
    ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || (c == ',' && optarg[i + 1] != ',');
  }
  if (!ok) {
    slurm_error(
        "gdr: --gdr-grant takes RDMA device names (letters, digits, '_', '-', '.') "
        "separated by commas, or none");
    return -1;
  }
  memcpy(grant_opt, optarg, n + 1);
  return 0;
}

// A line from a child process, made printable before it reaches Slurm's log (the harness
// quotes interface names it prints, but the line is still not ours).
static void log_printable_to(char* out, size_t size, const char* line) {
  size_t n = 0;
  for (const unsigned char* p = (const unsigned char*)line; *p && n + 5 < size; ++p) {
    if (*p >= 0x20 && *p < 0x7f && *p != '\\') {
      out[n++] = (char)*p;
    } else {
      n += (size_t)snprintf(out + n, size - n, "\\x%02x", *p);
    }
  }
  out[n] = '\0';
}

static void log_printable(const char* prefix, const char* line) {
  char out[kLine];
  log_printable_to(out, sizeof out, line);
  slurm_info("gdr: %s%s", prefix, out);
}

// Runs `timeout 120 harness ARGS...` with a clean environment (PATH, GDRPROXY, the node name,
// the admin's env= settings). Its stdout goes to out (NUL-terminated, truncated at size), its
// stderr to Slurm's log line by line, its first error line (else its last line) to last_err;
// returns its exit status, -1000 - SIGNAL when a signal killed it, or -1.
static int run_harness(const char* node, char* const args[], char* out, size_t size, char* last_err,
                       size_t last_err_size) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return -1;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return -1;
  }
  char* argv[16];
  int argc = 0;
  argv[argc++] = "timeout";
  argv[argc++] = "120";
  argv[argc++] = harness_path;
  for (int i = 0; args[i] && argc < 15; ++i) argv[argc++] = args[i];
  argv[argc] = NULL;
  static char path_env[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  char gp_env[kLine + 16], node_env[256 + 32];
  snprintf(gp_env, sizeof gp_env, "GDRPROXY=%s", gdrproxy_path);
  snprintf(node_env, sizeof node_env, "GDR_HARNESS_NODE=%s", node);
  char* envp[kMaxEnv + 4];
  int envc = 0;
  envp[envc++] = path_env;
  if (gdrproxy_path[0]) envp[envc++] = gp_env;
  envp[envc++] = node_env;
  for (int i = 0; i < admin_env_count; ++i) envp[envc++] = admin_env[i];
  envp[envc] = NULL;

  // The harness runs outside slurmstepd's process tree: slurmstepd reaps any child of its own
  // (waitpid(-1)) and, at the step's end, proctrack kills every process descending from it,
  // which would stop a detach half way. So: a child forks a runner and exits at once; the
  // runner, reparented, starts the harness, waits for it and reports its status through a pipe.
  // The runner starts the harness only once it has been reparented: proctrack/linuxproc finds a
  // step's processes by their parents in /proc, and a harness started while the child lived (a
  // loaded node, the child not yet scheduled to exit) was killed with the step.
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGCHLD, SIG_DFL);
    const pid_t middle = getpid();
    if (fork() != 0) _exit(0);
    setsid();
    for (int i = 0; i < 400 && getppid() == middle; ++i) usleep(5000);  // at most 2 s
    pid_t harness = fork();
    if (harness == 0) {
      dup2(out_pipe[1], STDOUT_FILENO);
      dup2(err_pipe[1], STDERR_FILENO);
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, STDIN_FILENO);
      execve("/usr/bin/timeout", argv, envp);
      _exit(127);
    }
    int st = 0, code = -1;
    while (harness > 0 && waitpid(harness, &st, 0) < 0 && errno == EINTR) {
    }
    if (harness > 0 && WIFEXITED(st)) code = WEXITSTATUS(st);
    if (harness > 0 && WIFSIGNALED(st)) code = -1000 - WTERMSIG(st);  // said by the caller
    if (write(status_pipe[1], &code, sizeof code) != sizeof code) _exit(1);
    _exit(0);
  }
  close(status_pipe[1]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  // stdout is short (a few lines); stderr is read after it, line by line.
  size_t n = 0;
  for (;;) {
    ssize_t r = read(out_pipe[0], out + n, n + 1 < size ? size - n - 1 : 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
  }
  out[n] = '\0';
  close(out_pipe[0]);
  FILE* err = fdopen(err_pipe[0], "r");
  if (err) {
    char line[kLine];
    int have_error = 0;  // the first "error:" line names the cause; later ones the consequence
    while (fgets(line, sizeof line, err)) {
      line[strcspn(line, "\n")] = '\0';
      log_printable("", line);
      if (last_err && !have_error) snprintf(last_err, last_err_size, "%s", line);
      have_error |= strstr(line, "error:") != NULL;
    }
    fclose(err);
  } else {
    close(err_pipe[0]);
  }
  int code = -1;
  ssize_t got;
  while ((got = read(status_pipe[0], &code, sizeof code)) < 0 && errno == EINTR) {
  }
  close(status_pipe[0]);
  waitpid(pid, NULL, 0);  // or slurmstepd has reaped it already
  return got == sizeof code ? code : -1;
}

int slurm_spank_init(spank_t sp, int ac, char** av) {
  for (int i = 0; i < ac; ++i) {
    if (strncmp(av[i], "harness=", 8) == 0) {
      snprintf(harness_path, sizeof harness_path, "%s", av[i] + 8);
    } else if (strncmp(av[i], "gdrproxy=", 9) == 0) {
      snprintf(gdrproxy_path, sizeof gdrproxy_path, "%s", av[i] + 9);
    } else if (strcmp(av[i], "default=auto") == 0) {
      mode_auto = 1;
    } else if (strcmp(av[i], "default=none") == 0) {
      mode_auto = 0;
    } else if (strncmp(av[i], "env=", 4) == 0 && strchr(av[i] + 4, '=') &&
               admin_env_count < kMaxEnv) {
      admin_env[admin_env_count++] = av[i] + 4;
    } else {
      slurm_error("gdr: unknown plugstack.conf argument '%s' (harness= gdrproxy= default= env=)",
                  av[i]);
      return -1;
    }
  }
  for (struct spank_option* o = gdr_options; o->name; ++o) {
    if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
      slurm_error("gdr: cannot register option --%s", o->name);
      return -1;
    }
  }
  return 0;
}

// The node's name: the slurmd's, as the job sees it; the host name otherwise.
static void node_name(spank_t sp, char* buf, int len) {
  if (spank_getenv(sp, "SLURMD_NODENAME", buf, len) == ESPANK_SUCCESS && buf[0]) return;
  if (gethostname(buf, (size_t)len) != 0) snprintf(buf, (size_t)len, "unknown");
  buf[len - 1] = '\0';
}

// The step's tasks cannot be placed: says so once in slurmstepd's log and keeps the line for
// the tasks, which print it again and exit (fail closed). Returns -1.
static int fail_step(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail_step(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(fail_line, sizeof fail_line, fmt, ap);
  va_end(ap);
  slurm_error("%s", fail_line);
  return -1;
}

// Runs the harness's detach for this step (the last step of the node gives the rails back).
static int detach_step(spank_t sp) {
  char node[256];
  node_name(sp, node, sizeof node);
  char out[1024], last_err[kLine] = "";
  char* args[] = {"detach", "--key", step_key, NULL};
  int rc = run_harness(node, args, out, sizeof out, last_err, sizeof last_err);
  if (rc <= -1000) {
    slurm_error(
        "gdr: %s detach --key %s on node %s was killed by signal %d; run gdr-harness "
        "teardown there",
        harness_path, step_key, node, -1000 - rc);
    return -1;
  }
  if (rc != 0) {
    slurm_error(
        "gdr: %s detach --key %s failed on node %s (status %d): %s; run gdr-harness "
        "teardown there",
        harness_path, step_key, node, rc, last_err[0] ? last_err : "no message");
    return -1;
  }
  attached = 0;
  return 0;
}

// The task environment entry NAME=..., or NULL.
static char** task_env_entry(const char* name) {
  size_t n = strlen(name);
  for (int i = 0; i < task_env_count; ++i) {
    if (strncmp(task_env[i], name, n) == 0 && task_env[i][n] == '=') return &task_env[i];
  }
  return NULL;
}

// Whether name is an element of the comma-separated list (a ":port" after a name is ignored).
static int in_list(const char* list, const char* name) {
  size_t n = strlen(name);
  for (const char* p = list; *p;) {
    size_t len = strcspn(p, ",");
    size_t name_len = strcspn(p, ":,");
    if (name_len == n && strncmp(p, name, n) == 0) return 1;
    p += len;
    if (*p == ',') ++p;
  }
  return 0;
}

// Adds the uverbs node(s) whose /sys/class/infiniband_verbs/uverbsN/ibdev names `ibdev` to the
// granted nodes; whether there was one.
static int uverbs_by_ibdev(const char* ibdev) {
  DIR* d = opendir("/sys/class/infiniband_verbs");
  int found = 0;
  for (struct dirent* e; d && (e = readdir(d));) {
    if (strncmp(e->d_name, "uverbs", 6) != 0 || dev_node_count >= kMaxDev) continue;
    char path[kLine], text[kName + 2] = "";
    snprintf(path, sizeof path, "/sys/class/infiniband_verbs/%.63s/ibdev", e->d_name);
    FILE* f = fopen(path, "r");
    if (!f) continue;
    if (!fgets(text, sizeof text, f)) text[0] = '\0';
    fclose(f);
    text[strcspn(text, "\n")] = '\0';
    if (strcmp(text, ibdev) != 0) continue;
    snprintf(dev_nodes[dev_node_count++], kName, "%.63s", e->d_name);
    found = 1;
  }
  if (d) closedir(d);
  return found;
}

// The granted RDMA devices: --gdr-grant checked against the plan's (NCCL_IB_HCA's entries,
// "=mlx5_0:1,mlx5_1:1"), NCCL_IB_HCA narrowed to them, and their uverbs nodes found in sysfs.
static int apply_grants(const char* node) {
  char** hca_entry = task_env_entry("NCCL_IB_HCA");
  const char* plan = "";
  if (hca_entry) {
    plan = *hca_entry + strlen("NCCL_IB_HCA=");
    if (*plan == '=') ++plan;
  }
  char granted[1024] = "";  // NCCL_IB_HCA's entries for the granted devices, with their ports
  size_t used = 0;
  if (grant_opt[0] && strcmp(grant_opt, "none") != 0) {
    char names[sizeof grant_opt];
    memcpy(names, grant_opt, sizeof names);
    for (char *save = NULL, *name = strtok_r(names, ",", &save); name;
         name = strtok_r(NULL, ",", &save)) {
      if (!in_list(plan, name))
        return fail_step("gdr: --gdr-grant: %s is not an RDMA device of node %s's rails (%s)", name,
                         node, plan[0] ? plan : "they have none");
    }
  }
  for (const char* p = plan; *p;) {
    size_t len = strcspn(p, ",");
    char entry[kName * 2];
    snprintf(entry, sizeof entry, "%.*s", (int)len, p);
    p += len;
    if (*p == ',') ++p;
    char name[kName];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(entry, ":"), entry);
    if (grant_opt[0] && (strcmp(grant_opt, "none") == 0 || !in_list(grant_opt, name))) continue;
    int seen = used > 0 && in_list(granted + 1, name);  // another port of a device already in
    used +=
        (size_t)snprintf(granted + used, sizeof granted - used, "%s%s", used ? "," : "=", entry);
    if (seen) continue;
    // Its uverbs node(s), as the kernel links them under the device.
    char dir[kLine];
    snprintf(dir, sizeof dir, "/sys/class/infiniband/%s/device/infiniband_verbs", name);
    DIR* d = opendir(dir);
    int found = 0;
    for (struct dirent* e; d && (e = readdir(d));) {
      if (strncmp(e->d_name, "uverbs", 6) != 0 || dev_node_count >= kMaxDev) continue;
      snprintf(dev_nodes[dev_node_count++], kName, "%.63s", e->d_name);
      found = 1;
    }
    if (d) closedir(d);
    // A device on no bus (soft-RoCE: rxe) has no device link: its node names it in its ibdev file.
    if (!d) found = uverbs_by_ibdev(name);
    if (!found)
      return fail_step("gdr: RDMA device %s of node %s has no uverbs node under %s", name, node,
                       d ? dir : "/sys/class/infiniband_verbs (by ibdev)");
  }
  if (dev_node_count > 0 && dev_node_count < kMaxDev)
    snprintf(dev_nodes[dev_node_count++], kName, "rdma_cm");
  if (hca_entry) {
    free(*hca_entry);
    if (used) {
      char line[sizeof granted + 16];
      snprintf(line, sizeof line, "NCCL_IB_HCA=%s", granted);
      *hca_entry = strdup(line);
    } else {
      // No device granted: no NCCL_IB_HCA at all (NCCL then finds no RDMA device to use).
      *hca_entry = task_env[--task_env_count];
    }
  }
  return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  int remote = spank_context() == S_CTX_REMOTE;
  if (grant_opt[0] && !mode_auto) {
    step_applies = remote;  // refused here, and by the tasks where Slurm ignores that
    return fail_step("gdr: --gdr-grant needs --gdr=auto");
  }
  if (!remote || !mode_auto) return 0;
  uint32_t job = 0, step = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) {
    step_applies = 1;
    return fail_step("gdr: cannot read the job and step ids (spank_get_item)");
  }
  // The batch script, the extern step and interactive allocations hold no tasks of the job's
  // own program: the steps started inside them do.
  if (step == SLURM_BATCH_SCRIPT || step == SLURM_EXTERN_CONT || step == SLURM_INTERACTIVE_STEP)
    return 0;
  step_applies = 1;
  char node[256];
  node_name(sp, node, sizeof node);
  snprintf(step_key, sizeof step_key, "step-%u.%u", job, step);
  char owner[32];
  snprintf(owner, sizeof owner, "%d", (int)getpid());
  char out[4096], last_err[kLine] = "";
  char* args[] = {"attach", "--prepare", "--key", step_key, "--owner", owner, NULL};
  int rc = run_harness(node, args, out, sizeof out, last_err, sizeof last_err);
  if (rc != 0) {
    char err[kLine];
    log_printable_to(err, sizeof err, last_err[0] ? last_err : "no message");
    return fail_step("gdr: %s attach --key %s failed on node %s (status %d): %s", harness_path,
                     step_key, node, rc, err);
  }
  attached = 1;
  for (char *save = NULL, *line = strtok_r(out, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    if (strncmp(line, "netns=", 6) == 0) {
      snprintf(netns_path, sizeof netns_path, "%s", line + 6);
    } else if (strncmp(line, "sysfs_plan=", 11) == 0 && line[11] == '/') {
      snprintf(sysfs_plan, sizeof sysfs_plan, "%s", line + 11);
    } else if (strncmp(line, "gdrproxy=", 9) == 0 && line[9] == '/') {
      snprintf(attach_gdrproxy, sizeof attach_gdrproxy, "%s", line + 9);
    } else if (strncmp(line, "env=", 4) == 0 && strchr(line + 4, '=') && task_env_count < kMaxEnv) {
      task_env[task_env_count++] = strdup(line + 4);
    }
  }
  if (!netns_path[0]) {
    detach_step(sp);
    return fail_step("gdr: %s attach --key %s named no network namespace", harness_path, step_key);
  }
  if (apply_grants(node) != 0) {
    detach_step(sp);
    return -1;
  }
  slurm_info("gdr: step %u.%u on node %s holds the rails in %s (%d device node(s) granted)", job,
             step, node, netns_path, dev_node_count);
  return 0;
}

// The task is not started: its line on its stderr (the user's output) and in slurmstepd's log.
static void refuse_task(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void refuse_task(const char* fmt, ...) {
  char line[kLine];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  slurm_error("%s", line);
  dprintf(STDERR_FILENO, "%s\n", line);
  _exit(1);
}

// Mount ids and points from /proc/self/mountinfo: the mounts directly below the one at /sys.
enum { kMaxSub = 32 };
static int sys_submounts(char points[kMaxSub][256]) {
  FILE* f = fopen("/proc/self/mountinfo", "r");
  if (!f) return -1;
  int sys_id = -1, n = 0;
  int ids[256], parents[256];
  char(*mps)[256] = calloc(256, 256);
  int count = 0;
  char line[4096];
  while (mps && count < 256 && fgets(line, sizeof line, f)) {
    if (sscanf(line, "%d %d %*s %*s %255s", &ids[count], &parents[count], mps[count]) != 3)
      continue;
    if (strcmp(mps[count], "/sys") == 0) sys_id = ids[count];  // the last one is the visible one
    ++count;
  }
  fclose(f);
  for (int i = 0; i < count && sys_id >= 0; ++i) {
    if (parents[i] == sys_id && strncmp(mps[i], "/sys/", 5) == 0 && n < kMaxSub &&
        !strchr(mps[i], '\\'))  // escaped names (spaces) are not ours to move
      snprintf(points[n++], 256, "%s", mps[i]);
  }
  int ok = mps != NULL;
  free(mps);
  return ok ? n : -1;
}

// The plan's synthetic sysfs, bound read-only at /sys by `gdrproxy sysfs mount` in this (the
// task's) mount namespace. The task's environment is the user's, so gdrproxy runs by absolute
// path with an environment of its own (no PATH or LD_PRELOAD of the user's reaches a root
// process). Returns NULL or what failed.
static const char* mount_synthetic_sysfs(char* what, size_t what_size) {
  const char* gp = gdrproxy_path[0] ? gdrproxy_path : attach_gdrproxy;
  if (gp[0] != '/') {
    snprintf(what, what_size, "the synthetic sysfs %.200s: no absolute gdrproxy path", sysfs_plan);
    return what;
  }
  pid_t pid = fork();
  if (pid < 0) return "fork (gdrproxy sysfs mount)";
  if (pid == 0) {
    char* argv[] = {(char*)gp, "sysfs", "mount", "--plan", sysfs_plan, "--at", "/sys", NULL};
    char* envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    execve(gp, argv, envp);
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return NULL;
  snprintf(what, what_size, "%.200s sysfs mount --plan %.200s --at /sys (status %d)", gp,
           sysfs_plan, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  errno = 0;
  return what;
}

// The task's own view: a mount namespace slave to the node's, the plan's synthetic sysfs or a
// sysfs of the rail namespace (with the node's /sys submounts carried over) and, where the node
// has one, a /dev/infiniband holding only the granted device nodes. Returns NULL or what failed.
static const char* enter_mount_view(char* what, size_t what_size) {
  if (unshare(CLONE_NEWNS) != 0) return "unshare(CLONE_NEWNS)";
  if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0) return "mount(/, MS_REC|MS_SLAVE)";
  // /sys: the submounts (cgroup, ...) are cloned before the fresh sysfs hides them.
  char points[kMaxSub][256];
  int n = sys_submounts(points);
  if (n < 0) return "reading /proc/self/mountinfo";
  int trees[kMaxSub];
  for (int i = 0; i < n; ++i) {
    trees[i] = open_tree(AT_FDCWD, points[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (trees[i] < 0) {
      snprintf(what, what_size, "open_tree(%s)", points[i]);
      return what;
    }
  }
  // The node's /sys (and what it covers) is unmounted, so that the task's mount table holds one
  // /sys: the synthetic tree, or a fresh sysfs made detached beforehand.
  if (sysfs_plan[0]) {
    if (umount2("/sys", MNT_DETACH) != 0) return "umount2(/sys, MNT_DETACH)";
    const char* failed = mount_synthetic_sysfs(what, what_size);
    if (failed) return failed;
  } else {
    int fs = fsopen("sysfs", FSOPEN_CLOEXEC);
    if (fs < 0) return "fsopen(sysfs)";
    if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0) return "fsconfig(sysfs, CREATE)";
    int sysfs =
        fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    close(fs);
    if (sysfs < 0) return "fsmount(sysfs)";
    if (umount2("/sys", MNT_DETACH) != 0) return "umount2(/sys, MNT_DETACH)";
    if (move_mount(sysfs, "", AT_FDCWD, "/sys", MOVE_MOUNT_F_EMPTY_PATH) != 0)
      return "move_mount(sysfs, /sys)";
    close(sysfs);
  }
  for (int i = 0; i < n; ++i) {
    if (move_mount(trees[i], "", AT_FDCWD, points[i], MOVE_MOUNT_F_EMPTY_PATH) != 0 &&
        errno != ENOENT) {
      snprintf(what, what_size, "move_mount(%s)", points[i]);
      return what;
    }
    close(trees[i]);
  }
  // /dev/infiniband: the granted nodes only (same numbers, owner and mode), read-only.
  struct stat st[kMaxDev];
  struct stat dir;
  if (stat("/dev/infiniband", &dir) != 0) {
    if (dev_node_count == 0) return NULL;  // nothing granted, nothing to hide
    return "stat(/dev/infiniband)";
  }
  for (int i = 0; i < dev_node_count; ++i) {
    snprintf(what, what_size, "/dev/infiniband/%.63s", dev_nodes[i]);
    if (stat(what, &st[i]) != 0 || !S_ISCHR(st[i].st_mode)) {
      snprintf(what, what_size, "stat(/dev/infiniband/%.63s)", dev_nodes[i]);
      return what;
    }
  }
  if (mount("gdr-dev", "/dev/infiniband", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") !=
      0)
    return "mount(tmpfs, /dev/infiniband)";
  for (int i = 0; i < dev_node_count; ++i) {
    snprintf(what, what_size, "/dev/infiniband/%.63s", dev_nodes[i]);
    if (mknod(what, st[i].st_mode & (S_IFMT | 07777), st[i].st_rdev) != 0 ||
        chown(what, st[i].st_uid, st[i].st_gid) != 0 || chmod(what, st[i].st_mode & 07777) != 0) {
      snprintf(what, what_size, "mknod(/dev/infiniband/%.63s)", dev_nodes[i]);
      return what;
    }
  }
  if (mount(NULL, "/dev/infiniband", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL) !=
      0)
    return "mount(/dev/infiniband, MS_REMOUNT|MS_RDONLY)";
  return NULL;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!step_applies) return 0;
  if (!attached)
    refuse_task("%s", fail_line[0] ? fail_line : "gdr: this step holds no rails on this node");
  int fd = open(netns_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    refuse_task("gdr: cannot open the rail network namespace %s: %s", netns_path, strerror(errno));
  // slurmstepd's loopback services (the PMIx server) stay reachable from the rail namespace.
  char err[256] = "";
  int relayed = relay_step_loopback(getppid(), fd, err, sizeof err);
  if (relayed < 0)
    refuse_task("gdr: cannot relay slurmstepd's loopback ports into %s: %s", netns_path, err);
  if (relayed > 0)
    slurm_info("gdr: %d loopback port(s) of slurmstepd relayed into %s", relayed, netns_path);
  if (setns(fd, CLONE_NEWNET) != 0)
    refuse_task("gdr: setns(%s, CLONE_NEWNET): %s", netns_path, strerror(errno));
  close(fd);
  char what[kLine];
  const char* failed = enter_mount_view(what, sizeof what);
  if (failed) refuse_task("gdr: the task's mount view: %s: %s", failed, strerror(errno));
  for (int i = 0; i < task_env_count; ++i) {
    char* eq = strchr(task_env[i], '=');
    *eq = '\0';
    spank_setenv(sp, task_env[i], eq + 1, 1);
    *eq = '=';
  }
  if (debug) {
    spank_setenv(sp, "NCCL_DEBUG", "INFO", 0);
    spank_setenv(sp, "NCCL_DEBUG_SUBSYS", "INIT,NET,GRAPH", 0);
  }
  return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (spank_context() != S_CTX_REMOTE || !attached) return 0;
  return detach_step(sp);
}
