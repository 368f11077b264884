/*
 * What the process-level tests (kill_serve, half_open, many_peers) read
 * about a process: the clock, its resident set and its open fds.
 */
#ifndef RMQ_TEST_PROCSTAT_H
#define RMQ_TEST_PROCSTAT_H

#include <dirent.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

static inline double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* VmRSS of pid in KiB, or -1. */
static inline long
rss_kib(pid_t pid)
{
	char  path[64], line[256];
	long  v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Open fds of pid, or -1. */
static inline int
nfds(pid_t pid)
{
	char           path[64];
	DIR           *d;
	struct dirent *e;
	int            n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int) pid);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

#endif /* RMQ_TEST_PROCSTAT_H */
