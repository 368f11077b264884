/*
 * rmq_sessions: one ROUTER serving many DEALER peers at once (docs/
 * PERFORMANCE.md, "Sessions").  The parent is the server; J forked client
 * processes open N/J DEALER sockets each, connect them all, and once every
 * peer is connected each socket asks R questions (send on all its sockets,
 * then take every reply, checked), round after round.
 *
 * Reported: the time from the first connect to the last peer counted by
 * the ROUTER (RMQ_NPEERS); the server's resident memory per peer past the
 * first 256 (its RSS with N peers, less its RSS with 256, over N - 256;
 * the first 256 may take a ring each: ring.peers, local.peers); the
 * request rate the server saw (its requests over the time from the first
 * to the last).  Run it with N = 100 and N = 10000 to compare the rates.
 *
 * With -s SIZE each request carries SIZE bytes (the incast: -n 100 -r 1
 * -s 1MiB against -n 1 -r 1 -s 1MiB); the reply is 8 bytes, and the
 * server's peak resident memory is reported too.
 *
 * Clients are not what is measured: each sets FI_OFI_RXM_RX_SIZE and
 * FI_OFI_RXM_TX_SIZE to 64 (unless set) to hold its endpoints' memory down,
 * and every process raises its open-file limit as far as it may.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rmq.h"

#define PROG "rmq_sessions"

struct opts {
	const char *prov;
	int         peers, procs, rpcs;
	size_t      size;
	bool        csv;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* A field of /proc/self/status in KiB (VmRSS, VmHWM). */
static long
status_kib(const char *key)
{
	FILE  *f = fopen("/proc/self/status", "r");
	char   line[256];
	long   v = -1;
	size_t n = strlen(key);

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, n) == 0 && line[n] == ':')
			v = atol(line + n + 1);
	fclose(f);
	return v;
}

static long
rss_kib(void)
{
	return status_kib("VmRSS");
}

