/*
 * zmq_pingpong: the ZeroMQ anchor for rmq_pingpong --local.  Two processes
 * play REQ/REP ping-pong over ZeroMQ tcp (127.0.0.1, ephemeral port) or ipc
 * (a socket file under /tmp, unique per pid) and report, per message size,
 * the one-way latency and ping-pong bandwidth in rmq_pingpong's CSV format,
 * so perf/compare.sh can put both side by side.
 *
 * Conventions as rmq_pingpong and fi_pingpong: the measuring side (REQ) is
 * pinned to CPU A, the echo side (REP, forked child) to CPU B; warm-up is
 * 10% of the iterations, at least 10; one-way latency = round trip / 2 for
 * each iteration; p50/p99 over the timed iterations; MB/s = size / mean
 * one-way time (1 MB = 10^6 bytes).  The echo side receives into one buffer
 * and sends from another.  Sockets block (ZeroMQ has no busy-poll mode), so
 * libzmq's I/O thread runs on the same CPU as the thread that created the
 * context: pinning happens before zmq_ctx_new.
 *
 * Shutdown: ZeroMQ may drop the last messages of a socket closed right after
 * sending them, whatever ZMQ_LINGER says (libzmq issue 4660, seen on ipc).
 * So the measuring side ends with a DONE request whose reply it waits for,
 * and the echo side does not close its socket until the measuring side has
 * released it through a pipe, i.e. after that reply has arrived.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#endif
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "bench.h"

#define PROG       "zmq_pingpong"
#define PLAN_MAGIC 0x5a504d50u /* "PMPZ" */
#define CMD_SIZE   1
#define CMD_DONE   2
#define LINGER_MS  1000  /* nothing is pending at a clean close */
#define IO_TIMEOUT 30000 /* ms; a round trip never takes this long */

struct plan {
	uint32_t magic;
	uint32_t cmd;
	uint64_t size;
	uint64_t iters;
};

struct opts {
	const char *transport; /* "tcp" or "ipc" */
	bool        csv, same_cpu;
	int         iters, warmup;
	int         cpus[2];
	size_t      sizes[PP_MAX_SIZES];
	int         nsizes;
};

static const char *side = "measure"; /* for error messages */

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: " PROG " [--transport tcp|ipc] [-S SIZE[,SIZE...]|all] "
	        "[-I ITER] [-W WARMUP]\n"
	        "                    [--cpus A,B | --same-cpu] [--csv] "
	        "[--version] [--help]\n"
	        "REQ/REP ping-pong between two forked processes over ZeroMQ.\n"
	        "  --transport  tcp (127.0.0.1, ephemeral port; default) or "
	        "ipc (/tmp/" PROG ".PID.ipc)\n"
	        "  -S           sizes in bytes, k/m suffix allowed; all = 1 B .. "
	        "4 MiB, powers of two\n"
	        "               (default all)\n"
	        "  -I           timed iterations per size (default 10000 up to "
	        "64 KiB, 1000 above)\n"
	        "  -W           warm-up iterations (default 10%% of ITER, at "
	        "least 10)\n"
	        "  --cpus A,B   pin the measuring side to CPU A, the echo side "
	        "to CPU B (default 0,1;\n"
	        "               a negative CPU leaves that side unpinned)\n"
	        "  --same-cpu   both sides on CPU A\n"
	        "  --csv        print size,lat_p50_us,lat_p99_us,mbps,path\n");
}

static int
fail(const char *what)
{
	fprintf(stderr, PROG " (%s): %s\n", side, what);
	return 1;
}

static int
fail_errno(const char *what, int err)
{
	fprintf(stderr, PROG " (%s): %s: %s\n", side, what, strerror(err));
	return 1;
}

static int
fail_zmq(const char *what)
{
	int err = errno;

	if (err == EAGAIN)
		fprintf(stderr, PROG " (%s): %s: no progress in %d s, peer gone?\n",
		        side, what, IO_TIMEOUT / 1000);
	else
		fprintf(stderr, PROG " (%s): %s: %s\n", side, what,
		        zmq_strerror(err));
	return 1;
}

