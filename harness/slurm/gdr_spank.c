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
// never a task outside its namespace.
//
// plugstack.conf arguments: harness=PATH gdrproxy=PATH default=auto|none and any number of
// env=NAME=VALUE (the node's selection settings for prepare: RDMA_IFACES, RDMA_EXCLUDE_REGEX,
// GDR_HARNESS_STATE, ...). See harness/examples/plugstack.conf.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "loopback_relay.h"

SPANK_PLUGIN(gdr, 1);

enum { kMaxEnv = 32, kLine = 1024 };

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
static char* task_env[kMaxEnv];
static int task_env_count;

static int opt_gdr(int val, const char* optarg, int remote);
static int opt_debug(int val, const char* optarg, int remote);

static struct spank_option gdr_options[] = {
    {"gdr", "auto|none",
     "Run the tasks in this node's RDMA rail network namespace (auto) or not (none); the node is "
     "prepared on its first step and given back after its last",
     1, 0, opt_gdr},
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

// A line from a child process, made printable before it reaches Slurm's log (the harness
// quotes interface names it prints, but the line is still not ours).
static void log_printable(const char* prefix, const char* line) {
  char out[kLine];
  size_t n = 0;
  for (const unsigned char* p = (const unsigned char*)line; *p && n + 5 < sizeof out; ++p) {
    if (*p >= 0x20 && *p < 0x7f && *p != '\\') {
      out[n++] = (char)*p;
    } else {
      n += (size_t)snprintf(out + n, sizeof out - n, "\\x%02x", *p);
    }
  }
  out[n] = '\0';
  slurm_info("gdr: %s%s", prefix, out);
}

// Runs `timeout 120 harness ARGS...` with a clean environment (PATH, GDRPROXY, the node name,
// the admin's env= settings). Its stdout goes to out (NUL-terminated, truncated at size), its
// stderr to Slurm's log line by line; returns its exit status, or -1.
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
  char gp_env[kLine + 16], node_env[256];
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
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGCHLD, SIG_DFL);
    if (fork() != 0) _exit(0);
    setsid();
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
    while (fgets(line, sizeof line, err)) {
      line[strcspn(line, "\n")] = '\0';
      log_printable("", line);
      if (last_err) snprintf(last_err, last_err_size, "%s", line);
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

int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (spank_context() != S_CTX_REMOTE || !mode_auto) return 0;
  uint32_t job = 0, step = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) {
    slurm_error("gdr: cannot read the job and step ids");
    return -1;
  }
  // The batch script, the extern step and interactive allocations hold no tasks of the job's
  // own program: the steps started inside them do.
  if (step == SLURM_BATCH_SCRIPT || step == SLURM_EXTERN_CONT || step == SLURM_INTERACTIVE_STEP)
    return 0;
  char node[256];
  node_name(sp, node, sizeof node);
  snprintf(step_key, sizeof step_key, "step-%u.%u", job, step);
  char owner[32];
  snprintf(owner, sizeof owner, "%d", (int)getpid());
  char out[4096], last_err[kLine] = "";
  char* args[] = {"attach", "--prepare", "--key", step_key, "--owner", owner, NULL};
  int rc = run_harness(node, args, out, sizeof out, last_err, sizeof last_err);
  if (rc != 0) {
    slurm_error("gdr: %s attach --key %s failed on node %s (status %d): %s", harness_path, step_key,
                node, rc, last_err[0] ? last_err : "no message");
    return -1;
  }
  attached = 1;
  for (char *save = NULL, *line = strtok_r(out, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    if (strncmp(line, "netns=", 6) == 0) {
      snprintf(netns_path, sizeof netns_path, "%s", line + 6);
    } else if (strncmp(line, "env=", 4) == 0 && strchr(line + 4, '=') && task_env_count < kMaxEnv) {
      task_env[task_env_count++] = strdup(line + 4);
    }
  }
  if (!netns_path[0]) {
    slurm_error("gdr: %s attach --key %s named no network namespace", harness_path, step_key);
    return -1;
  }
  slurm_info("gdr: step %u.%u on node %s holds the rails in %s", job, step, node, netns_path);
  return 0;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!attached) return 0;
  int fd = open(netns_path, O_RDONLY | O_CLOEXEC);
  // slurmstepd's loopback services (the PMIx server) stay reachable from the rail namespace.
  char err[256] = "";
  int relayed = fd >= 0 ? relay_step_loopback(getppid(), fd, err, sizeof err) : 0;
  if (relayed < 0) {
    slurm_error("gdr: cannot relay slurmstepd's loopback ports into %s: %s", netns_path, err);
    close(fd);
    return -1;
  }
  if (relayed > 0)
    slurm_info("gdr: %d loopback port(s) of slurmstepd relayed into %s", relayed, netns_path);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    slurm_error("gdr: cannot enter the rail network namespace %s: %s", netns_path, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
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
  char node[256];
  node_name(sp, node, sizeof node);
  char out[1024], last_err[kLine] = "";
  char* args[] = {"detach", "--key", step_key, NULL};
  int rc = run_harness(node, args, out, sizeof out, last_err, sizeof last_err);
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
