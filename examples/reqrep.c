/*
 * REQ/REP: a client asks, a server answers, in turn (rmq(7)).
 *
 * One program, two processes: it forks before any librmq call (a context
 * does not survive fork(), so each process makes its own).  The parent
 * binds a REP socket and answers; the child connects a REQ socket and
 * asks.  Over the shm provider, so it runs on any Linux machine: the
 * endpoint names an abstract Unix socket, made unique with the parent's
 * pid so that several copies can run at once.
 *
 * Build: cc reqrep.c $(pkg-config --cflags --libs librmq)
 */
#define _POSIX_C_SOURCE 200809L /* fork, kill, waitpid under -std=c11 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rmq.h>

#define NREQ 5

static pid_t child; /* in the parent, the child; 0 in the child */

/* Any failure ends the program; the parent takes the child with it, so
 * that nothing is left waiting for a peer that is gone. */
static void
check(long rc, const char *what)
{
	if (rc >= 0)
		return;
	fprintf(stderr, "reqrep: %s: %s\n", what, rmq_strerror((int)rc));
	if (child > 0)
		kill(child, SIGKILL);
	exit(1);
}

static void
fail(const char *why)
{
	fprintf(stderr, "reqrep: %s\n", why);
	if (child > 0)
		kill(child, SIGKILL);
	exit(1);
}

/* Every wait ends after 5 s (-RMQ_EAGAIN): a lost peer fails the example
 * instead of hanging it. */
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
	rmq_socket *rep;
	char        req[64], reply[80];
	ssize_t     n;
	int         len;

	check(rmq_ctx_new(&ctx, NULL), "rmq_ctx_new");
	check(rmq_socket_open(ctx, RMQ_REP, &rep), "rmq_socket_open");
	set_timeouts(rep);
	check(rmq_bind(rep, ep), "rmq_bind");
	for (int i = 0; i < NREQ; i++) {
		/* rmq_recv returns the full size even when it copied less. */
		n = rmq_recv(rep, req, sizeof(req) - 1, 0);
		check(n, "rmq_recv");
		if ((size_t)n >= sizeof(req))
			fail("request too long");
		req[n] = '\0';
		len = snprintf(reply, sizeof(reply), "re: %s", req);
		check(rmq_send(rep, reply, (size_t)len, 0), "rmq_send");
	}
	/* rmq_close waits (RMQ_LINGER) until the last reply has arrived. */
	check(rmq_close(rep), "rmq_close");
	check(rmq_ctx_destroy(ctx), "rmq_ctx_destroy");
}

static void
client(const char *ep)
{
	rmq_ctx    *ctx;
	rmq_socket *req;
	char        msg[64], want[80], reply[80];
	ssize_t     n;
	int         len;

	check(rmq_ctx_new(&ctx, NULL), "rmq_ctx_new");
	check(rmq_socket_open(ctx, RMQ_REQ, &req), "rmq_socket_open");
	set_timeouts(req);
	/* Retries while the server is not bound yet (RMQ_CONNECT_TIMEOUT). */
	check(rmq_connect(req, ep), "rmq_connect");
	for (int i = 0; i < NREQ; i++) {
		len = snprintf(msg, sizeof(msg), "request %d", i);
		check(rmq_send(req, msg, (size_t)len, 0), "rmq_send");
		n = rmq_recv(req, reply, sizeof(reply), 0);
		check(n, "rmq_recv");
		len = snprintf(want, sizeof(want), "re: %s", msg);
		if (n != len || memcmp(reply, want, (size_t)len) != 0)
			fail("wrong reply");
	}
	check(rmq_close(req), "rmq_close");
	check(rmq_ctx_destroy(ctx), "rmq_ctx_destroy");
}

int
main(void)
{
	char ep[64];
	int  status;

	snprintf(ep, sizeof(ep), "shm://ex_reqrep_%ld", (long)getpid());
	child = fork();
	if (child < 0) {
		perror("reqrep: fork");
		return 1;
	}
	if (child == 0) {
		client(ep);
		return 0;
	}
	server(ep);
	if (waitpid(child, &status, 0) < 0) {
		perror("reqrep: waitpid");
		return 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "reqrep: the client failed\n");
		return 1;
	}
	printf("reqrep: %d requests answered\n", NREQ);
	return 0;
}
