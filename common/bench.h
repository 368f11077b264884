/*
 * What the benchmarks (perf/: rmq_pingpong, rmq_bw, rmq_fanout, zmq_pingpong,
 * zmq_thr) and rmq_tune (tools/) share, so all measure and print exactly
 * alike: sizes, the clocks, payload patterns, the per-size summary
 * (one-way = round trip / 2 per iteration; p50, p99, mean; MB/s = size /
 * mean, 1 MB = 10^6 B) and its table or CSV row; and, for the two that
 * fork their peer (zmq_pingpong, zmq_thr), its signals and its end.
 */
#ifndef RMQ_BENCH_H
#define RMQ_BENCH_H

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PP_MAX_SIZES 64
#define PP_CSV_HEADER "size,lat_p50_us,lat_p99_us,mbps,path"

/* "4096", "64k", "1M": at most 1 GiB. */
static inline int
pp_parse_size(const char *s, size_t *out)
{
	char              *end;
	unsigned long long v;
	int                shift = 0;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v     = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		return -1;
	if (*end == 'k' || *end == 'K')
		shift = 10, end++;
	else if (*end == 'm' || *end == 'M')
		shift = 20, end++;
	if (*end != '\0' || v > (SIZE_MAX >> shift) ||
	    (v << shift) > (1ull << 30))
		return -1;
	*out = (size_t) (v << shift);
	return 0;
}

/* A decimal int of at least min. */
static inline int
pp_parse_int(const char *s, int min, int *out)
{
	char *end;
	long  v;

	errno = 0;
	v     = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > INT32_MAX)
		return -1;
	*out = (int) v;
	return 0;
}

/* "A,B": two CPU numbers below CPU_SETSIZE (negative: do not pin). */
static inline int
pp_parse_cpus(const char *s, int cpus[2])
{
	char buf[64], *comma;
	int  a, b;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	comma = strchr(buf, ',');
	if (comma == NULL)
		return -1;
	*comma = '\0';
	if (pp_parse_int(buf, INT32_MIN, &a) != 0 ||
	    pp_parse_int(comma + 1, INT32_MIN, &b) != 0 || a >= CPU_SETSIZE ||
	    b >= CPU_SETSIZE)
		return -1;
	cpus[0] = a;
	cpus[1] = b;
	return 0;
}

/* A comma list of at most cap integers from min to max: 0, or -1. */
static inline int
pp_parse_ints(const char *arg, int min, int max, int *vals, int *n, int cap)
{
	char *dup, *tok, *save = NULL;
	int   v, rc = 0;

	*n  = 0;
	dup = strdup(arg);
	if (dup == NULL)
		return -1;
	for (tok = strtok_r(dup, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (*n == cap || pp_parse_int(tok, min, &v) != 0 || v > max) {
			rc = -1;
			break;
		}
		vals[(*n)++] = v;
	}
	free(dup);
	return rc == 0 && *n > 0 ? 0 : -1;
}

/* Requests in flight (rmq_rpc, zmq_rpc -w): 1 to 100000, a comma list of
 * at most PP_MAX_WINDOWS. */
#define PP_MAX_WINDOWS 16
static inline int
pp_parse_windows(const char *arg, int *w, int *n)
{
	return pp_parse_ints(arg, 1, 100000, w, n, PP_MAX_WINDOWS);
}

/* "all" (powers of two, 1 B .. 4 MiB) or a comma list. */
static inline int
pp_parse_sizes(const char *arg, size_t *sizes, int *n)
{
	char  *dup, *tok, *save = NULL;
	size_t v;
	int    rc = 0;

	*n = 0;
	if (strcmp(arg, "all") == 0) {
		for (v = 1; v <= ((size_t) 4 << 20); v <<= 1)
			sizes[(*n)++] = v;
		return 0;
	}
	dup = strdup(arg);
	if (dup == NULL)
		return -1;
	for (tok = strtok_r(dup, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (*n == PP_MAX_SIZES || pp_parse_size(tok, &v) != 0) {
			rc = -1;
			break;
		}
		sizes[(*n)++] = v;
	}
	free(dup);
	return rc == 0 && *n > 0 ? 0 : -1;
}

static inline double
pp_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

/*
 * One stamp per round trip: iteration i's end is iteration i+1's start, so
 * a loop of n round trips reads the clock n + 1 times, not 2n.  Stamps come
 * from the TSC where the CPU says it ticks at a constant rate through
 * sleep states (9 ns a read on this guest, against 24 ns for
 * clock_gettime: fi_pingpong reads no clock inside its loop, and two reads
 * per round trip were 8% of a 64 B shm round trip), and are turned into
 * microseconds by the clock_gettime span of the whole loop, so the mean
 * is exactly that span / n whatever the TSC's rate.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

static inline bool
pp_tsc_ok(void)
{
#if defined(__x86_64__) || defined(__i386__)
	static int ok = -1;
	char       line[4096];
	FILE      *f;

	if (ok >= 0)
		return ok == 1;
	ok = 0;
	f  = fopen("/proc/cpuinfo", "r");
	if (f == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "flags", 5) == 0) {
			ok = strstr(line, " constant_tsc") != NULL &&
			     strstr(line, " nonstop_tsc") != NULL;
			break;
		}
	fclose(f);
	return ok == 1;
#else
	return false;
#endif
}

static inline uint64_t
pp_tick(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (pp_tsc_ok())
		return __rdtsc();
#endif
	return (uint64_t) (pp_now_us() * 1e3);
}

struct pp_stamps {
	uint64_t *t;    /* n + 1 stamps */
	int       n;    /* round trips */
	double    us0;  /* clock_gettime at stamp 0 and at stamp n */
	double    us1;
};

static inline int
pp_stamps_init(struct pp_stamps *st, int n)
{
	st->n = n;
	st->t = malloc(((size_t) n + 1) * sizeof(*st->t));
	(void) pp_tsc_ok(); /* /proc read outside the timed loop */
	return st->t != NULL ? 0 : -1;
}

/* Before round trip 0. */
static inline void
pp_stamps_start(struct pp_stamps *st)
{
	st->us0  = pp_now_us();
	st->t[0] = pp_tick();
}

/* After round trip i (0-based). */
static inline void
pp_stamp(struct pp_stamps *st, int i)
{
	st->t[i + 1] = pp_tick();
}

/* After the last: one-way latencies (round trip / 2) into lat[0..n). */
static inline void
pp_stamps_finish(struct pp_stamps *st, double *lat)
{
	double span, per;
	int    i;

	st->us1 = pp_now_us();
	span    = (double) (st->t[st->n] - st->t[0]);
	per     = span > 0 ? (st->us1 - st->us0) / span : 0;
	for (i = 0; i < st->n; i++)
		lat[i] = (double) (st->t[i + 1] - st->t[i]) * per / 2;
}

static inline void
pp_stamps_free(struct pp_stamps *st)
{
	free(st->t);
	st->t = NULL;
}

/* Pin the calling process to one CPU (negative: leave it free). */
static inline int
pp_pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0 ? 0 : -errno;
}