static int
pin(int cpu)
{
	char what[48];
	int  rc = pp_pin(cpu);

	if (rc != 0) {
		snprintf(what, sizeof(what), "cannot pin to CPU %d", cpu);
		return fail_errno(what, -rc);
	}
	return 0;
}

/*
 * zmq_send/zmq_recv that retry when a signal interrupts them, unless the
 * signal was SIGCHLD for the echo side's exit (then fail with ECONNRESET).
 * Return 0 if exactly len bytes went, or arrived in a message of exactly
 * len bytes; else -1 with errno set (EMSGSIZE for a wrong-sized message).
 */
static int
xsend(void *s, const void *buf, size_t len)
{
	int rc;

	while ((rc = zmq_send(s, buf, len, 0)) < 0 && errno == EINTR)
		if (pp_peer()->exited) {
			errno = ECONNRESET;
			return -1;
		}
	if (rc >= 0 && (size_t) rc != len) {
		errno = EMSGSIZE;
		return -1;
	}
	return rc < 0 ? -1 : 0;
}

static int
xrecv(void *s, void *buf, size_t len)
{
	int rc;

	while ((rc = zmq_recv(s, buf, len, 0)) < 0 && errno == EINTR)
		if (pp_peer()->exited) {
			errno = ECONNRESET;
			return -1;
		}
	if (rc >= 0 && (size_t) rc != len) {
		errno = EMSGSIZE;
		return -1;
	}
	return rc < 0 ? -1 : 0;
}

static int
setopt_int(void *s, int opt, int val, const char *name)
{
	if (zmq_setsockopt(s, opt, &val, sizeof(val)) != 0)
		return fail_zmq(name);
	return 0;
}

/* A REQ or REP socket with bounded linger and send/receive timeouts. */
static int
open_socket(void *ctx, int type, void **out)
{
	void *s = zmq_socket(ctx, type);

	*out = s;
	if (s == NULL)
		return fail_zmq("zmq_socket");
	if (setopt_int(s, ZMQ_LINGER, LINGER_MS, "ZMQ_LINGER") != 0 ||
	    setopt_int(s, ZMQ_RCVTIMEO, IO_TIMEOUT, "ZMQ_RCVTIMEO") != 0 ||
	    setopt_int(s, ZMQ_SNDTIMEO, IO_TIMEOUT, "ZMQ_SNDTIMEO") != 0)
		return 1;
	return 0;
}

static int
close_all(void *s, void *ctx)
{
	int ret = 0;

	if (s != NULL && zmq_close(s) != 0)
		ret = fail_zmq("zmq_close");
	if (ctx != NULL) {
		while (zmq_ctx_term(ctx) != 0)
			if (errno != EINTR) {
				ret = fail_zmq("zmq_ctx_term");
				break;
			}
	}
	return ret;
}

/* ----------------------------------------------------------- echo side */

static int
echo_loop(void *s)
{
	struct plan p;
	uint8_t    *buf = NULL, *sbuf = NULL;
	size_t      cap = 0;
	uint64_t    i;
	int         ret = 1;

	for (;;) {
		if (xrecv(s, &p, sizeof(p)) != 0) {
			fail_zmq("receive plan");
			goto out;
		}
		if (p.magic != PLAN_MAGIC ||
		    (p.cmd != CMD_SIZE && p.cmd != CMD_DONE)) {
			fail("bad plan message");
			goto out;
		}
		if (xsend(s, &p, sizeof(p)) != 0) {
			fail_zmq("acknowledge plan");
			goto out;
		}
		if (p.cmd == CMD_DONE)
			break;
		if (p.size > cap || buf == NULL) {
			free(buf);
			free(sbuf);
			cap  = p.size > 0 ? (size_t) p.size : 1;
			buf  = malloc(cap);
			sbuf = malloc(cap);
			if (buf == NULL || sbuf == NULL) {
				fail_errno("malloc", ENOMEM);
				goto out;
			}
			memset(buf, 0, cap);
			memset(sbuf, 0, cap);
		}
		for (i = 0; i < p.iters; i++) {
			if (xrecv(s, buf, (size_t) p.size) != 0) {
				fail_zmq("receive ping");
				goto out;
			}
			/* The pong carries the ping's bytes once per size
			 * (checked by the measuring side), then is resent. */
			if (i == 0)
				memcpy(sbuf, buf, (size_t) p.size);
			if (xsend(s, sbuf, (size_t) p.size) != 0) {
				fail_zmq("send pong");
				goto out;
			}
		}
	}
	ret = 0;
out:
	free(buf);
	free(sbuf);
	return ret;
}

