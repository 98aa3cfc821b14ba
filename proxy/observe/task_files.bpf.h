// For BPF programs: the kernel types on the way from a task to the file behind one of its fds
// (task->files->fdt->fd[n]->f_inode), just the fields read, relocated against the running
// kernel's BTF (CO-RE). The idea not to miss: the fd table is read without the RCU lock the
// kernel takes, so a read can fail or see a table being replaced; callers treat a failed read as
// "not known", never as "no file". Include after the BPF helper headers.
#pragma once

struct inode {
  unsigned short i_mode;
  __u32 i_rdev;  // the kernel's dev_t: major << 20 | minor
} __attribute__((preserve_access_index));
struct file {
  struct inode* f_inode;
} __attribute__((preserve_access_index));
struct fdtable {
  unsigned int max_fds;
  struct file** fd;
} __attribute__((preserve_access_index));
struct files_struct {
  struct fdtable* fdt;
} __attribute__((preserve_access_index));