/*
 * CPU time of the whole process (every thread: the library's own progress
 * or I/O threads count), in ns.  Busy-polling counts as CPU, sleeping does
 * not: per message it says what a message costs the host, not the wall.
 */
static inline uint64_t
pp_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static inline void
pp_fill(uint8_t *b, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t) (seed + i * 7);
}

static inline int
pp_cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

/*
 * The row of a size that was not measured because the path forced on the
 * socket cannot carry it: '-' where the figures would be, so a table keeps
 * its shape and a CSV reader can tell "skipped" from "failed".
 */
static inline void
pp_report_skip(bool csv, size_t size, int iters, const char *path)
{
	if (csv)
		printf("%zu,-,-,-,%s\n", size, path);
	else
		printf("  %10zu %8d %10s %10s %10s %10s  %s (cannot carry)\n",
		       size, iters, "-", "-", "-", "-", path);
}

static inline int
pp_env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v != NULL ? atoi(v) : dflt;
}

/* Rank and size from Open MPI, PMIx or PMI (MPICH hydra); -1 if none. */
static inline void
pp_mpi_rank(int *rank, int *size)
{
	*rank = pp_env_int("OMPI_COMM_WORLD_RANK",
	                   pp_env_int("PMIX_RANK", pp_env_int("PMI_RANK", -1)));
	*size = pp_env_int("OMPI_COMM_WORLD_SIZE",
	                   pp_env_int("PMI_SIZE", *rank >= 0 ? 2 : -1));
}

/*
 * A port both ranks derive from the job id, so no exchange is needed.
 * salt keeps two benchmarks of one job (or one script) off the same port.
 * It lies below the kernel's ephemeral range (ip_local_port_range), where
 * no outgoing connection of mpirun's or anyone's can be holding it (a CI
 * run failed on "Address already in use" with port 38770).
 */
static inline int
pp_job_port(unsigned salt)
{
	static const char *const vars[] = {
	    "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
	    "OMPI_MCA_orte_ess_jobid", "PMI_JOBID", "SLURM_JOB_ID", NULL};
	uint32_t    h = 2166136261u;
	const char *v = NULL;
	int         i, low = 32768, span;
	FILE       *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f != NULL) {
		if (fscanf(f, "%d", &low) != 1)
			low = 32768;
		fclose(f);
	}
	span = low - 20000 >= 2000 ? low - 20000 : 12000;

	for (i = 0; vars[i] != NULL && v == NULL; i++)
		v = getenv(vars[i]);
	if (v == NULL)
		return 25555 + (int) salt;
	for (; *v != '\0'; v++)
		h = (h ^ (uint8_t) *v) * 16777619u;
	if (salt != 0)
		h = (h ^ salt) * 16777619u;
	return 20000 + (int) (h % (uint32_t) span);
}

/* ---- a peer in a forked process (zmq_pingpong, zmq_thr) ---- */

/*
 * The forked peer as the signal handlers see it: whether SIGCHLD came
 * (blocking calls it interrupts stop retrying), its pid in the parent,
 * and the socket files (ipc://) that either side removes when a fatal
 * signal ends it.  One per process.
 */