/* Read until EOF: the measuring side closes the pipe once it is done. */
static int
wait_release(int fd)
{
	char    c;
	ssize_t n;

	while ((n = read(fd, &c, 1)) != 0)
		if (n < 0 && errno != EINTR)
			return fail_errno("read release pipe", errno);
	return 0;
}

static int
echo_side(const struct opts *o, const char *addr, int ep_fd, int release_fd)
{
	void   *ctx = NULL, *s = NULL;
	char    ep[256];
	size_t  len = sizeof(ep);
	ssize_t n;
	int     ret = 1;

	if (pin(o->same_cpu ? o->cpus[0] : o->cpus[1]) != 0)
		return 1;
	ctx = zmq_ctx_new();
	if (ctx == NULL)
		return fail_zmq("zmq_ctx_new");
	if (open_socket(ctx, ZMQ_REP, &s) != 0)
		goto out;
	if (zmq_bind(s, addr) != 0) {
		fail_zmq(addr);
		goto out;
	}
	if (zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &len) != 0) {
		fail_zmq("ZMQ_LAST_ENDPOINT");
		goto out;
	}
	len = strnlen(ep, sizeof(ep));
	n   = write(ep_fd, ep, len);
	if (n != (ssize_t) len) {
		fail_errno("write endpoint", n < 0 ? errno : EIO);
		goto out;
	}
	if (close(ep_fd) != 0) {
		ep_fd = -1;
		fail_errno("close endpoint pipe", errno);
		goto out;
	}
	ep_fd = -1;
	if (echo_loop(s) != 0)
		goto out;
	/* Keep the socket open until the DONE reply has arrived. */
	ret = wait_release(release_fd);
out:
	if (ep_fd >= 0)
		close(ep_fd);
	if (close_all(s, ctx) != 0)
		ret = 1;
	return ret;
}

/* ------------------------------------------------------ measuring side */

static int
plan_send(void *s, uint32_t cmd, uint64_t size, uint64_t iters)
{
	struct plan p = {PLAN_MAGIC, cmd, size, iters}, a;

	if (xsend(s, &p, sizeof(p)) != 0 || xrecv(s, &a, sizeof(a)) != 0)
		return fail_zmq(cmd == CMD_DONE ? "final handshake" : "plan");
	if (memcmp(&a, &p, sizeof(p)) != 0)
		return fail("bad plan acknowledgement");
	return 0;
}

