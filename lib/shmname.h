/*
 * Names of our shm endpoints, and the sweep of the ones a killed process
 * left behind (shmname.c).
 */
#ifndef RMQ_SHMNAME_H
#define RMQ_SHMNAME_H

#include <stddef.h>
#include <stdint.h>

/* Where libfabric's shm provider keeps its regions (shm_open). */
#define RMQ_SHM_DIR "/dev/shm"

/* A fresh endpoint name, rmq_<pid>_<pid namespace>_<random>: 0, or
 * -RMQ_EINVAL when len is too short. */
int rmq_shm_name(char *buf, size_t len);

/*
 * Remove the regions in dir of our user and PID namespace whose process is
 * gone: how many went, or -errno when dir cannot be read.  At most once
 * every min_gap_ns in a process (0: now; a child forked since is another
 * process); -1 without a look when it is too soon, or when this process
 * cannot name its PID namespace.
 */
int rmq_shm_sweep(const char *dir, int64_t min_gap_ns);

/* This process's PID namespace (the inode of /proc/self/ns/pid), or 0. */
uint64_t rmq_pidns(void);

#endif /* RMQ_SHMNAME_H */
