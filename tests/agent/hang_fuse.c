/* A FUSE filesystem that never answers a lookup of a name starting with "hang" (the kernel then
 * waits for ever: the stall a container's dataset mount can cause), has one regular file "stall"
 * whose reads are never answered (so touching a page of a mapping of it blocks for ever), and
 * answers ENOENT for every other name. Used by agent_test.sh to stall one container's path
 * resolution, and the agent's read of one container's memory, in the agent.
 * Usage: hang_fuse MOUNTPOINT   (foreground; unmount or kill to stop) */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

enum { kStallIno = 2, kStallSize = 65536 };

static void stall_attr(struct stat* st) {
  memset(st, 0, sizeof *st);
  st->st_ino = kStallIno;
  st->st_mode = S_IFREG | 0644;
  st->st_nlink = 1;
  st->st_size = kStallSize;
}

static void on_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  (void)parent;
  if (strncmp(name, "hang", 4) == 0) return; /* never replied */
  if (parent == FUSE_ROOT_ID && strcmp(name, "stall") == 0) {
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    e.ino = kStallIno;
    e.attr_timeout = 3600;
    e.entry_timeout = 3600;
    stall_attr(&e.attr);
    fuse_reply_entry(req, &e);
    return;
  }
  fuse_reply_err(req, ENOENT);
}

static void on_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  if (ino != kStallIno) {
    fuse_reply_err(req, EISDIR);
    return;
  }
  fuse_reply_open(req, fi);
}

static void on_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info* fi) {
  (void)req, (void)ino, (void)size, (void)off, (void)fi; /* never replied */
}

static void on_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  (void)fi;
  struct stat st;
  memset(&st, 0, sizeof st);
  st.st_ino = ino;
  st.st_mode = S_IFDIR | 0755;
  st.st_nlink = 2;
  if (ino == kStallIno) stall_attr(&st);
  if (ino != FUSE_ROOT_ID && ino != kStallIno) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  fuse_reply_attr(req, &st, 0);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: hang_fuse MOUNTPOINT\n");
    return 2;
  }
  static const struct fuse_lowlevel_ops ops = {
      .lookup = on_lookup, .getattr = on_getattr, .open = on_open, .read = on_read};
  char* fargv[] = {argv[0], NULL};
  struct fuse_args args = FUSE_ARGS_INIT(1, fargv);
  struct fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, NULL);
  if (!se || fuse_session_mount(se, argv[1]) != 0) return 1;
  fprintf(stderr, "hang_fuse: mounted %s\n", argv[1]);
  /* One thread is enough: an unanswered request does not hold the loop. */
  const int rc = fuse_session_loop(se);
  fuse_session_unmount(se);
  fuse_session_destroy(se);
  return rc;
}
