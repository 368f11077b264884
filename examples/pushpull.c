/*
 * PUSH/PULL: a pipeline stage hands work on (rmq_pipeline(7)).
 *
 * One program, two processes: it forks before any librmq call (a context
 * does not survive fork()).  The parent binds a PULL socket; the child
 * connects a PUSH socket and sends the numbers 0 .. NTASK-1, one message
 * each.  With one pusher they arrive in order; the parent checks them.
 * (With several PULL peers a PUSH deals its messages to each in turn, and
 * a PULL fair-queues between its pushers.)
 *
 * Build: cc pushpull.c $(pkg-config --cflags --libs librmq)
 */
#define _POSIX_C_SOURCE 200809L /* fork, kill, waitpid under -std=c11 */

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rmq.h>

#define NTASK 1000

static pid_t child; /* in the parent, the child; 0 in the child */

/* Any failure ends the program; the parent takes the child with it, so
 * that nothing is left waiting for a peer that is gone. */
static void
check(long rc, const char *what)
{
	if (rc >= 0)
		return;
	fprintf(stderr, "pushpull: %s: %s\n", what, rmq_strerror((int)rc));
	if (child > 0)
		kill(child, SIGKILL);
	exit(1);
}

static void
fail(const char *why)
{
	fprintf(stderr, "pushpull: %s\n", why);
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

static uint64_t
puller(const char *ep)
{
	rmq_ctx    *ctx;
	rmq_socket *pull;
	uint32_t    task;
	uint64_t    sum = 0;
	ssize_t     n;

	check(rmq_ctx_new(&ctx, NULL), "rmq_ctx_new");
	check(rmq_socket_open(ctx, RMQ_PULL, &pull), "rmq_socket_open");
	set_timeouts(pull);
	check(rmq_bind(pull, ep), "rmq_bind");
	for (uint32_t i = 0; i < NTASK; i++) {
		n = rmq_recv(pull, &task, sizeof(task), 0);
		check(n, "rmq_recv");
		if (n != (ssize_t)sizeof(task) || task != i)
			fail("a task is missing or out of order");
		sum += task;
	}
	check(rmq_close(pull), "rmq_close");
	check(rmq_ctx_destroy(ctx), "rmq_ctx_destroy");
	return sum;
}

static void
pusher(const char *ep)
{
	rmq_ctx    *ctx;
	rmq_socket *push;

	check(rmq_ctx_new(&ctx, NULL), "rmq_ctx_new");
	check(rmq_socket_open(ctx, RMQ_PUSH, &push), "rmq_socket_open");
	set_timeouts(push);
	check(rmq_connect(push, ep), "rmq_connect");
	/* Small messages sent back to back: librmq may coalesce them into
	 * fewer transfers; each still arrives as one message. */
	for (uint32_t i = 0; i < NTASK; i++)
		check(rmq_send(push, &i, sizeof(i), 0), "rmq_send");
	/* rmq_close waits (RMQ_LINGER) until the puller has them all. */
	check(rmq_close(push), "rmq_close");
	check(rmq_ctx_destroy(ctx), "rmq_ctx_destroy");
}

int
main(void)
{
	char     ep[64];
	int      status;
	uint64_t sum;

	snprintf(ep, sizeof(ep), "shm://ex_pushpull_%ld", (long)getpid());
	child = fork();
	if (child < 0) {
		perror("pushpull: fork");
		return 1;
	}
	if (child == 0) {
		pusher(ep);
		return 0;
	}
	sum = puller(ep);
	if (waitpid(child, &status, 0) < 0) {
		perror("pushpull: waitpid");
		return 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "pushpull: the pusher failed\n");
		return 1;
	}
	if (sum != (uint64_t)NTASK * (NTASK - 1) / 2) {
		fprintf(stderr, "pushpull: wrong sum %llu\n",
		        (unsigned long long)sum);
		return 1;
	}
	printf("pushpull: %d tasks pulled, sum %llu\n", NTASK,
	       (unsigned long long)sum);
	return 0;
}
