/*
 * zmq_rpc: the ZeroMQ anchor for rmq_rpc.  A DEALER keeps W requests in
 * flight against a ROUTER that echoes each to its sender, over ZeroMQ ipc
 * (a socket file under /tmp, unique per pid) or tcp (127.0.0.1, ephemeral
 * port), measured as rmq_rpc measures and printed in rmq_rpc's CSV, so that
 * perf/compare.sh --zmq-rpc puts both side by side.
 *
 * The server (forked child, CPU B) binds and tells the client (CPU A) its
 * endpoint through a pipe; both pin before zmq_ctx_new, so libzmq's I/O
 * thread runs where its process does.  Requests and checks as rmq_rpc's:
 * W slots, each with a payload of its own, every reply compared byte for
 * byte with its slot's request.  Around the timed requests the client
 * asks the server, in band, for its CPU clock (4-byte requests "CPU0" and
 * "CPU1", which no measured size is); "END!" ends it.
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
#include <unistd.h>

#include <zmq.h>

#include "bench.h"

#define PROG        "zmq_rpc"
#define HDR         16
#define IO_TIMEOUT  30000

struct opts {
	const char *transport;
	bool        csv;
	int         iters, warmup, cpus[2];
	size_t      sizes[PP_MAX_SIZES];
	int         nsizes, windows[PP_MAX_WINDOWS], nwindows;
};

static int
fail_zmq(const char *what)
{
	fprintf(stderr, PROG ": %s: %s\n", what, zmq_strerror(zmq_errno()));
	return 1;
}

static int
fail(const char *what)
{
	fprintf(stderr, PROG ": %s\n", what);
	return 1;
}

static void *
open_socket(void *ctx, int type)
{
	void *s = zmq_socket(ctx, type);
	int   tmo = IO_TIMEOUT, linger = 1000;

	if (s == NULL)
		return NULL;
	zmq_setsockopt(s, ZMQ_RCVTIMEO, &tmo, sizeof(tmo));
	zmq_setsockopt(s, ZMQ_SNDTIMEO, &tmo, sizeof(tmo));
	zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
	return s;
}

/* ------------------------------------------------------------- server */

static int
server(const struct opts *o, const char *addr, int ep_fd)
{
	void    *ctx, *s;
	uint8_t  id[256], *b;
	char     ep[256];
	size_t   len = sizeof(ep), max = 16;
	uint64_t cpu0 = 0, d;
	int      k, il, n, ret = 1;

	for (k = 0; k < o->nsizes; k++)
		max = o->sizes[k] > max ? o->sizes[k] : max;
	b = malloc(max);
	if (b == NULL || pp_pin(o->cpus[1]) != 0)
		return fail("setup");
	ctx = zmq_ctx_new();
	s   = ctx != NULL ? open_socket(ctx, ZMQ_ROUTER) : NULL;
	if (s == NULL)
		return fail_zmq("socket");
	if (zmq_bind(s, addr) != 0 ||
	    zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &len) != 0)
		return fail_zmq(addr);
	if (write(ep_fd, ep, strlen(ep)) != (ssize_t) strlen(ep))
		return fail("write endpoint");
	close(ep_fd);
	for (;;) {
		il = zmq_recv(s, id, sizeof(id), 0);
		if (il < 0)
			break;
		n = zmq_recv(s, b, max, 0);
		if (n < 0)
			break;
		if (n == 4 && memcmp(b, "END!", 4) == 0) {
			ret = 0;
			break;
		}
		if (n == 4 && memcmp(b, "CPU0", 4) == 0) {
			cpu0 = pp_cpu_ns();
		} else if (n == 4 && memcmp(b, "CPU1", 4) == 0) {
			d = pp_cpu_ns() - cpu0;
			memcpy(b, &d, 8);
			n = 8;
		}
		if (zmq_send(s, id, (size_t) il, ZMQ_SNDMORE) < 0 ||
		    zmq_send(s, b, (size_t) n, 0) < 0)
			break;
	}
	if (ret != 0)
		fail_zmq("serve");
	zmq_close(s);
	zmq_ctx_term(ctx);
	free(b);
	return ret;
}

/* ------------------------------------------------------------- client */

/* A request without payload bytes to check, and its answer. */
static int
ask(void *s, const char *what, uint64_t *answer)
{
	uint8_t b[16];
	int     n;

	if (zmq_send(s, what, 4, 0) < 0)
		return fail_zmq("send");
	n = zmq_recv(s, b, sizeof(b), 0);
	if (n < 0)
		return fail_zmq("recv");
	if (answer != NULL) {
		if (n != 8)
			return fail("a bad CPU answer");
		memcpy(answer, b, 8);
	}
	return 0;
}

