/*
 * Many peers on one server: a REP (or a PULL, or a PUB) binds; PROCS
 * client processes, each with SOCKS sockets in one context, connect at
 * once and then each socket makes ROUNDS round trips (PULL: sends ROUNDS
 * messages; PUB: once every subscriber is in, publishes ROUNDS messages,
 * each to all of them, and every SUB checks it got each one).  Reports the time until every socket was connected, the
 * server's RSS before and after (and per peer), one client process's RSS,
 * and fails if any socket could not connect or lost a message.
 *
 *   many_peers PROVIDER reqrep|pipeline|pubsub PROCS SOCKS ROUNDS
 *
 * The parent makes no librmq call: the server and the clients are forked
 * children.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procstat.h"
#include "rmq.h"

static int reqrep, pubsub;

/*
 * PUB: once all total subscribers are in, rounds messages to each; then
 * wait for stop (the subscribers have them).  "In" is the parent's word
 * (go) that every client's rmq_connect returned: only then does the PUB
 * surely hold every subscription (rmq_pubsub(7)); RMQ_NPEERS counts a
 * peer at its handshake, and publishing then could pass a subscriber
 * whose SUBSCRIBE was still on its way (it would wait for it in vain).
 */
static int
publish(rmq_socket *s, long total, int rounds, int go, int stop)
{
	char   msg[32], c;
	int    r, n, np = 0, one = 1;
	size_t len;

	rmq_setopt(s, RMQ_NODROP, &one, sizeof(one));
	if (read(go, &c, 1) != 1)
		return 15;
	while (np < total) {
		len = sizeof(np);
		if (rmq_getopt(s, RMQ_NPEERS, &np, &len) != 0)
			return 12;
		usleep(10000);
	}
	for (r = 0; r < rounds; r++) {
		n = snprintf(msg, sizeof(msg), "pub.%d", r);
		if (rmq_send(s, msg, (size_t) n, 0) != n)
			return 13;
	}
	return read(stop, &c, 1) == 1 ? 0 : 14;
}

/* The server: serves until it has taken total messages. */
static int
serve(const char *prov, long total, int rounds, int ready, int go,
      int stop)
{
	rmq_ctx    *ctx;
	rmq_socket *s;
	char        ep[256], bep[64], buf[64];
	size_t      len = sizeof(ep);
	long        got = 0;
	ssize_t     n;

	snprintf(bep, sizeof(bep), "%s://127.0.0.1:0", prov);
	/* A PUB's fan-out to many subscribers goes on after rmq_send
	 * returns; while this one waits in read(2), its thread sends. */
	if (pubsub)
		setenv("RMQ_PROGRESS_MODE", "thread", 1);
	if (rmq_ctx_new(&ctx, NULL) != 0 ||
	    rmq_socket_open(ctx, reqrep ? RMQ_REP : pubsub ? RMQ_PUB : RMQ_PULL,
	                    &s) != 0 ||
	    rmq_bind(s, bep) != 0 ||
	    rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len) != 0)
		return 10;
	if (write(ready, ep, sizeof(ep)) != (ssize_t) sizeof(ep))
		return 11;
	if (pubsub && publish(s, total, rounds, go, stop) != 0)
		return 12;
	total = pubsub ? 0 : total * rounds;
	while (got < total) {
		n = rmq_recv(s, buf, sizeof(buf), 0);
		if (n < 0)
			continue;
		got++;
		if (reqrep)
			(void) rmq_send(s, buf, (size_t) n, 0);
	}
	sleep(1); /* the last replies leave */
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return 0;
}

/* One client process: socks sockets; 'c' on up once all are connected,
 * then rounds each on go; 'r' on up after them, and close on done. */
static int
client(const char *ep, int socks, int rounds, int up, int go, int done)
{
	rmq_ctx     *ctx;
	rmq_socket **s = calloc((size_t) socks, sizeof(*s));
	char         msg[32], buf[64], c;
	int          i, r, rc, tmo = 120000, fails = 0;

	if (s == NULL || rmq_ctx_new(&ctx, NULL) != 0)
		return 20;
	for (i = 0; i < socks; i++) {
		if (rmq_socket_open(ctx, reqrep   ? RMQ_REQ
		                         : pubsub ? RMQ_SUB
		                                  : RMQ_PUSH, &s[i]) != 0)
			return 21;
		if (pubsub)
			rmq_setopt(s[i], RMQ_SUBSCRIBE, "", 0);
		rmq_setopt(s[i], RMQ_CONNECT_TIMEOUT, &tmo, sizeof(tmo));
		rmq_setopt(s[i], RMQ_RCVTIMEO, &tmo, sizeof(tmo));
		if ((rc = rmq_connect(s[i], ep)) != 0) {
			fprintf(stderr, "pid %d socket %d: no connection: %s\n",
			        (int) getpid(), i, rmq_strerror(rc));
			c = 'x'; /* the parent counts us out */
			(void) write(up, &c, 1);
			return 22;
		}
	}
	c = 'c';
	if (write(up, &c, 1) != 1 || read(go, &c, 1) != 1)
		return 23;
	for (r = 0; r < rounds; r++)
		for (i = 0; i < socks; i++) {
			int n = snprintf(msg, sizeof(msg), "%d.%d.%d",
			                 (int) getpid(), i, r);

			if (pubsub) {
				n = snprintf(msg, sizeof(msg), "pub.%d", r);
				if (rmq_recv(s[i], buf, sizeof(buf), 0) != n ||
				    memcmp(buf, msg, (size_t) n) != 0)
					fails++;
				continue;
			}
			if (rmq_send(s[i], msg, (size_t) n, 0) != n) {
				fails++;
				continue;
			}
			if (reqrep && (rmq_recv(s[i], buf, sizeof(buf), 0) != n ||
			               memcmp(buf, msg, (size_t) n) != 0))
				fails++;
		}
	c = 'r';
	if (write(up, &c, 1) != 1) /* rss measured now */
		return 24;
	if (read(done, &c, 1) != 1)
		return 25;
	for (i = 0; i < socks; i++)
		rmq_close(s[i]);
	rmq_ctx_destroy(ctx);
	free(s);
	return fails > 0 ? 30 : 0;
}

