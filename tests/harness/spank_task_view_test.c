// The Slurm plugin's grant handling and task view (harness/slurm/gdr_spank.c, compiled into this
// test), on a node that has RDMA devices: this machine has none, so each case runs in a child
// with mount and network namespaces of its own, where /dev and /sys/class are tmpfs copies
// holding made-up uverbs nodes and the sysfs links the plugin reads. The idea not to miss: the
// code under test is the plugin's own (apply_grants, enter_mount_view), doing real mounts and
// mknod; only Slurm's logging and option calls, which it does not exercise here, are stubs. The
// synthetic sysfs cases need a real plan, which tests/harness/spank_task_view.sh builds.
// Root only (exit 77 otherwise). Exit status 0 when every case passes.
#include "../../harness/slurm/gdr_spank.c"

#include <stdbool.h>

// Slurm's side of the plugin API (slurmstepd provides it), as far as these cases reach it.
void slurm_info(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  vfprintf(stdout, format, ap);
  va_end(ap);
  fputc('\n', stdout);
}
void slurm_error(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  vfprintf(stdout, format, ap);
  va_end(ap);
  fputc('\n', stdout);
}
spank_err_t spank_option_register(spank_t sp, struct spank_option* opt) {
  (void)sp;
  (void)opt;
  return ESPANK_SUCCESS;
}
spank_err_t spank_getenv(spank_t sp, const char* var, char* buf, int len) {
  (void)sp;
  (void)var;
  (void)buf;
  (void)len;
  return ESPANK_ENV_NOEXIST;
}
spank_err_t spank_setenv(spank_t sp, const char* var, const char* val, int overwrite) {
  (void)sp;
  (void)var;
  (void)val;
  (void)overwrite;
  return ESPANK_SUCCESS;
}
spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...) {
  (void)sp;
  (void)item;
  return ESPANK_BAD_ARG;
}
spank_context_t spank_context(void) {
  return S_CTX_REMOTE;
}

static int failures;
#define CHECK(cond)                                                                      \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      printf("FAIL %s:%d: %s (errno %s)\n", __FILE__, __LINE__, #cond, strerror(errno)); \
      ++failures;                                                                        \
    }                                                                                    \
  } while (0)

static void must(int ok, const char* what) {
  if (!ok) {
    printf("setup failed: %s: %s\n", what, strerror(errno));
    _exit(2);
  }
}

// The node: mlx5_0 (uverbs0, two ports), mlx5_1 (uverbs1), mlx5_2 (uverbs2), mlx5_3 (in the plan
// but without a uverbs node), rdma_cm; plus uverbs7, which no device of the plan has.
static void make_node(void) {
  must(unshare(CLONE_NEWNS | CLONE_NEWNET) == 0, "unshare");
  must(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, "mount / private");
  must(mount("t", "/dev", "tmpfs", 0, "mode=0755") == 0, "tmpfs /dev");
  must(mkdir("/dev/infiniband", 0755) == 0, "mkdir /dev/infiniband");
  int minors[] = {192, 193, 194, 199};
  const char* names[] = {"uverbs0", "uverbs1", "uverbs2", "uverbs7"};
  char path[128];
  for (int i = 0; i < 4; ++i) {
    snprintf(path, sizeof path, "/dev/infiniband/%s", names[i]);
    must(mknod(path, S_IFCHR | 0666, makedev(231, minors[i])) == 0, path);
  }
  must(mknod("/dev/infiniband/rdma_cm", S_IFCHR | 0666, makedev(10, 58)) == 0, "rdma_cm");
  must(
      chown("/dev/infiniband/uverbs2", 0, 4242) == 0 && chmod("/dev/infiniband/uverbs2", 0660) == 0,
      "chown uverbs2");
  must(mount("t", "/sys/class", "tmpfs", 0, "mode=0755") == 0, "tmpfs /sys/class");
  const char* devs[][2] = {{"mlx5_0", "uverbs0"}, {"mlx5_1", "uverbs1"}, {"mlx5_2", "uverbs2"}};
  must(mkdir("/sys/class/infiniband", 0755) == 0, "mkdir /sys/class/infiniband");
  for (int i = 0; i < 3; ++i) {
    snprintf(path, sizeof path, "/sys/class/infiniband/%s", devs[i][0]);
    must(mkdir(path, 0755) == 0, path);
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/device", devs[i][0]);
    must(mkdir(path, 0755) == 0, path);
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/device/infiniband_verbs", devs[i][0]);
    must(mkdir(path, 0755) == 0, path);
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/device/infiniband_verbs/%s", devs[i][0],
             devs[i][1]);
    must(mkdir(path, 0755) == 0, path);
  }
  must(mkdir("/sys/class/infiniband/mlx5_3", 0755) == 0, "mkdir mlx5_3");
}

