/*
 * Helper for netns_run.sh: one side of a PAIR whose peer's host vanishes.
 *   peer_lost serve ENDPOINT    bind, take one message, then never answer
 *   peer_lost wait  ENDPOINT    connect, send, wait (RCVTIMEO 30 s) for an
 *                               answer that cannot come: must end with
 *                               -ECONNRESET (the lost host noticed by the
 *                               control channel's keepalives), not -EAGAIN.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rmq.h"

int
main(int argc, char **argv)
{
	rmq_ctx        *ctx;
	rmq_socket     *s;
	char            c;
	int             tmo = 30000, rc;
	ssize_t         n;
	struct timespec t0, t1;

	if (argc != 3)
		return 2;
	if (rmq_ctx_new(&ctx, NULL) != 0 ||
	    rmq_socket_open(ctx, RMQ_PAIR, &s) != 0)
		return 3;
	if (strcmp(argv[1], "serve") == 0) {
		rc = rmq_bind(s, argv[2]);
		if (rc == 0 && rmq_recv(s, &c, 1, 0) == 1) {
			printf("serve: got the message, going silent\n");
			fflush(stdout);
			pause();
		}
		return 4;
	}
	rc = rmq_connect(s, argv[2]);
	if (rc != 0) {
		printf("wait: connect: %s\n", rmq_strerror(rc));
		return 5;
	}
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	if (rmq_send(s, "x", 1, 0) != 1)
		return 6;
	printf("wait: sent, waiting\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = rmq_recv(s, &c, 1, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("wait: recv returned %s after %.1f s\n", rmq_strerror((int) n),
	       (double) (t1.tv_sec - t0.tv_sec) +
	           (double) (t1.tv_nsec - t0.tv_nsec) / 1e9);
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return n == -RMQ_ECONNRESET ? 0 : 1;
}
