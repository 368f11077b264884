/*
 * PUB/SUB: a publisher sends news on two topics, a subscriber takes one
 * (rmq_pubsub(7)).
 *
 * One program, two processes: it forks before any librmq call (a context
 * does not survive fork()).  The child's SUB subscribes to "weather.",
 * binds, and receives; the parent's PUB connects and publishes "sports."
 * and "weather." messages, then "weather.end".  The subscriber must see
 * every weather message, in order, and no sports.
 *
 * Here the subscriber binds and the publisher connects: rmq_connect on a
 * PUB returns once the publisher has the subscriber's subscriptions, so
 * nothing it publishes afterwards is lost for want of a filter, with no
 * other handshake between the two.  (Either side may bind.)
 *
 * Build: cc pubsub.c $(pkg-config --cflags --libs librmq)
 */
#define _POSIX_C_SOURCE 200809L /* fork, kill, waitpid under -std=c11 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rmq.h>

#define NNEWS 10

static const char topic[] = "weather.";

static pid_t child; /* in the parent, the child; 0 in the child */

/* Any failure ends the program; the parent takes the child with it, so
 * that nothing is left waiting for a peer that is gone. */
static void
check(long rc, const char *what)
{
	if (rc >= 0)
		return;
	fprintf(stderr, "pubsub: %s: %s\n", what, rmq_strerror((int)rc));
	if (child > 0)
		kill(child, SIGKILL);
	exit(1);
}

static void
fail(const char *why)
{
	fprintf(stderr, "pubsub: %s\n", why);
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
publisher(const char *ep)
{
	rmq_ctx    *ctx;
	rmq_socket *pub;
	char        msg[64];
	int         len, nodrop = 1;

	check(rmq_ctx_new(&ctx, NULL), "rmq_ctx_new");
	check(rmq_socket_open(ctx, RMQ_PUB, &pub), "rmq_socket_open");
	set_timeouts(pub);
	/* A subscriber that falls behind makes us wait instead of losing
	 * its copy (the default drops it): the check below counts on
	 * every message. */
	check(rmq_setopt(pub, RMQ_NODROP, &nodrop, sizeof(nodrop)),
	      "RMQ_NODROP");
	check(rmq_connect(pub, ep), "rmq_connect");
	for (int i = 0; i < NNEWS; i++) {
		len = snprintf(msg, sizeof(msg), "sports.%d", i);
		check(rmq_send(pub, msg, (size_t)len, 0), "rmq_send");
		len = snprintf(msg, sizeof(msg), "%s%d", topic, i);
		check(rmq_send(pub, msg, (size_t)len, 0), "rmq_send");
	}
	len = snprintf(msg, sizeof(msg), "%send", topic);
	check(rmq_send(pub, msg, (size_t)len, 0), "rmq_send");
	/* rmq_close waits (RMQ_LINGER) until the subscriber has them all. */
	check(rmq_close(pub), "rmq_close");
	check(rmq_ctx_destroy(ctx), "rmq_ctx_destroy");
}

static void
subscriber(const char *ep)
{
	rmq_ctx    *ctx;
	rmq_socket *sub;
	char        msg[64], want[64];
	ssize_t     n;
	int         len;

	check(rmq_ctx_new(&ctx, NULL), "rmq_ctx_new");
	check(rmq_socket_open(ctx, RMQ_SUB, &sub), "rmq_socket_open");
	set_timeouts(sub);
	/* A prefix of the message's bytes; length 0 would take everything. */
	check(rmq_setopt(sub, RMQ_SUBSCRIBE, topic, strlen(topic)),
	      "RMQ_SUBSCRIBE");
	check(rmq_bind(sub, ep), "rmq_bind");
	for (int i = 0; i <= NNEWS; i++) {
		n = rmq_recv(sub, msg, sizeof(msg), 0);
		check(n, "rmq_recv");
		if (i < NNEWS)
			len = snprintf(want, sizeof(want), "%s%d", topic, i);
		else
			len = snprintf(want, sizeof(want), "%send", topic);
		if (n != len || memcmp(msg, want, (size_t)len) != 0)
			fail("unexpected message (a sports one, or out of order)");
	}
	check(rmq_close(sub), "rmq_close");
	check(rmq_ctx_destroy(ctx), "rmq_ctx_destroy");
}

int
main(void)
{
	char ep[64];
	int  status;

	snprintf(ep, sizeof(ep), "shm://ex_pubsub_%ld", (long)getpid());
	child = fork();
	if (child < 0) {
		perror("pubsub: fork");
		return 1;
	}
	if (child == 0) {
		subscriber(ep);
		return 0;
	}
	publisher(ep);
	if (waitpid(child, &status, 0) < 0) {
		perror("pubsub: waitpid");
		return 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "pubsub: the subscriber failed\n");
		return 1;
	}
	printf("pubsub: %d of %d messages matched \"%s\"\n", NNEWS + 1,
	       2 * NNEWS + 1, topic);
	return 0;
}