// What attach printed for a plan with these devices.
static void plan_env(const char* hca) {
  char line[256];
  snprintf(line, sizeof line, "NCCL_IB_HCA=%s", hca);
  task_env[task_env_count++] = strdup(line);
  task_env[task_env_count++] = strdup("NCCL_SOCKET_IFNAME=eth0");
}

static const char* env_value(const char* name) {
  char** e = task_env_entry(name);
  return e ? *e + strlen(name) + 1 : NULL;
}

// The names in /dev/infiniband, sorted, space-separated.
static void list_dir(const char* dir, char* out, size_t size) {
  struct dirent** names = NULL;
  int n = scandir(dir, &names, NULL, alphasort);
  out[0] = '\0';
  for (int i = 0; i < n; ++i) {
    if (names[i]->d_name[0] != '.') {
      size_t len = strlen(out);
      snprintf(out + len, size - len, "%s%s", len ? " " : "", names[i]->d_name);
    }
    free(names[i]);
  }
  free(names);
}

static bool is_mountpoint(const char* path) {
  FILE* f = fopen("/proc/self/mountinfo", "r");
  char line[4096], mp[512];
  bool found = false;
  while (f && fgets(line, sizeof line, f)) {
    if (sscanf(line, "%*d %*d %*s %*s %511s", mp) == 1 && strcmp(mp, path) == 0) found = true;
  }
  if (f) fclose(f);
  return found;
}

// --gdr-grant=mlx5_0,mlx5_2: NCCL_IB_HCA narrowed (both ports of mlx5_0 kept), and the task's
// /dev/infiniband holds uverbs0, uverbs2 and rdma_cm only, with the node's numbers, owner and
// mode, read-only; /sys is a sysfs of the task's network namespace, its submounts kept.
static void case_grant_subset(void) {
  make_node();
  plan_env("=mlx5_0:1,mlx5_0:2,mlx5_1:1,mlx5_2:1");
  snprintf(grant_opt, sizeof grant_opt, "mlx5_0,mlx5_2");
  bool cgroup_before = is_mountpoint("/sys/fs/cgroup");
  CHECK(apply_grants("nodeT") == 0);
  CHECK(env_value("NCCL_IB_HCA") &&
        strcmp(env_value("NCCL_IB_HCA"), "=mlx5_0:1,mlx5_0:2,mlx5_2:1") == 0);
  CHECK(env_value("NCCL_SOCKET_IFNAME") && strcmp(env_value("NCCL_SOCKET_IFNAME"), "eth0") == 0);
  CHECK(dev_node_count == 3);
  // The made-up /sys/class served apply_grants (slurmstepd's step start); the task comes later.
  must(umount2("/sys/class", 0) == 0, "umount /sys/class");
  char what[kLine];
  const char* failed = enter_mount_view(what, sizeof what);
  if (failed) printf("enter_mount_view: %s: %s\n", failed, strerror(errno));
  CHECK(failed == NULL);
  char names[512];
  list_dir("/dev/infiniband", names, sizeof names);
  printf("granted view: /dev/infiniband: %s\n", names);
  CHECK(strcmp(names, "rdma_cm uverbs0 uverbs2") == 0);
  struct stat st;
  CHECK(stat("/dev/infiniband/uverbs2", &st) == 0 && S_ISCHR(st.st_mode) &&
        st.st_rdev == makedev(231, 194) && st.st_gid == 4242 && (st.st_mode & 07777) == 0660);
  CHECK(stat("/dev/infiniband/rdma_cm", &st) == 0 && st.st_rdev == makedev(10, 58));
  errno = 0;
  CHECK(mknod("/dev/infiniband/uverbs7", S_IFCHR | 0666, makedev(231, 199)) != 0 && errno == EROFS);
  // A sysfs of this network namespace (only lo), the old sysfs' submounts kept.
  list_dir("/sys/class/net", names, sizeof names);
  printf("granted view: /sys/class/net: %s\n", names);
  CHECK(strcmp(names, "lo") == 0);
  CHECK(is_mountpoint("/sys/fs/cgroup") == cgroup_before);
}