/* As many open files as we may: root raises the hard limit too. */
static void
raise_nofile(int want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_max < (rlim_t) want) {
		rl.rlim_max = (rlim_t) want;
		rl.rlim_cur = (rlim_t) want;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			return;
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

static int
die(const char *what, long rc)
{
	fprintf(stderr, PROG ": %s: %s\n", what,
	        rc < 0 ? rmq_strerror((int) rc) : "failed");
	return 1;
}

/* A client process: m sockets, connected, then R rounds once told. */
static int
client(const struct opts *o, int who, int m, int ep_fd, int ready_fd)
{
	rmq_ctx     *ctx;
	rmq_socket **s = calloc((size_t) m, sizeof(*s));
	uint8_t     *qb = calloc(1, o->size);
	char         ep[256], go;
	uint32_t     q[2], a[2];
	int          i, k, rc, tmo = 60000, cto = 120000;
	ssize_t      n;

	setenv("FI_OFI_RXM_RX_SIZE", "64", 0);
	setenv("FI_OFI_RXM_TX_SIZE", "64", 0);
	raise_nofile(1 << 16);
	if (s == NULL || qb == NULL ||
	    read(ep_fd, ep, sizeof(ep)) != (ssize_t) sizeof(ep))
		return 80;
	if ((rc = rmq_ctx_new(&ctx, NULL)) != 0)
		return die("rmq_ctx_new", rc);
	for (i = 0; i < m; i++) {
		if ((rc = rmq_socket_open(ctx, RMQ_DEALER, &s[i])) != 0)
			return die("rmq_socket_open", rc);
		rmq_setopt(s[i], RMQ_RCVTIMEO, &tmo, sizeof(tmo));
		rmq_setopt(s[i], RMQ_SNDTIMEO, &tmo, sizeof(tmo));
		rmq_setopt(s[i], RMQ_CONNECT_TIMEOUT, &cto, sizeof(cto));
		if ((rc = rmq_connect(s[i], ep)) != 0) {
			fprintf(stderr, PROG ": client %d: socket %d of %d: ",
			        who, i, m);
			return die("rmq_connect", rc);
		}
	}
	go = 'r';
	if (write(ready_fd, &go, 1) != 1 || read(ep_fd, &go, 1) != 1)
		return 81;
	for (k = 0; k < o->rpcs; k++) {
		for (i = 0; i < m; i++) {
			q[0] = (uint32_t) (who * 1000000 + i);
			q[1] = (uint32_t) k;
			memcpy(qb, q, sizeof(q));
			/* Large ones copied at once: every socket's request
			 * goes before any is waited for. */
			if ((n = rmq_send(s[i], qb, o->size, RMQ_DONTWAIT)) ==
			    -RMQ_EAGAIN)
				n = rmq_send(s[i], qb, o->size, 0);
			if (n < 0)
				return die("rmq_send", n);
		}
		for (i = 0; i < m; i++) {
			n = rmq_recv(s[i], a, sizeof(a), 0);
			if (n != (ssize_t) sizeof(a) ||
			    a[0] != (uint32_t) (who * 1000000 + i) ||
			    a[1] != (uint32_t) k)
				return die("a wrong reply", n < 0 ? n : 0);
		}
	}
	for (i = 0; i < m; i++)
		rmq_close(s[i]);
	rmq_ctx_destroy(ctx);
	free(s);
	free(qb);
	return 0;
}

static int
serve(const struct opts *o, rmq_socket *r, long rpcs, double *t_first,
      double *t_last)
{
	uint8_t  id[256], *b = malloc(o->size);
	long     i;
	ssize_t  il, bl;
	int      more;
	size_t   len = sizeof(more);

	if (b == NULL)
		return die("malloc", 0);
	for (i = 0; i < rpcs; i++) {
		il = rmq_recv(r, id, sizeof(id), 0);
		if (il < 0)
			return die("server recv", il);
		if (i == 0)
			*t_first = now_s();
		bl = rmq_recv(r, b, o->size, 0);
		rmq_getopt(r, RMQ_RCVMORE, &more, &len);
		if (bl != (ssize_t) o->size || more)
			return die("server recv", bl < 0 ? bl : 0);
		if ((bl = rmq_send(r, id, (size_t) il, RMQ_SNDMORE)) < 0 ||
		    (bl = rmq_send(r, b, 8, 0)) < 0)
			return die("server send", bl);
	}
	*t_last = now_s();
	free(b);
	return 0;
}

static int
npeers(rmq_socket *r)
{
	int    v   = 0;
	size_t len = sizeof(v);

	rmq_getopt(r, RMQ_NPEERS, &v, &len);
	return v;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"csv", no_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts o = {"tcp", 1000, 0, 10, 8, false};
	int         c, i, k, rc, fails = 0, (*fds)[2], ready[2], tmo = 60000;
	pid_t      *pids;
	char        ep[256] = "", bep[64], x;
	size_t      len = sizeof(ep);
	rmq_ctx    *ctx;
	rmq_socket *r;
	long        rss0, rss256 = -1, rssn;
	double      t0, t256 = 0, tn, tf = 0, tl = 0;

	while ((c = getopt_long(argc, argv, "p:n:j:r:s:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p': o.prov = optarg; break;
		case 'n': o.peers = atoi(optarg); break;
		case 'j': o.procs = atoi(optarg); break;
		case 'r': o.rpcs = atoi(optarg); break;
		case 's': o.size = strtoul(optarg, NULL, 0); break;
		case 'c': o.csv = true; break;
		default:
			fprintf(stderr, "usage: " PROG " [-p tcp|shm|sockets] "
			        "[-n PEERS] [-j PROCESSES] [-r RPCS] [-s BYTES] "
			        "[--csv]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (o.procs <= 0)
		o.procs = o.peers < 500 ? 1 : o.peers / 500;
	if (o.peers < 1 || o.procs < 1 || o.procs > o.peers || o.rpcs < 1 ||
	    o.size < 8)
		return 2;
	fds  = calloc((size_t) o.procs, sizeof(*fds));
	pids = calloc((size_t) o.procs, sizeof(*pids));
	if (fds == NULL || pids == NULL || pipe(ready) != 0)
		return 1;
	/* The clients first: forked before this process's first librmq
	 * call. */
	for (i = 0; i < o.procs; i++) {
		if (pipe(fds[i]) != 0)
			return 1;
		pids[i] = fork();
		if (pids[i] == 0) {
			int m = o.peers / o.procs + (i < o.peers % o.procs);

			close(fds[i][1]);
			close(ready[0]);
			_exit(client(&o, i, m, fds[i][0], ready[1]));
		}
		close(fds[i][0]);
	}
	close(ready[1]);
	raise_nofile(4 * o.peers + 1024);
	if ((rc = rmq_ctx_new(&ctx, NULL)) != 0 ||
	    (rc = rmq_socket_open(ctx, RMQ_ROUTER, &r)) != 0)
		return die("server socket", rc);
	rmq_setopt(r, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	snprintf(bep, sizeof(bep), "%s://127.0.0.1:0", o.prov);
	if ((rc = rmq_bind(r, bep)) != 0)
		return die("rmq_bind", rc);
	rmq_getopt(r, RMQ_LAST_ENDPOINT, ep, &len);
	rss0 = rss_kib();
	t0   = now_s();
	for (i = 0; i < o.procs; i++)
		if (write(fds[i][1], ep, sizeof(ep)) != (ssize_t) sizeof(ep))
			return 1;
	/* Serve the handshakes: a bound socket takes peers while called. */
	for (;;) {
		rmq_pollitem it = {.socket = r, .events = RMQ_POLLIN};

		k = npeers(r);
		if (rss256 < 0 && k >= (o.peers > 256 ? 256 : o.peers)) {
			rss256 = rss_kib();
			t256   = now_s();
		}
		if (k >= o.peers)
			break;
		if (now_s() - t0 > 600)
			return die("peers still missing after 600 s", 0);
		(void) rmq_poll(&it, 1, 10);
	}
	tn   = now_s();
	rssn = rss_kib();
	for (i = 0; i < o.procs; i++)
		if (read(ready[0], &x, 1) != 1)
			return die("a client failed to connect", 0);
	for (i = 0; i < o.procs; i++)
		if (write(fds[i][1], "g", 1) != 1)
			return 1;
	rc = serve(&o, r, (long) o.peers * o.rpcs, &tf, &tl);
	for (i = 0; i < o.procs; i++) {
		int st;

		close(fds[i][1]);
		waitpid(pids[i], &st, 0);
		fails += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	if (o.csv)
		printf("provider,peers,procs,size,setup_s,"
		       "rss_kib_per_peer_past_256,peak_kib,rpcs,rpc_per_s,mbps\n"
		       "%s,%d,%d,%zu,%.2f,%.2f,%ld,%ld,%.0f,%.1f\n", o.prov,
		       o.peers, o.procs, o.size, tn - t0,
		       o.peers > 256 ? (double) (rssn - rss256) /
		                           (o.peers - 256)
		                     : (double) (rssn - rss0) / o.peers,
		       status_kib("VmHWM"), (long) o.peers * o.rpcs,
		       (double) o.peers * o.rpcs / (tl - tf),
		       (double) o.peers * o.rpcs * (double) o.size /
		           (tl - tf) / 1e6);
	else
		printf("# " PROG " %s: %d DEALERs in %d processes, %d RPCs each\n"
		       "setup: %.2f s (256 peers at %.2f s)\n"
		       "server RSS: %ld KiB bound, %ld KiB at 256 peers, %ld KiB "
		       "at %d: %.1f KiB per peer past the first 256\n"
		       "rate: %.0f RPC/s (%ld requests of %zu B in %.3f s: "
		       "%.1f MB/s in); server peak RSS %ld KiB\n",
		       o.prov, o.peers, o.procs, o.rpcs, tn - t0, t256 - t0,
		       rss0, rss256, rssn, o.peers,
		       o.peers > 256 ? (double) (rssn - rss256) /
		                           (o.peers - 256)
		                     : (double) (rssn - rss0) / o.peers,
		       (double) o.peers * o.rpcs / (tl - tf),
		       (long) o.peers * o.rpcs, o.size, tl - tf,
		       (double) o.peers * o.rpcs * (double) o.size /
		           (tl - tf) / 1e6,
		       status_kib("VmHWM"));
	rmq_close(r);
	rmq_ctx_destroy(ctx);
	return rc != 0 || fails != 0;
}
