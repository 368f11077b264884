/*
 * Zero-copy messages: rmq_msg_alloc / rmq_msg_data / rmq_msg_send /
 * rmq_msg_recv / rmq_msg_free (rmq_msg_alloc(3)).
 *
 * One program, two processes: it forks before any librmq call (a context
 * does not survive fork()).  The child connects a PAIR socket and sends
 * messages of 100 bytes, 64 KiB and 4 MiB, each filled in place in a
 * buffer librmq owns; the large ones leave by rendezvous straight from
 * that buffer, without a copy.  The parent binds the other PAIR socket,
 * receives each without a copy out, checks it, and answers with the
 * number of bytes it checked, in a message of its own.
 *
 * Build: cc zerocopy.c $(pkg-config --cflags --libs librmq)
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

static const size_t sizes[] = { 100, 64 << 10, 4 << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static pid_t child; /* in the parent, the child; 0 in the child */

/* Any failure ends the program; the parent takes the child with it, so
 * that nothing is left waiting for a peer that is gone. */
static void
check(long rc, const char *what)
{
	if (rc >= 0)
		return;
	fprintf(stderr, "zerocopy: %s: %s\n", what, rmq_strerror((int)rc));
	if (child > 0)
		kill(child, SIGKILL);
	exit(1);
}

static void
fail(const char *why)
{
	fprintf(stderr, "zerocopy: %s\n", why);
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

/* The byte at offset i of a message of size len: differs by size and by
 * position, so a misplaced or stale buffer shows. */
static uint8_t
pattern(size_t len, size_t i)
{
	return (uint8_t)(i * 7 + len);
}

/* Sends m, which is ours until rmq_msg_send succeeds and librmq's after. */
static void
send_msg(rmq_socket *s, rmq_msg *m)
{
	int rc = rmq_msg_send(s, m, 0);

	if (rc < 0)
		rmq_msg_free(m); /* still ours */
	check(rc, "rmq_msg_send");
}

static void
receiver(const char *ep)
{
	rmq_ctx    *ctx;
	rmq_socket *pair;
	rmq_msg    *m;
	uint64_t    total = 0;

	check(rmq_ctx_new(&ctx, NULL), "rmq_ctx_new");
	check(rmq_socket_open(ctx, RMQ_PAIR, &pair), "rmq_socket_open");
	set_timeouts(pair);
	check(rmq_bind(pair, ep), "rmq_bind");
	for (size_t k = 0; k < NSIZES; k++) {
		const uint8_t *p;
		size_t         len;

		/* Of any size: no buffer of ours to guess it for. */
		check(rmq_msg_recv(pair, &m, 0), "rmq_msg_recv");
		p   = rmq_msg_data(m);
		len = rmq_msg_size(m);
		if (len != sizes[k])
			fail("a message of the wrong size");
		for (size_t i = 0; i < len; i++)
			if (p[i] != pattern(len, i))
				fail("a message with the wrong bytes");
		total += len;
		/* Promptly: a small one may hold the socket's receive slab. */
		rmq_msg_free(m);
	}
	check(rmq_msg_alloc(pair, sizeof(total), &m), "rmq_msg_alloc");
	memcpy(rmq_msg_data(m), &total, sizeof(total));
	send_msg(pair, m);
	check(rmq_close(pair), "rmq_close");
	check(rmq_ctx_destroy(ctx), "rmq_ctx_destroy");
}

static void
sender(const char *ep)
{
	rmq_ctx    *ctx;
	rmq_socket *pair;
	rmq_msg    *m;
	uint64_t    want = 0, got;

	check(rmq_ctx_new(&ctx, NULL), "rmq_ctx_new");
	check(rmq_socket_open(ctx, RMQ_PAIR, &pair), "rmq_socket_open");
	set_timeouts(pair);
	check(rmq_connect(pair, ep), "rmq_connect");
	for (size_t k = 0; k < NSIZES; k++) {
		uint8_t *p;

		check(rmq_msg_alloc(pair, sizes[k], &m), "rmq_msg_alloc");
		p = rmq_msg_data(m);
		for (size_t i = 0; i < sizes[k]; i++)
			p[i] = pattern(sizes[k], i);
		/* Returns at once even for 4 MiB: the peer fetches it, and
		 * librmq frees m when the transfer is over. */
		send_msg(pair, m);
		want += sizes[k];
	}
	check(rmq_msg_recv(pair, &m, 0), "rmq_msg_recv");
	if (rmq_msg_size(m) != sizeof(got))
		fail("an answer of the wrong size");
	memcpy(&got, rmq_msg_data(m), sizeof(got));
	rmq_msg_free(m);
	if (got != want)
		fail("the receiver checked the wrong number of bytes");
	check(rmq_close(pair), "rmq_close");
	check(rmq_ctx_destroy(ctx), "rmq_ctx_destroy");
}

int
main(void)
{
	char ep[64];
	int  status;

	snprintf(ep, sizeof(ep), "shm://ex_zerocopy_%ld", (long)getpid());
	child = fork();
	if (child < 0) {
		perror("zerocopy: fork");
		return 1;
	}
	if (child == 0) {
		sender(ep);
		return 0;
	}
	receiver(ep);
	if (waitpid(child, &status, 0) < 0) {
		perror("zerocopy: waitpid");
		return 1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "zerocopy: the sender failed\n");
		return 1;
	}
	printf("zerocopy: %zu messages sent and received in place\n", NSIZES);
	return 0;
}
