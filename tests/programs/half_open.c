/*
 * Half-open connections cost nothing lasting: a REP serves on tcp while
 * N TCP connections are opened to its endpoint and never say HELLO (a
 * port scanner, a wedged client, a SYN-ACK flood's survivors).  The REP's
 * application computes and makes no librmq call during the flood, so the
 * context thread answers (and drops) them.  Then a real client must be
 * served within a second, the REP's RSS must not have grown by more than
 * 16 MiB, its open fds must be back within its pending-handshake limit,
 * and it must have counted what it dropped.
 *
 *   half_open N
 *
 * Raises RLIMIT_NOFILE for the N connections; says so and skips (77) if
 * it cannot.  The parent makes no librmq call before the flood is over.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procstat.h"
#include "rmq.h"

/* The REP: bind, say the endpoint, compute (no call) until told on go,
 * then echo until "quit"; its stats go to out. */
static int
serve(int ready, int go, int out)
{
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	char             ep[256], buf[64], c;
	size_t           len = sizeof(ep);
	ssize_t          n;

	if (rmq_ctx_new(&ctx, NULL) != 0 ||
	    rmq_socket_open(ctx, RMQ_REP, &s) != 0 ||
	    rmq_bind(s, "tcp://127.0.0.1:0") != 0 ||
	    rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len) != 0)
		return 10;
	if (write(ready, ep, sizeof(ep)) != (ssize_t) sizeof(ep))
		return 11;
	if (read(go, &c, 1) != 1) /* computing all this time */
		return 12;
	for (;;) {
		n = rmq_recv(s, buf, sizeof(buf), 0);
		if (n < 0)
			continue;
		(void) rmq_send(s, buf, (size_t) n, 0);
		if (n == 4 && memcmp(buf, "quit", 4) == 0)
			break;
	}
	rmq_stats(s, &st);
	if (write(out, &st, sizeof(st)) != (ssize_t) sizeof(st))
		return 13;
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return 0;
}

/* A REQ round trip: seconds, or -1.  go (>= 0): written once connected,
 * before the request (the REP starts calling then). */
static double
client(const char *ep, const char *what, int go)
{
	rmq_ctx    *ctx;
	rmq_socket *s;
	char        buf[64];
	int         tmo = 10000, ok;
	double      t0 = now();

	if (rmq_ctx_new(&ctx, NULL) != 0 ||
	    rmq_socket_open(ctx, RMQ_REQ, &s) != 0)
		return -1;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	rmq_setopt(s, RMQ_CONNECT_TIMEOUT, &tmo, sizeof(tmo));
	ok = rmq_connect(s, ep) == 0;
	if (ok && go >= 0) {
		printf("connected to the computing REP in %.3f s\n",
		       now() - t0);
		ok = write(go, "g", 1) == 1;
	}
	ok = ok &&
	     rmq_send(s, what, strlen(what), 0) == (ssize_t) strlen(what) &&
	     rmq_recv(s, buf, sizeof(buf), 0) == (ssize_t) strlen(what);
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return ok ? now() - t0 : -1;
}

int
main(int argc, char **argv)
{
	int                n = argc > 1 ? atoi(argv[1]) : 10000;
	int                rp[2], gp[2], op[2], *fds, i, fd0, fd1, st, fails = 0;
	struct rlimit      rl;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct rmq_stats   sst;
	char               ep[256];
	unsigned           port;
	long               rss0, rss1;
	double             t0, flood_s, first_s, after_s;
	pid_t              srv;

	if (n <= 0)
		return 2;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < (rlim_t) n + 256) {
		rl.rlim_cur = (rlim_t) n + 256;
		if (rl.rlim_max < rl.rlim_cur)
			rl.rlim_max = rl.rlim_cur; /* root may raise it */
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
			printf("SKIP: cannot raise the open-file limit to %d "
			       "(%s)\n", n + 256, strerror(errno));
			return 77;
		}
	}
	fds = calloc((size_t) n, sizeof(*fds));
	if (fds == NULL || pipe(rp) != 0 || pipe(gp) != 0 || pipe(op) != 0)
		return 2;
	srv = fork();
	if (srv == 0) {
		alarm(600);
		_exit(serve(rp[1], gp[0], op[1]));
	}
	if (read(rp[0], ep, sizeof(ep)) != (ssize_t) sizeof(ep) ||
	    sscanf(ep, "tcp://127.0.0.1:%u", &port) != 1) {
		fprintf(stderr, "no endpoint from the server\n");
		kill(srv, SIGKILL);
		return 1;
	}
	sleep(1); /* its context settled */
	rss0 = rss_kib(srv);
	fd0  = nfds(srv);
	sin.sin_port        = htons((uint16_t) port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	t0 = now();
	for (i = 0; i < n; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (fds[i] < 0) {
			fprintf(stderr, "socket %d: %s\n", i, strerror(errno));
			return 1;
		}
		(void) connect(fds[i], (struct sockaddr *) &sin, sizeof(sin));
		if (i % 500 == 499)
			usleep(10000); /* the accept queue holds 128 */
	}
	flood_s = now() - t0;
	sleep(2); /* what the server's thread makes of them */
	/* While they are all still open, the server still computing: a real
	 * client connects (the context thread answers its HELLO), and is
	 * answered once the REP calls. */
	first_s = client(ep, "while-flooded", gp[1]);
	if (first_s < 0) {
		fprintf(stderr, "FAIL: no round trip during the flood\n");
		fails++;
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	sleep(1);
	after_s = client(ep, "after", -1);
	/* Its goodbye taken, and the flood's last accepted and dropped. */
	for (i = 0; i < 50 && (fd1 = nfds(srv)) > fd0 + 8; i++)
		usleep(100000);
	rss1 = rss_kib(srv);
	(void) client(ep, "quit", -1);
	if (read(op[0], &sst, sizeof(sst)) != (ssize_t) sizeof(sst))
		memset(&sst, 0, sizeof(sst));
	waitpid(srv, &st, 0);
	printf("half_open %d: flood opened in %.2f s; a client during it "
	       "served in %.3f s, after it in %.3f s; "
	       "REP RSS %ld -> %ld KiB, fds %d -> %d; handshakes refused or "
	       "dropped: %llu\n",
	       n, flood_s, first_s, after_s, rss0, rss1, fd0, fd1,
	       (unsigned long long) sst.handshake_errors);
	if (after_s < 0 || after_s > 1.0) {
		fprintf(stderr, "FAIL: after the flood a client took %.3f s\n",
		        after_s);
		fails++;
	}
	if (!rss_within("REP", rss0, rss1, 16 * 1024))
		fails++;
	if (fd1 > fd0 + 8) {
		fprintf(stderr, "FAIL: REP fds %d -> %d\n", fd0, fd1);
		fails++;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "FAIL: server exit %d\n", st);
		fails++;
	}
	if (n > 1024 && sst.handshake_errors == 0) {
		fprintf(stderr, "FAIL: %d half-open connections, none dropped\n",
		        n);
		fails++;
	}
	free(fds);
	return fails != 0;
}