int
main(int argc, char **argv)
{
	int    procs, socks, rounds, rp[2], up[2], go[2], dn[2], sp[2], pg[2];
	int    i, st;
	int    nup;
	int    fails = 0;
	pid_t  srv, *cl;
	char   ep[256], c;
	long   rss0, rss1, crss;
	double t0, t_up;

	if (argc != 6) {
		fprintf(stderr, "usage: many_peers PROVIDER "
		                "reqrep|pipeline|pubsub PROCS SOCKS ROUNDS\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN); /* a server that failed: reported below */
	reqrep = strcmp(argv[2], "reqrep") == 0;
	pubsub = strcmp(argv[2], "pubsub") == 0;
	procs  = atoi(argv[3]);
	socks  = atoi(argv[4]);
	rounds = atoi(argv[5]);
	cl     = calloc((size_t) procs, sizeof(*cl));
	if (cl == NULL || procs < 1 || socks < 1 || rounds < 1 ||
	    pipe(rp) != 0 || pipe(up) != 0 || pipe(go) != 0 || pipe(dn) != 0 ||
	    pipe(sp) != 0 || pipe(pg) != 0)
		return 2;
	srv = fork();
	if (srv == 0)
		_exit(serve(argv[1], (long) procs * socks, rounds, rp[1],
		            pg[0], sp[0]));
	if (read(rp[0], ep, sizeof(ep)) != (ssize_t) sizeof(ep))
		return 1;
	sleep(1);
	rss0 = rss_kib(srv);
	t0   = now();
	for (i = 0; i < procs; i++) {
		cl[i] = fork();
		if (cl[i] == 0)
			_exit(client(ep, socks, rounds, up[1], go[0], dn[0]));
	}
	close(up[1]);
	close(go[0]);
	close(dn[0]);
	alarm(1800);
	for (i = 0, nup = 0; i < procs; i++) {
		if (read(up[0], &c, 1) != 1)
			break;
		nup += c == 'c';
	}
	t_up = now() - t0;
	rss1 = rss_kib(srv);
	crss = rss_kib(cl[0]);
	if (nup < procs) {
		fprintf(stderr, "FAIL: only %d of %d client processes "
		        "connected all their sockets\n", nup, procs);
		fails++;
	}
	if (write(pg[1], "g", 1) != 1) /* the PUB may publish */
		fails++;
	for (i = 0; i < nup; i++) /* go */
		if (write(go[1], "g", 1) != 1)
			break;
	for (i = 0; i < nup; i++)
		if (read(up[0], &c, 1) != 1)
			break;
	if (write(sp[1], "s", 1) != 1) /* the PUB may close */
		fails++;
	for (i = 0; i < procs; i++) /* close */
		if (write(dn[1], "d", 1) != 1)
			break;
	for (i = 0; i < procs; i++) {
		waitpid(cl[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "FAIL: client %d exit %d\n", i,
			        WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
			fails++;
		}
	}
	if (nup < procs) /* it waits for messages that will never come */
		kill(srv, SIGKILL);
	waitpid(srv, &st, 0);
	if ((nup == procs || pubsub) &&
	    (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
		fprintf(stderr, "FAIL: server exit %d\n", st);
		fails++;
	}
	printf("many_peers %s %s: %d processes x %d sockets = %d peers, "
	       "%d peers connected in %.1f s; server RSS %ld -> %ld KiB (%.1f "
	       "KiB per peer); a client process %ld KiB; %d round%s each\n",
	       argv[1], argv[2], procs, socks, procs * socks, nup * socks,
	       t_up, rss0, rss1,
	       (double) (rss1 - rss0) / (procs * socks), crss, rounds,
	       rounds == 1 ? "" : "s");
	free(cl);
	return fails != 0;
}