// --gdr-grant=none, and no --gdr-grant on a plan without RDMA devices: an empty, read-only
// /dev/infiniband and no NCCL_IB_HCA.
static void case_grant_none(void) {
  make_node();
  plan_env("=mlx5_0:1,mlx5_1:1");
  snprintf(grant_opt, sizeof grant_opt, "none");
  CHECK(apply_grants("nodeT") == 0);
  CHECK(env_value("NCCL_IB_HCA") == NULL);
  CHECK(env_value("NCCL_SOCKET_IFNAME") != NULL);
  char what[kLine];
  CHECK(enter_mount_view(what, sizeof what) == NULL);
  char names[512];
  list_dir("/dev/infiniband", names, sizeof names);
  CHECK(strcmp(names, "") == 0);
}

// No --gdr-grant: every device of the plan.
static void case_default_all(void) {
  make_node();
  plan_env("=mlx5_0:1,mlx5_1:1,mlx5_2:1");
  CHECK(apply_grants("nodeT") == 0);
  CHECK(strcmp(env_value("NCCL_IB_HCA"), "=mlx5_0:1,mlx5_1:1,mlx5_2:1") == 0);
  char what[kLine];
  CHECK(enter_mount_view(what, sizeof what) == NULL);
  char names[512];
  list_dir("/dev/infiniband", names, sizeof names);
  CHECK(strcmp(names, "rdma_cm uverbs0 uverbs1 uverbs2") == 0);
}

// The node's plan has a synthetic sysfs (the hgx-ib8 fixture with rails mlx5_0 and mlx5_4, made
// by spank_task_view.sh): the task's /sys is that tree, read-only, its ports' state live (bound
// from the fixture), and the node's /sys submounts are carried over onto it.
static void case_synthetic_sysfs(void) {
  const char* gp = getenv("GDR_TEST_GDRPROXY");
  const char* plan = getenv("GDR_TEST_SYSFS_PLAN");
  must(gp && plan, "GDR_TEST_GDRPROXY, GDR_TEST_SYSFS_PLAN (run me through spank_task_view.sh)");
  make_node();
  must(umount2("/sys/class", 0) == 0, "umount /sys/class");
  snprintf(gdrproxy_path, sizeof gdrproxy_path, "%s", gp);
  snprintf(sysfs_plan, sizeof sysfs_plan, "%s", plan);
  bool cgroup_before = is_mountpoint("/sys/fs/cgroup");
  char what[kLine];
  const char* failed = enter_mount_view(what, sizeof what);
  if (failed) printf("enter_mount_view: %s\n", failed);
  CHECK(failed == NULL);
  char names[512];
  list_dir("/sys/class/infiniband", names, sizeof names);
  printf("synthetic view: /sys/class/infiniband: %s\n", names);
  CHECK(strcmp(names, "mlx5_0 mlx5_4") == 0);
  char state[64] = "";
  FILE* f = fopen("/sys/class/infiniband/mlx5_4/ports/1/state", "r");
  CHECK(f && fgets(state, sizeof state, f) && strstr(state, "ACTIVE"));
  if (f) fclose(f);
  errno = 0;
  CHECK(mkdir("/sys/gdr-test", 0755) != 0 && errno == EROFS);
  CHECK(is_mountpoint("/sys/fs/cgroup") == cgroup_before);
}

// A synthetic sysfs that cannot be mounted stops the task, naming the command; and gdrproxy is
// never looked up through the task's (the user's) PATH.
static void case_synthetic_sysfs_refusals(void) {
  make_node();
  must(umount2("/sys/class", 0) == 0, "umount /sys/class");
  snprintf(sysfs_plan, sizeof sysfs_plan, "/nonexistent/mount-plan.json");
  snprintf(gdrproxy_path, sizeof gdrproxy_path, "%s", getenv("GDR_TEST_GDRPROXY"));
  char what[kLine];
  const char* failed = enter_mount_view(what, sizeof what);
  printf("bad plan: %s\n", failed ? failed : "(none)");
  CHECK(failed &&
        strstr(failed, "sysfs mount --plan /nonexistent/mount-plan.json --at /sys (status"));
}