static int
one_run(void *s, size_t size, int w, int warm, int iters, uint8_t *slots,
        uint8_t *rb, double *rtt, FILE *out, bool csv)
{
	struct pp_stamps st = {0};
	uint64_t         sent = 0, got = 0, total = (uint64_t) (warm + iters);
	uint64_t         seq, slot, cpu0 = 0, cpu, srv;
	double           t0 = 0, secs, p50 = 0, p99 = 0;
	int              k, n;

	for (k = 0; k < w; k++)
		pp_fill(slots + (size_t) k * size, size, (uint64_t) k * 31);
	if (w == 1 && pp_stamps_init(&st, iters) != 0)
		return fail("malloc");
	while (got < total) {
		if (got == (uint64_t) warm && sent == got) {
			/* Nothing in flight: the timed part starts. */
			if (ask(s, "CPU0", NULL) != 0)
				return 1;
			cpu0 = pp_cpu_ns();
			t0   = pp_now_us();
			if (w == 1)
				pp_stamps_start(&st);
		}
		while (sent < total && sent - got < (uint64_t) w &&
		       (sent != (uint64_t) warm || got == sent)) {
			slot = sent % (uint64_t) w;
			if (size >= HDR) {
				memcpy(slots + slot * size, &sent, 8);
				memcpy(slots + slot * size + 8, &slot, 8);
			}
			if (zmq_send(s, slots + slot * size, size, 0) < 0)
				return fail_zmq("send");
			sent++;
			if (sent == (uint64_t) warm)
				break; /* the warm-up drains first */
		}
		n = zmq_recv(s, rb, size, 0);
		if (n < 0)
			return fail_zmq("recv");
		seq  = got;
		slot = got % (uint64_t) w;
		if (size >= HDR) {
			memcpy(&seq, rb, 8);
			memcpy(&slot, rb + 8, 8);
		}
		if ((size_t) n != size || slot >= (uint64_t) w ||
		    seq >= sent || seq % (uint64_t) w != slot ||
		    memcmp(rb, slots + slot * size, size) != 0)
			return fail("a wrong reply");
		got++;
		if (w == 1 && got > (uint64_t) warm)
			pp_stamp(&st, (int) (got - (uint64_t) warm - 1));
	}
	secs = (pp_now_us() - t0) / 1e6;
	cpu  = pp_cpu_ns() - cpu0;
	if (ask(s, "CPU1", &srv) != 0)
		return 1;
	if (w == 1) {
		pp_stamps_finish(&st, rtt);
		for (k = 0; k < iters; k++)
			rtt[k] *= 2;
		pp_stamps_free(&st);
		qsort(rtt, (size_t) iters, sizeof(double), pp_cmp_double);
		p50 = rtt[iters / 2];
		p99 = rtt[(size_t) ((double) iters * 0.99)];
	}
	if (csv)
		fprintf(out, "%zu,%d,%d,%.0f,%.0f,%.0f,%.3f,%.3f\n", size, w,
		        iters, iters / secs, (double) cpu / iters,
		        (double) srv / iters, p50, p99);
	else
		fprintf(out, "  %8zu %6d %9d %12.0f %10.0f %10.0f %10.2f "
		        "%10.2f\n", size, w, iters, iters / secs,
		        (double) cpu / iters, (double) srv / iters, p50, p99);
	fflush(out);
	return 0;
}

