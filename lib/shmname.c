/*
 * Names of our shm endpoints, and the sweep of the ones a killed process
 * left behind.
 *
 * libfabric's shm provider keeps each endpoint's region in a file of
 * /dev/shm named after the endpoint (16 MiB each in 1.17) and removes it
 * when the endpoint closes.  A process killed with SIGKILL leaves its
 * files behind, in memory, until the next reboot: a job of 256 processes
 * with two shm sockets each, killed, would leave 8 GiB.  So our names say
 * whose they are -- rmq_<pid>_<pid namespace, hex>_<64 random bits, hex>
 * -- and a process about to make a shm endpoint first removes, at most
 * once a second, every file of that form of its own user and PID
 * namespace whose process is gone (kill(pid, 0) fails with ESRCH).
 * Nothing else is touched: a pid alive (a live process, or one that took
 * a dead one's pid: its file waits for a later sweep), another
 * namespace's pid (it would name some other process here), another
 * user's file, a symbolic link, or a name of another form.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmq.h"
#include "shmname.h"
#include "util.h"

#define NAME_RAND_DIGITS 16

uint64_t
rmq_pidns(void)
{
	char               link[64];
	unsigned long long ino;
	ssize_t            n;

	n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	if (sscanf(link, "pid:[%llu]", &ino) != 1)
		return 0;
	return (uint64_t) ino;
}

int
rmq_shm_name(char *buf, size_t len)
{
	int n;

	n = snprintf(buf, len, "rmq_%d_%llx_%0*llx", (int) getpid(),
	             (unsigned long long) rmq_pidns(), NAME_RAND_DIGITS,
	             (unsigned long long) rmq_random64());
	return n > 0 && (size_t) n < len ? 0 : -RMQ_EINVAL;
}

/* name is rmq_<pid>_<ns>_<16 hex digits>, nothing more: its pid and ns. */
static bool
name_parse(const char *name, pid_t *pid, uint64_t *ns)
{
	const char        *p = name;
	char              *end;
	unsigned long      v;
	unsigned long long w;
	int                i;

	if (strncmp(p, "rmq_", 4) != 0)
		return false;
	p += 4;
	if (!isdigit((unsigned char) *p))
		return false;
	errno = 0;
	v     = strtoul(p, &end, 10);
	if (errno != 0 || *end != '_' || v == 0 || v > INT_MAX)
		return false;
	p = end + 1;
	if (!isxdigit((unsigned char) *p))
		return false;
	w = strtoull(p, &end, 16);
	if (errno != 0 || *end != '_')
		return false;
	p = end + 1;
	for (i = 0; i < NAME_RAND_DIGITS; i++)
		if (!isxdigit((unsigned char) p[i]))
			return false;
	if (p[NAME_RAND_DIGITS] != '\0')
		return false;
	*pid = (pid_t) v;
	*ns  = (uint64_t) w;
	return true;
}

int
rmq_shm_sweep(const char *dir, int64_t min_gap_ns)
{
	static _Atomic int64_t last;
	static _Atomic pid_t   whose; /* a child forked since sweeps anew */
	struct dirent         *de;
	struct stat            st;
	uint64_t               ns, me;
	int64_t                now, was;
	uid_t                  uid = geteuid();
	pid_t                  pid, self = getpid();
	DIR                   *d;
	int                    n = 0;

	if (min_gap_ns > 0) {
		if (atomic_load(&whose) != self) {
			atomic_store(&last, 0);
			atomic_store(&whose, self);
		}
		now = rmq_now_ns();
		was = atomic_load(&last);
		if ((was != 0 && now - was < min_gap_ns) ||
		    !atomic_compare_exchange_strong(&last, &was, now))
			return -1;
	}
	/* (Only now: a sweep too soon costs no system call.) */
	me = rmq_pidns();
	if (me == 0)
		return -1;
	d = opendir(dir);
	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		if (!name_parse(de->d_name, &pid, &ns) || ns != me ||
		    pid == self)
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue; /* alive, or not ours to ask about */
		if (fstatat(dirfd(d), de->d_name, &st,
		            AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != uid)
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	if (n > 0)
		rmq_log(RMQ_LOG_INFO,
		        "removed %d shm region%s of processes gone from %s", n,
		        n == 1 ? "" : "s", dir);
	return n;
}