static int
measure(void *s, const struct opts *o, const char *what)
{
	uint8_t *sb = NULL, *rb = NULL;
	double  *lat = NULL;
	struct pp_stamps st = {0};
	size_t   max = 1, size;
	char     path[16];
	int      k, i, iters, warm, major, minor, patch, ret = 1;

	snprintf(path, sizeof(path), "zmq_%s", o->transport);
	for (k = 0; k < o->nsizes; k++)
		if (o->sizes[k] > max)
			max = o->sizes[k];
	sb = malloc(max);
	rb = malloc(max);
	if (sb == NULL || rb == NULL) {
		fail_errno("malloc", ENOMEM);
		goto out;
	}
	zmq_version(&major, &minor, &patch);
	if (o->csv)
		printf(PP_CSV_HEADER "\n");
	else
		printf("# " PROG ": libzmq %d.%d.%d, REQ/REP, %s\n"
		       "# %10s %8s %10s %10s %10s %10s  %s\n",
		       major, minor, patch, what, "size", "iters", "p50_us",
		       "p99_us", "avg_us", "MB/s", "path");
	if (fflush(stdout) != 0) {
		fail_errno("stdout", errno);
		goto out;
	}
	for (k = 0; k < o->nsizes; k++) {
		size  = o->sizes[k];
		iters = o->iters > 0 ? o->iters : size <= 65536 ? 10000 : 1000;
		warm  = o->warmup >= 0 ? o->warmup
		                      : (iters / 10 > 10 ? iters / 10 : 10);
		free(lat);
		lat = malloc((size_t) iters * sizeof(*lat));
		if (lat == NULL) {
			fail_errno("malloc", ENOMEM);
			goto out;
		}
		pp_fill(sb, size, (uint64_t) k);
		if (plan_send(s, CMD_SIZE, size, (uint64_t) warm + (uint64_t) iters))
			goto out;
		pp_stamps_free(&st);
		if (pp_stamps_init(&st, iters) != 0) {
			fail_errno("malloc", ENOMEM);
			goto out;
		}
		for (i = 0; i < warm + iters; i++) {
			if (i == warm)
				pp_stamps_start(&st);
			if (xsend(s, sb, size) != 0) {
				fail_zmq("send ping");
				goto out;
			}
			if (xrecv(s, rb, size) != 0) {
				fail_zmq("receive pong");
				goto out;
			}
			if (i >= warm)
				pp_stamp(&st, i - warm);
			if (i == 0 && memcmp(rb, sb, size) != 0) {
				fprintf(stderr, PROG ": %zu B: corrupt echo\n",
				        size);
				goto out;
			}
		}
		pp_stamps_finish(&st, lat);
		pp_report(o->csv, size, lat, iters, path);
		if (fflush(stdout) != 0) {
			fail_errno("stdout", errno);
			goto out;
		}
	}
	/* Wait for the reply to DONE: nothing of ours is in flight after. */
	ret = plan_send(s, CMD_DONE, 0, 0);
out:
	free(sb);
	free(rb);
	free(lat);
	pp_stamps_free(&st);
	return ret;
}

static int
measure_side(const struct opts *o, const char *ep, const char *what)
{
	void *ctx, *s = NULL;
	int   ret = 1;

	ctx = zmq_ctx_new();
	if (ctx == NULL)
		return fail_zmq("zmq_ctx_new");
	if (open_socket(ctx, ZMQ_REQ, &s) != 0)
		goto out;
	if (zmq_connect(s, ep) != 0) {
		fail_zmq(ep);
		goto out;
	}
	ret = measure(s, o, what);
out:
	if (close_all(s, ctx) != 0)
		ret = 1;
	return ret;
}

/* ------------------------------------------------------------- driver */

/* Read the child's endpoint until EOF; 0 bytes means it failed to bind. */
static int
read_endpoint(int fd, char *ep, size_t cap)
{
	ssize_t got = pp_read_all(fd, ep, cap);

	if (got < 0)
		return fail_errno("read endpoint pipe", errno);
	return got > 0 ? 0 : fail("echo side failed to bind");
}

