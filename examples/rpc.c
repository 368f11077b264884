/*
 * DEALER/ROUTER: a client keeps many requests in flight, a server answers
 * each by the routing id of the peer that asked (rmq_rpc(7)).
 *
 * One program, two processes, forked before any librmq call.  The parent
 * binds a ROUTER and echoes every request back to its sender, frame for
 * frame; the child connects a DEALER with a routing id of its own, sends
 * NREQ requests of two frames (a number, then a text) without waiting,
 * then takes the replies, in whatever order they come.  Over shm, so it
 * runs on any Linux machine.
 *
 * Build: cc rpc.c $(pkg-config --cflags --libs librmq)
 */
#define _POSIX_C_SOURCE 200809L /* fork, kill, waitpid under -std=c11 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rmq.h>

#define NREQ 64

static pid_t child; /* in the parent, the child; 0 in the child */

static void
check(long rc, const char *what)
{
	if (rc >= 0)
		return;
	fprintf(stderr, "rpc: %s: %s\n", what, rmq_strerror((int)rc));
	if (child > 0)
		kill(child, SIGKILL);
	exit(1);
}

static void
fail(const char *why)
{
	fprintf(stderr, "rpc: %s\n", why);
	if (child > 0)
		kill(child, SIGKILL);
	exit(1);
}

static int
more(rmq_socket *s)
{
	int    v   = 0;
	size_t len = sizeof(v);

	check(rmq_getopt(s, RMQ_RCVMORE, &v, &len), "RMQ_RCVMORE");
	return v;
}

static void
set_timeouts(rmq_socket *s)
{
	int ms = 5000;

	check(rmq_setopt(s, RMQ_RCVTIMEO, &ms, sizeof(ms)), "RMQ_RCVTIMEO");
	check(rmq_setopt(s, RMQ_SNDTIMEO, &ms, sizeof(ms)), "RMQ_SNDTIMEO");
	check(rmq_setopt(s, RMQ_CONNECT_TIMEOUT, &ms, sizeof(ms)),
	      "RMQ_CONNECT_TIMEOUT");
}

static void
server(const char *ep)
{
	rmq_ctx    *ctx;
	rmq_socket *router;
	char        frame[8][256];
	ssize_t     n[8];
	int         i, k, nf;

	check(rmq_ctx_new(&ctx, NULL), "rmq_ctx_new");
	check(rmq_socket_open(ctx, RMQ_ROUTER, &router), "rmq_socket_open");
	set_timeouts(router);
	check(rmq_bind(router, ep), "rmq_bind");
	for (i = 0; i < NREQ; i++) {
		/* [routing id][number][text]: every frame of the message. */
		nf = 0;
		do {
			if (nf == 8)
				fail("a message of more than 8 frames");
			n[nf] = rmq_recv(router, frame[nf], sizeof(frame[nf]), 0);
			check(n[nf], "rmq_recv");
			nf++;
		} while (more(router));
		if (i == 0)
			printf("rpc: the client's routing id is \"%.*s\"\n",
			       (int)n[0], frame[0]);
		/* Back to the peer the first frame names. */
		for (k = 0; k < nf; k++)
			check(rmq_send(router, frame[k], (size_t)n[k],
			               k + 1 < nf ? RMQ_SNDMORE : 0),
			      "rmq_send");
	}
	check(rmq_close(router), "rmq_close");
	check(rmq_ctx_destroy(ctx), "rmq_ctx_destroy");
}

static void
client(const char *ep)
{
	rmq_ctx    *ctx;
	rmq_socket *dealer;
	char        text[64], want[64];
	int         i, num, seen[NREQ] = {0};
	ssize_t     n;

	check(rmq_ctx_new(&ctx, NULL), "rmq_ctx_new");
	check(rmq_socket_open(ctx, RMQ_DEALER, &dealer), "rmq_socket_open");
	set_timeouts(dealer);
	check(rmq_setopt(dealer, RMQ_ROUTING_ID, "client-1", 8),
	      "RMQ_ROUTING_ID");
	check(rmq_connect(dealer, ep), "rmq_connect");
	/* All of them in flight at once. */
	for (i = 0; i < NREQ; i++) {
		snprintf(text, sizeof(text), "request %d", i);
		check(rmq_send(dealer, &i, sizeof(i), RMQ_SNDMORE), "rmq_send");
		check(rmq_send(dealer, text, strlen(text), 0), "rmq_send");
	}
	for (i = 0; i < NREQ; i++) {
		n = rmq_recv(dealer, &num, sizeof(num), 0);
		check(n, "rmq_recv");
		if (n != sizeof(num) || num < 0 || num >= NREQ || seen[num]++ ||
		    !more(dealer))
			fail("a reply's first frame is wrong");
		n = rmq_recv(dealer, text, sizeof(text), 0);
		check(n, "rmq_recv");
		snprintf(want, sizeof(want), "request %d", num);
		if (n != (ssize_t)strlen(want) || memcmp(text, want, (size_t)n) ||
		    more(dealer))
			fail("a reply's second frame is wrong");
	}
	check(rmq_close(dealer), "rmq_close");
	check(rmq_ctx_destroy(ctx), "rmq_ctx_destroy");
}

int
main(void)
{
	char ep[64];
	int  status;

	snprintf(ep, sizeof(ep), "shm://ex_rpc_%ld", (long)getpid());
	child = fork();
	if (child < 0) {
		perror("rpc: fork");
		return 1;
	}
	if (child == 0) {
		client(ep);
		return 0;
	}
	server(ep);
	if (waitpid(child, &status, 0) < 0) {
		perror("rpc: waitpid");
		return 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "rpc: the client failed\n");
		return 1;
	}
	printf("rpc: %d requests in flight, all answered\n", NREQ);
	return 0;
}
