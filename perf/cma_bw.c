/*
 * cma_bw: the anchor of the local path's large messages -- a bare
 * process_vm_readv(2) between two processes, no messaging at all.
 *
 * The parent forks a child that fills a buffer of the largest size and
 * waits; the parent (pinned to the first CPU, the child to the second)
 * reads SIZE bytes of it into its own buffer, again and again for about
 * --secs seconds per size: the same two buffers every time, as rmq_bw
 * sends one buffer and receives into one.  MB/s = bytes read / time
 * (1 MB = 10^6 bytes).  The first read of each size is not timed (page
 * faults), and the last one's bytes are checked.
 *
 * usage: cma_bw [-S SIZES] [--cpus A,B] [--secs S] [--csv]
 *        SIZES as rmq_bw's (e.g. 65536,1m,4m); default 1m.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SIZES_MAX 32

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

static void
pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void) sched_setaffinity(0, sizeof(set), &set);
}

/* "4096,64k,1m": sizes with k/m/g suffixes (powers of 1024). */
static int
parse_sizes(const char *s, size_t *v, int *n)
{
	char *end;

	for (*n = 0; *s != '\0' && *n < SIZES_MAX; (*n)++) {
		unsigned long long x = strtoull(s, &end, 10);

		if (end == s)
			return -1;
		switch (*end) {
		case 'k': case 'K': x <<= 10; end++; break;
		case 'm': case 'M': x <<= 20; end++; break;
		case 'g': case 'G': x <<= 30; end++; break;
		default: break;
		}
		if (x == 0 || (*end != ',' && *end != '\0'))
			return -1;
		v[*n] = (size_t) x;
		s     = *end == ',' ? end + 1 : end;
	}
	return *n > 0 && *s == '\0' ? 0 : -1;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"cpus", required_argument, NULL, 'c'},
	    {"secs", required_argument, NULL, 't'},
	    {"csv", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	size_t   sizes[SIZES_MAX] = {1u << 20}, max = 0, i;
	int      nsizes = 1, cpus[2] = {0, 1}, c, k, to_kid[2], from_kid[2];
	double   secs = 1.0, t0, t;
	bool     csv = false;
	uint8_t *src, *dst;
	uint64_t reads;
	pid_t    kid;
	char     b;

	while ((c = getopt_long(argc, argv, "S:h", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			if (parse_sizes(optarg, sizes, &nsizes) != 0) {
				fprintf(stderr, "cma_bw: bad -S %s\n", optarg);
				return 2;
			}
			break;
		case 'c':
			if (sscanf(optarg, "%d,%d", &cpus[0], &cpus[1]) != 2) {
				fprintf(stderr, "cma_bw: bad --cpus %s\n", optarg);
				return 2;
			}
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'v':
			csv = true;
			break;
		default:
			fprintf(c == 'h' ? stdout : stderr,
			        "usage: cma_bw [-S SIZES] [--cpus A,B] "
			        "[--secs S] [--csv]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	for (k = 0; k < nsizes; k++)
		if (sizes[k] > max)
			max = sizes[k];
	src = aligned_alloc(4096, (max + 4095) & ~(size_t) 4095);
	dst = aligned_alloc(4096, (max + 4095) & ~(size_t) 4095);
	if (src == NULL || dst == NULL || pipe(to_kid) != 0 ||
	    pipe(from_kid) != 0) {
		perror("cma_bw");
		return 1;
	}
	for (i = 0; i < max; i++)
		src[i] = (uint8_t) (i * 131 + 7);
	kid = fork();
	if (kid < 0) {
		perror("cma_bw: fork");
		return 1;
	}
	if (kid == 0) { /* holds src (the same address as the parent's) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pin(cpus[1]);
		if (write(from_kid[1], "r", 1) != 1)
			_exit(1);
		(void) !read(to_kid[0], &b, 1); /* until the parent is done */
		_exit(0);
	}
	pin(cpus[0]);
	if (read(from_kid[0], &b, 1) != 1) {
		fprintf(stderr, "cma_bw: the child did not start\n");
		return 1;
	}
	if (csv)
		printf("size,mbps,reads_per_s,what\n");
	else
		printf("# cma_bw: process_vm_readv of SIZE bytes from another "
		       "process (CPU %d reads, CPU %d holds), %.1f s per size\n"
		       "# %10s %12s %12s\n", cpus[0], cpus[1], secs, "size",
		       "MB/s", "reads/s");
	for (k = 0; k < nsizes; k++) {
		struct iovec l = {dst, sizes[k]}, r = {src, sizes[k]};

		memset(dst, 0, sizes[k]);
		if (process_vm_readv(kid, &l, 1, &r, 1, 0) !=
		    (ssize_t) sizes[k]) {
			fprintf(stderr, "cma_bw: process_vm_readv: %s\n",
			        strerror(errno));
			kill(kid, SIGKILL);
			return 1;
		}
		reads = 0;
		t0    = now_s();
		do {
			for (i = 0; i < 16; i++)
				if (process_vm_readv(kid, &l, 1, &r, 1, 0) !=
				    (ssize_t) sizes[k]) {
					fprintf(stderr, "cma_bw: short read\n");
					kill(kid, SIGKILL);
					return 1;
				}
			reads += 16;
			t = now_s();
		} while (t - t0 < secs);
		if (memcmp(dst, src, sizes[k]) != 0) {
			fprintf(stderr, "cma_bw: the bytes read differ\n");
			kill(kid, SIGKILL);
			return 1;
		}
		if (csv)
			printf("%zu,%.2f,%.0f,process_vm_readv\n", sizes[k],
			       (double) sizes[k] * (double) reads / (t - t0) /
			           1e6,
			       (double) reads / (t - t0));
		else
			printf("  %10zu %12.2f %12.0f\n", sizes[k],
			       (double) sizes[k] * (double) reads / (t - t0) /
			           1e6,
			       (double) reads / (t - t0));
		fflush(stdout);
	}
	(void) !write(to_kid[1], "d", 1);
	waitpid(kid, NULL, 0);
	free(src);
	free(dst);
	return 0;
}