struct pp_peer {
	volatile sig_atomic_t exited;      /* SIGCHLD came */
	volatile pid_t        pid;         /* in the parent; else -1 */
	char                  file[2][96]; /* "" for none */
};

static inline struct pp_peer *
pp_peer(void)
{
	static struct pp_peer peer = {.pid = -1};

	return &peer;
}

static inline void
pp_on_sigchld(int sig)
{
	(void) sig;
	pp_peer()->exited = 1;
}

/* A fatal signal: the peer ends too and the socket files go, then die. */
static inline void
pp_on_fatal(int sig)
{
	struct pp_peer *p = pp_peer();

	if (p->pid > 0)
		kill(p->pid, SIGTERM);
	if (p->file[0][0] != '\0')
		unlink(p->file[0]);
	if (p->file[1][0] != '\0')
		unlink(p->file[1]);
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * No SA_RESTART: a blocking call (zmq_send, zmq_recv) returns EINTR, so
 * it can see pp_peer()->exited.  0, or -1 with errno.
 */
static inline int
pp_set_handler(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;
	return sigaction(sig, &sa, NULL);
}

/* pp_on_fatal for SIGINT, SIGTERM and SIGHUP: 0, or -1 with errno. */
static inline int
pp_fatal_handlers(void)
{
	if (pp_set_handler(SIGINT, pp_on_fatal) != 0 ||
	    pp_set_handler(SIGTERM, pp_on_fatal) != 0 ||
	    pp_set_handler(SIGHUP, pp_on_fatal) != 0)
		return -1;
	return 0;
}

/*
 * Fork the peer, SIGCHLD watched and stdout flushed first (or the child
 * would print again what the parent had buffered).  The parent gets the
 * pid, kept for pp_on_fatal; the child 0.  -1 with errno and *failed
 * naming the step.
 */
static inline pid_t
pp_fork_peer(const char **failed)
{
	pid_t pid;

	*failed = "sigaction";
	if (pp_set_handler(SIGCHLD, pp_on_sigchld) != 0)
		return -1;
	*failed = "stdout";
	if (fflush(stdout) != 0)
		return -1;
	*failed = "fork";
	pid     = fork();
	if (pid > 0)
		pp_peer()->pid = pid;
	return pid;
}

/*
 * The peer's first step: pp_on_fatal for the fatal signals, and death
 * with its parent, even a SIGKILLed one (PR_SET_PDEATHSIG sends SIGTERM,
 * so the socket files go too).  0, or -1 with *failed naming the step and
 * errno (0: the parent had exited already).
 */
static inline int
pp_peer_init(pid_t parent, const char **failed)
{
	*failed = "sigaction";
	if (pp_fatal_handlers() != 0)
		return -1;
	*failed = "prctl";
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
		return -1;
	*failed = "parent exited";
	if (getppid() != parent) {
		errno = 0;
		return -1;
	}
	return 0;
}

/*
 * Read what the peer writes to fd until it closes it (its endpoints):
 * the bytes read (0: it wrote none, so it failed), NUL-terminated in buf,
 * or -1 with errno.
 */
static inline ssize_t
pp_read_all(int fd, char *buf, size_t cap)
{
	size_t  got = 0;
	ssize_t n;

	while (got < cap - 1) {
		n = read(fd, buf + got, cap - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t) n;
	}
	buf[got] = '\0';
	return (ssize_t) got;
}

/*
 * Wait for the peer, sending it SIGTERM first when this side failed (it
 * may be waiting for us), then forget it.  0 if it exited with 0; else 1,
 * having said on stderr "NAME killed by signal N" or "NAME failed" unless
 * this side failed (and said so already); -1 with errno if waitpid did.
 */
static inline int
pp_reap_peer(pid_t pid, bool failed, const char *name)
{
	int   status = 0, ret = 0;
	pid_t w;

	if (failed)
		kill(pid, SIGTERM);
	while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (w < 0)
		ret = -1;
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (!failed) {
			if (WIFSIGNALED(status))
				fprintf(stderr, "%s killed by signal %d\n",
				        name, WTERMSIG(status));
			else
				fprintf(stderr, "%s failed\n", name);
		}
		ret = 1;
	}
	pp_peer()->pid = -1;
	return ret;
}

/* Summarise one size's one-way latencies (sorts lat) and print its row. */
static inline void
pp_report(bool csv, size_t size, double *lat, int iters, const char *path)
{
	double sum = 0, p50, p99, avg, mbps;
	int    i, i99 = (int) ((double) iters * 0.99);

	for (i = 0; i < iters; i++)
		sum += lat[i];
	qsort(lat, (size_t) iters, sizeof(*lat), pp_cmp_double);
	p50  = lat[iters / 2];
	p99  = lat[i99 < iters ? i99 : iters - 1];
	avg  = sum / iters;
	mbps = avg > 0 ? (double) size / avg : 0;
	if (csv)
		printf("%zu,%.3f,%.3f,%.2f,%s\n", size, p50, p99, mbps, path);
	else
		printf("  %10zu %8d %10.2f %10.2f %10.2f %10.2f  %s\n", size,
		       iters, p50, p99, avg, mbps, path);
}

#endif /* RMQ_BENCH_H */