static void case_synthetic_sysfs_needs_absolute_gdrproxy(void) {
  make_node();
  must(umount2("/sys/class", 0) == 0, "umount /sys/class");
  snprintf(sysfs_plan, sizeof sysfs_plan, "%s", getenv("GDR_TEST_SYSFS_PLAN"));
  snprintf(gdrproxy_path, sizeof gdrproxy_path, "gdrproxy");
  char what[kLine];
  const char* failed = enter_mount_view(what, sizeof what);
  printf("relative gdrproxy: %s\n", failed ? failed : "(none)");
  CHECK(failed && strstr(failed, "no absolute gdrproxy path"));
}

// A soft-RoCE device (rxe) hangs off no bus: no device link, so its uverbs node is the one whose
// ibdev file names it.
static void case_soft_roce_device(void) {
  make_node();
  must(mknod("/dev/infiniband/uverbs3", S_IFCHR | 0666, makedev(231, 195)) == 0, "uverbs3");
  must(mkdir("/sys/class/infiniband/rxe0", 0755) == 0, "mkdir rxe0");
  must(mkdir("/sys/class/infiniband_verbs", 0755) == 0 &&
           mkdir("/sys/class/infiniband_verbs/uverbs3", 0755) == 0 &&
           mkdir("/sys/class/infiniband_verbs/uverbs0", 0755) == 0,
       "mkdir infiniband_verbs");
  FILE* f = fopen("/sys/class/infiniband_verbs/uverbs3/ibdev", "w");
  must(f && fputs("rxe0\n", f) >= 0 && fclose(f) == 0, "ibdev of uverbs3");
  f = fopen("/sys/class/infiniband_verbs/uverbs0/ibdev", "w");
  must(f && fputs("mlx5_0\n", f) >= 0 && fclose(f) == 0, "ibdev of uverbs0");
  plan_env("=rxe0:1");
  CHECK(apply_grants("nodeT") == 0);
  CHECK(dev_node_count == 2 && strcmp(dev_nodes[0], "uverbs3") == 0);
  must(umount2("/sys/class", 0) == 0, "umount /sys/class");
  char what[kLine];
  CHECK(enter_mount_view(what, sizeof what) == NULL);
  char names[512];
  list_dir("/dev/infiniband", names, sizeof names);
  printf("soft-RoCE view: /dev/infiniband: %s\n", names);
  CHECK(strcmp(names, "rdma_cm uverbs3") == 0);
}

// Refusals, each one line naming the device.
static void case_refusals(void) {
  make_node();
  plan_env("=mlx5_0:1,mlx5_3:1");
  snprintf(grant_opt, sizeof grant_opt, "mlx5_0,mlx5_10");
  CHECK(apply_grants("nodeT") == -1);
  CHECK(strstr(fail_line, "--gdr-grant: mlx5_10 is not an RDMA device of node nodeT's rails") !=
        NULL);
  // mlx5_1 is a prefix of mlx5_10 and the other way round: names match exactly.
  snprintf(grant_opt, sizeof grant_opt, "mlx5");
  CHECK(apply_grants("nodeT") == -1);
  snprintf(grant_opt, sizeof grant_opt, "mlx5_3");
  CHECK(apply_grants("nodeT") == -1);
  CHECK(strstr(fail_line, "RDMA device mlx5_3 of node nodeT has no uverbs node") != NULL);
}

int main(void) {
  if (geteuid() != 0) {
    printf("needs root (mount and network namespaces)\n");
    return 77;
  }
  struct {
    const char* name;
    void (*run)(void);
  } cases[] = {
      {"grant_subset", case_grant_subset},
      {"grant_none", case_grant_none},
      {"default_all", case_default_all},
      {"refusals", case_refusals},
      {"soft_roce_device", case_soft_roce_device},
      {"synthetic_sysfs", case_synthetic_sysfs},
      {"synthetic_sysfs_refusals", case_synthetic_sysfs_refusals},
      {"synthetic_sysfs_needs_absolute_gdrproxy", case_synthetic_sysfs_needs_absolute_gdrproxy}};
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      cases[i].run();
      fflush(stdout);
      _exit(failures ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    printf("%s %s\n", ok ? "ok" : "FAILED", cases[i].name);
    failed += !ok;
  }
  return failed ? 1 : 0;
}
