/*
 * rmq_poll: one thread waits on two sockets at once (rmq_poll(3)).
 *
 * One program, two processes: it forks before any librmq call (a context
 * does not survive fork()).  The parent binds two PULL sockets, "a" and
 * "b"; the child connects a PUSH socket to each and sends NA messages to
 * a and NB to b, interleaved.  The parent waits in rmq_poll on both, and
 * drains whichever is ready without blocking, until it has them all.
 *
 * Build: cc poll.c $(pkg-config --cflags --libs librmq)
 */
#define _POSIX_C_SOURCE 200809L /* fork, kill, waitpid under -std=c11 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rmq.h>

#define NA 100
#define NB 50

static pid_t child; /* in the parent, the child; 0 in the child */

/* Any failure ends the program; the parent takes the child with it, so
 * that nothing is left waiting for a peer that is gone. */
static void
check(long rc, const char *what)
{
	if (rc >= 0)
		return;
	fprintf(stderr, "poll: %s: %s\n", what, rmq_strerror((int)rc));
	if (child > 0)
		kill(child, SIGKILL);
	exit(1);
}

static void
fail(const char *why)
{
	fprintf(stderr, "poll: %s\n", why);
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

/* Receives what s has ready, without waiting; *count counts it, and each
 * message carries its own sequence number. */
static void
drain(rmq_socket *s, int *count, int max)
{
	int     seq;
	ssize_t n;

	while ((n = rmq_recv(s, &seq, sizeof(seq), RMQ_DONTWAIT)) >= 0) {
		if (n != (ssize_t)sizeof(seq) || seq != *count || seq >= max)
			fail("a message is missing or out of order");
		(*count)++;
	}
	if (n != -RMQ_EAGAIN) /* -RMQ_EAGAIN: nothing more just now */
		check(n, "rmq_recv");
}

static void
waiter(const char *ep_a, const char *ep_b)
{
	rmq_ctx      *ctx;
	rmq_socket   *a, *b;
	int           na = 0, nb = 0, rc;
	rmq_pollitem  items[2];

	check(rmq_ctx_new(&ctx, NULL), "rmq_ctx_new");
	check(rmq_socket_open(ctx, RMQ_PULL, &a), "rmq_socket_open");
	check(rmq_socket_open(ctx, RMQ_PULL, &b), "rmq_socket_open");
	set_timeouts(a);
	set_timeouts(b);
	check(rmq_bind(a, ep_a), "rmq_bind");
	check(rmq_bind(b, ep_b), "rmq_bind");
	/* The wait also makes progress for both sockets: it answers the
	 * child's handshakes, so nothing else needs to. */
	items[0] = (rmq_pollitem){ .socket = a, .fd = -1, .events = RMQ_POLLIN };
	items[1] = (rmq_pollitem){ .socket = b, .fd = -1, .events = RMQ_POLLIN };
	while (na < NA || nb < NB) {
		rc = rmq_poll(items, 2, 5000);
		check(rc, "rmq_poll");
		if (rc == 0)
			fail("nothing arrived within 5 s");
		if (items[0].revents & RMQ_POLLIN)
			drain(a, &na, NA);
		if (items[1].revents & RMQ_POLLIN)
			drain(b, &nb, NB);
	}
	check(rmq_close(a), "rmq_close");
	check(rmq_close(b), "rmq_close");
	check(rmq_ctx_destroy(ctx), "rmq_ctx_destroy");
}

static void
sender(const char *ep_a, const char *ep_b)
{
	rmq_ctx    *ctx;
	rmq_socket *a, *b;

	check(rmq_ctx_new(&ctx, NULL), "rmq_ctx_new");
	check(rmq_socket_open(ctx, RMQ_PUSH, &a), "rmq_socket_open");
	check(rmq_socket_open(ctx, RMQ_PUSH, &b), "rmq_socket_open");
	set_timeouts(a);
	set_timeouts(b);
	check(rmq_connect(a, ep_a), "rmq_connect");
	check(rmq_connect(b, ep_b), "rmq_connect");
	for (int i = 0; i < NA; i++) {
		check(rmq_send(a, &i, sizeof(i), 0), "rmq_send");
		if (i < NB)
			check(rmq_send(b, &i, sizeof(i), 0), "rmq_send");
	}
	check(rmq_close(a), "rmq_close");
	check(rmq_close(b), "rmq_close");
	check(rmq_ctx_destroy(ctx), "rmq_ctx_destroy");
}

int
main(void)
{
	char ep_a[64], ep_b[64];
	int  status;

	snprintf(ep_a, sizeof(ep_a), "shm://ex_poll_a_%ld", (long)getpid());
	snprintf(ep_b, sizeof(ep_b), "shm://ex_poll_b_%ld", (long)getpid());
	child = fork();
	if (child < 0) {
		perror("poll: fork");
		return 1;
	}
	if (child == 0) {
		sender(ep_a, ep_b);
		return 0;
	}
	waiter(ep_a, ep_b);
	if (waitpid(child, &status, 0) < 0) {
		perror("poll: waitpid");
		return 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "poll: the sender failed\n");
		return 1;
	}
	printf("poll: %d messages from a and %d from b\n", NA, NB);
	return 0;
}
