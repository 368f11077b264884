/* hello.c: a REQ asks, a REP answers, both in one process (README.md).
 * Build: cc hello.c $(pkg-config --cflags --libs librmq) */
#include <stdio.h>

#include <rmq.h>

#define TRY(call)                                                      \
	do {                                                           \
		long rc_ = (call);                                     \
		if (rc_ < 0) {                                         \
			fprintf(stderr, "%s: %s\n", #call,             \
			        rmq_strerror((int)rc_));               \
			return 1;                                      \
		}                                                      \
	} while (0)

int
main(void)
{
	rmq_ctx    *ctx;
	rmq_socket *rep, *req;
	char        ep[128], buf[64];
	size_t      eplen = sizeof(ep);
	ssize_t     n;

	TRY(rmq_ctx_new(&ctx, NULL)); /* $RMQ_CONFIG, or the defaults */
	TRY(rmq_socket_open(ctx, RMQ_REP, &rep));
	TRY(rmq_socket_open(ctx, RMQ_REQ, &req));
	TRY(rmq_bind(rep, "tcp://127.0.0.1:0")); /* port 0: a free one */
	TRY(rmq_getopt(rep, RMQ_LAST_ENDPOINT, ep, &eplen));
	TRY(rmq_connect(req, ep)); /* same host: the local link */

	TRY(rmq_send(req, "ping", 4, 0));
	TRY(n = rmq_recv(rep, buf, sizeof(buf), 0)); /* the request */
	TRY(rmq_send(rep, buf, (size_t)n, 0));       /* back to the asker */
	TRY(n = rmq_recv(req, buf, sizeof(buf), 0));
	printf("reply: %.*s (%s)\n", (int)n, buf, ep);

	TRY(rmq_close(req));
	TRY(rmq_close(rep));
	TRY(rmq_ctx_destroy(ctx));
	return 0;
}