static int
client(const struct opts *o, const char *ep)
{
	void    *ctx, *s;
	uint8_t *slots, *rb;
	double  *rtt = NULL;
	size_t   max = 16;
	int      k, j, w = 1, iters, warm, ret = 0, major, minor, patch;

	for (k = 0; k < o->nsizes; k++)
		max = o->sizes[k] > max ? o->sizes[k] : max;
	for (j = 0; j < o->nwindows; j++)
		w = o->windows[j] > w ? o->windows[j] : w;
	slots = malloc(max * (size_t) w);
	rb    = malloc(max);
	if (slots == NULL || rb == NULL || pp_pin(o->cpus[0]) != 0)
		return fail("setup");
	ctx = zmq_ctx_new();
	s   = ctx != NULL ? open_socket(ctx, ZMQ_DEALER) : NULL;
	if (s == NULL)
		return fail_zmq("socket");
	if (zmq_connect(s, ep) != 0)
		return fail_zmq(ep);
	zmq_version(&major, &minor, &patch);
	if (o->csv)
		printf("size,window,rpcs,rpc_per_s,client_cpu_ns,"
		       "server_cpu_ns,rtt_p50_us,rtt_p99_us\n");
	else
		printf("# zmq_rpc: ZeroMQ %d.%d.%d, DEALER -> ROUTER echo, %s, "
		       "cpus %d,%d\n# %8s %6s %9s %12s %10s %10s %10s %10s\n",
		       major, minor, patch, ep, o->cpus[0], o->cpus[1], "size",
		       "window", "rpcs", "rpc/s", "cli_ns", "srv_ns", "rtt_p50",
		       "rtt_p99");
	for (k = 0; k < o->nsizes && ret == 0; k++)
		for (j = 0; j < o->nwindows && ret == 0; j++) {
			w     = o->windows[j];
			iters = o->iters > 0 ? o->iters
			                     : (w == 1 ? 20000 : 200000);
			warm  = o->warmup >= 0 ? o->warmup : iters / 10;
			free(rtt);
			rtt = malloc((size_t) iters * sizeof(double));
			if (rtt == NULL)
				return fail("malloc");
			ret = one_run(s, o->sizes[k], w, warm, iters, slots, rb,
			              rtt, stdout, o->csv);
		}
	if (zmq_send(s, "END!", 4, 0) < 0)
		ret = fail_zmq("send");
	zmq_close(s);
	zmq_ctx_term(ctx);
	free(slots);
	free(rb);
	free(rtt);
	return ret;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--transport ipc|tcp] [-S SIZE[,SIZE...]] "
	        "[-w W[,W...]] [-I ITER] [-W WARMUP]\n"
	        "               [--cpus A,B] [--csv]\n"
	        "Sizes of 4 bytes are not measured (the CPU requests' size).\n");
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"transport", required_argument, NULL, 't'},
	    {"cpus", required_argument, NULL, 'u'},
	    {"csv", no_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts     o = {.transport = "ipc", .warmup = -1, .cpus = {0, 1}};
	struct pp_peer *peer = pp_peer();
	char            addr[200], ep[256];
	const char     *failed;
	int             c, k, epfd[2], ret, rc;
	pid_t           pid, parent = getpid();

	pp_parse_sizes("64,4096", o.sizes, &o.nsizes);
	pp_parse_windows("1,64", o.windows, &o.nwindows);
	while ((c = getopt_long(argc, argv, "S:w:I:W:h", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			o.transport = optarg;
			break;
		case 'u':
			if (pp_parse_cpus(optarg, o.cpus) != 0)
				return usage(stderr), 2;
			break;
		case 'c':
			o.csv = true;
			break;
		case 'S':
			if (pp_parse_sizes(optarg, o.sizes, &o.nsizes) != 0)
				return usage(stderr), 2;
			break;
		case 'w':
			if (pp_parse_windows(optarg, o.windows,
			                     &o.nwindows) != 0)
				return usage(stderr), 2;
			break;
		case 'I':
			o.iters = atoi(optarg);
			break;
		case 'W':
			o.warmup = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	for (k = 0; k < o.nsizes; k++)
		if (o.sizes[k] == 4)
			return usage(stderr), 2;
	if (strcmp(o.transport, "ipc") == 0) {
		snprintf(peer->file[0], sizeof(peer->file[0]),
		         "/tmp/" PROG ".%ld.ipc", (long) getpid());
		snprintf(addr, sizeof(addr), "ipc://%s", peer->file[0]);
	} else if (strcmp(o.transport, "tcp") == 0) {
		snprintf(addr, sizeof(addr), "tcp://127.0.0.1:*");
	} else {
		return usage(stderr), 2;
	}
	if (pipe(epfd) != 0)
		return fail("pipe");
	pid = pp_fork_peer(&failed);
	if (pid < 0)
		return fail(failed);
	if (pid == 0) {
		if (pp_peer_init(parent, &failed) != 0)
			_exit(fail(failed));
		close(epfd[0]);
		_exit(server(&o, addr, epfd[1]));
	}
	close(epfd[1]);
	ret = pp_fatal_handlers() != 0 ? fail("sigaction") : 0;
	if (ret == 0 && pp_read_all(epfd[0], ep, sizeof(ep)) <= 0)
		ret = fail("the server failed to bind");
	close(epfd[0]);
	if (ret == 0)
		ret = client(&o, ep);
	rc = pp_reap_peer(pid, ret != 0, PROG ": server");
	if (rc != 0)
		ret = 1;
	if (peer->file[0][0] != '\0')
		unlink(peer->file[0]);
	return ret;
}