static int
run_local(const struct opts *o)
{
	struct pp_peer *peer = pp_peer(); /* file[0]: the socket's, if ipc */
	char            addr[200], ep[256], what[320];
	const char     *failed;
	int             epfd[2], relfd[2], ret, rc, a, b;
	pid_t           pid, parent = getpid();

	if (strcmp(o->transport, "ipc") == 0) {
		snprintf(peer->file[0], sizeof(peer->file[0]),
		         "/tmp/" PROG ".%ld.ipc", (long) getpid());
		snprintf(addr, sizeof(addr), "ipc://%s", peer->file[0]);
	} else {
		snprintf(addr, sizeof(addr), "tcp://127.0.0.1:*");
	}
	if (pipe(epfd) != 0)
		return fail_errno("pipe", errno);
	if (pipe(relfd) != 0)
		return fail_errno("pipe", errno);
	pid = pp_fork_peer(&failed);
	if (pid < 0)
		return fail_errno(failed, errno);
	if (pid == 0) {
		/* Die with the parent (even on SIGKILL), removing the
		 * socket file; on a clean exit the parent removes it. */
		side = "echo";
		if (pp_peer_init(parent, &failed) != 0)
			_exit(errno != 0 ? fail_errno(failed, errno)
			                 : fail(failed));
		if (close(epfd[0]) != 0 || close(relfd[1]) != 0)
			_exit(fail_errno("close pipe", errno));
		_exit(echo_side(o, addr, epfd[1], relfd[0]));
	}
	ret = 0;
	if (close(epfd[1]) != 0 || close(relfd[0]) != 0)
		ret = fail_errno("close pipe", errno);
	if (ret == 0 && pp_fatal_handlers() != 0)
		ret = fail_errno("sigaction", errno);
	a = o->cpus[0];
	b = o->same_cpu ? o->cpus[0] : o->cpus[1];
	if (ret == 0)
		ret = read_endpoint(epfd[0], ep, sizeof(ep));
	if (close(epfd[0]) != 0 && ret == 0)
		ret = fail_errno("close endpoint pipe", errno);
	if (ret == 0)
		ret = pin(a);
	if (ret == 0) {
		if (a < 0 && b < 0)
			snprintf(what, sizeof(what), "%s, unpinned", ep);
		else
			snprintf(what, sizeof(what), "%s, cpus %d,%d%s", ep, a,
			         b, a == b ? " (same CPU)" : "");
		ret = measure_side(o, ep, what);
	}
	/* Release the echo side: it closes once this end of the pipe is. */
	if (close(relfd[1]) != 0)
		ret = fail_errno("close release pipe", errno);
	rc = pp_reap_peer(pid, ret != 0, PROG ": echo side");
	if (rc < 0)
		ret = fail_errno("waitpid", errno);
	else if (rc > 0)
		ret = 1;
	if (peer->file[0][0] != '\0' && unlink(peer->file[0]) != 0 &&
	    errno != ENOENT)
		ret = fail_errno(peer->file[0], errno);
	return ret;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"transport", required_argument, NULL, 't'},
	    {"cpus", required_argument, NULL, 'u'},
	    {"same-cpu", no_argument, NULL, 'o'},
	    {"csv", no_argument, NULL, 'c'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts     o = {.transport = "tcp", .iters = 0, .warmup = -1,
	                     .cpus = {0, 1}};
	struct timespec ts;
	int             c, major, minor, patch;

	if (pp_parse_sizes("all", o.sizes, &o.nsizes) != 0)
		return 2;
	while ((c = getopt_long(argc, argv, "t:S:I:W:Vh", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			if (strcmp(optarg, "tcp") != 0 &&
			    strcmp(optarg, "ipc") != 0) {
				fprintf(stderr, PROG ": bad --transport %s "
				                "(tcp or ipc)\n",
				        optarg);
				return 2;
			}
			o.transport = optarg;
			break;
		case 'S':
			if (pp_parse_sizes(optarg, o.sizes, &o.nsizes) != 0) {
				fprintf(stderr, PROG ": bad -S %s\n", optarg);
				return 2;
			}
			break;
		case 'I':
			if (pp_parse_int(optarg, 1, &o.iters) != 0) {
				fprintf(stderr, PROG ": bad -I %s\n", optarg);
				return 2;
			}
			break;
		case 'W':
			if (pp_parse_int(optarg, 0, &o.warmup) != 0) {
				fprintf(stderr, PROG ": bad -W %s\n", optarg);
				return 2;
			}
			break;
		case 'u':
			if (pp_parse_cpus(optarg, o.cpus) != 0) {
				fprintf(stderr, PROG ": bad --cpus %s\n",
				        optarg);
				return 2;
			}
			break;
		case 'o':
			o.same_cpu = true;
			break;
		case 'c':
			o.csv = true;
			break;
		case 'V':
			zmq_version(&major, &minor, &patch);
			printf(PROG " (libzmq %d.%d.%d)\n", major, minor,
			       patch);
			return fflush(stdout) != 0 ? 1 : 0;
		case 'h':
			usage(stdout);
			return fflush(stdout) != 0 ? 1 : 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return fail_errno("clock_gettime", errno);
	return run_local(&o);
}
