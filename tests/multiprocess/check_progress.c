/*
 * progress: thread.  A receiver whose context runs a progress thread does
 * not call librmq at all while a peer sends it a 64 MiB rendezvous message:
 * the peer's blocking send must still complete (the progress thread reads
 * the payload in the background).  Then: a socket closed while messages
 * stream in, a context destroyed right after; and both ends in thread mode
 * under a ping-pong of mixed sizes (the application and the progress
 * thread share each socket).  And in inline mode, coalescing or not: a
 * bound socket whose application is computing (no call for 3 s) still
 * answers a handshake at once (the context's thread, thread.c).  Built with -Db_sanitize=thread, this file is
 * the data-race test.
 */
#include <poll.h>

#include "testutil.h"
#include "checkmain.h"

#define BIG (64u * MiB)

static int
open_thread_ctx(rmq_ctx **ctx)
{
	setenv("RMQ_PROGRESS_MODE", "thread", 1);
	return rmq_ctx_new(ctx, NULL);
}

/* The sender (inline, in the child): one big message, then tell. */
static int
serve_big_send(rmq_socket *s, void *arg)
{
	int      done_fd = *(int *) arg;
	uint8_t *b       = malloc(BIG);
	ssize_t  n;
	char     ok[4];

	if (b == NULL)
		return 50;
	test_fill(b, BIG, 42);
	n = rmq_send(s, b, BIG, 0); /* returns once the peer has read it */
	if (write(done_fd, "d", 1) != 1)
		return 51;
	free(b);
	if (n != (ssize_t) BIG) {
		fprintf(stderr, "big send: %s\n", rmq_strerror((int) n));
		return 1;
	}
	/* Wait for the receiver's word before closing. */
	return rmq_recv(s, ok, sizeof(ok), 0) == 2 ? 0 : 2;
}

static void
background_rndv(const char *prov)
{
	char             bep[64], ep[256], c;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	struct pollfd    pfd;
	uint8_t         *rb = malloc(BIG);
	int              done[2];
	pid_t            pid;

	ck_assert_ptr_nonnull(rb);
	ck_assert_int_eq(pipe(done), 0);
	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_big_send, &done[1], ep, sizeof(ep));
	close(done[1]);
	ck_assert_int_eq(open_thread_ctx(&ctx), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	/*
	 * "Compute": no librmq call until the sender says its send is done.
	 * Without a progress thread this never happens (the sender waits for
	 * our read); the generous bound only keeps a failure from hanging.
	 */
	pfd.fd     = done[0];
	pfd.events = POLLIN;
	ck_assert_msg(poll(&pfd, 1, 60000) == 1,
	              "%s: the 64 MiB send did not complete in the background",
	              prov);
	ck_assert_int_eq(read(done[0], &c, 1), 1);
	close(done[0]);
	/* Already here: delivered from where the thread put it. */
	ck_assert_int_eq(rmq_recv(s, rb, BIG, RMQ_DONTWAIT), (ssize_t) BIG);
	ck_assert_uint_eq(test_check(rb, BIG, 42), BIG);
	ck_assert_int_eq(rmq_stats(s, &st), 0);
	/* Read out of the sender's memory by the local path (the default),
	 * or fi_read over the provider (suite provider: RMQ_LOCAL=0). */
	ck_assert_uint_eq(st.recv_msgs[getenv("RMQ_LOCAL") != NULL &&
	                                       strcmp(getenv("RMQ_LOCAL"),
	                                              "0") == 0
	                                   ? RMQ_PATH_RNDV_READ
	                                   : RMQ_PATH_LOCAL],
	                  1);
	ck_assert_int_eq(rmq_send(s, "ok", 2, 0), 2);
	close_all(ctx, s);
	free(rb);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_background_rndv_shm)
{
	background_rndv("shm");
}
END_TEST

START_TEST(test_background_rndv_tcp)
{
	background_rndv("tcp");
}
END_TEST

/* A peer that streams until its sends fail. */
static int
serve_stream(rmq_socket *s, void *arg)
{
	static uint8_t b[20000];
	int            i, timeout = 5000;

	(void) arg;
	rmq_setopt(s, RMQ_SNDTIMEO, &timeout, sizeof(timeout));
	for (i = 0; i < 100000; i++)
		if (rmq_send(s, b, (size_t) (i % 3 ? 100 : sizeof(b)), 0) < 0)
			break;
	return 0; /* whatever happened: the test is the other side's */
}

/* Close and destroy while messages stream in: no crash, no leak. */
START_TEST(test_close_while_streaming)
{
	char        bep[64], ep[256], buf[20000];
	rmq_ctx    *ctx;
	rmq_socket *s;
	int         i;
	pid_t       pid;

	pid = spawn_server(RMQ_PAIR, bind_addr("shm", bep, sizeof(bep)),
	                   serve_stream, NULL, ep, sizeof(ep));
	ck_assert_int_eq(open_thread_ctx(&ctx), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	for (i = 0; i < 50; i++)
		ck_assert_int_ge(rmq_recv(s, buf, sizeof(buf), 0), 100);
	usleep(20000); /* the thread keeps taking messages meanwhile */
	ck_assert_int_eq(rmq_close(s), 0);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
	/* SIGKILL, not SIGTERM: the child inherited Check's SIGTERM
	 * handler, which kills the whole process group -- this test too
	 * (strace: the child's kill(-pgid, SIGTERM), then exit 1 here). */
	kill(pid, SIGKILL);
	reap(pid);
}
END_TEST

/* Both ends in thread mode: mixed sizes both ways, every byte checked. */
static int
serve_echo(rmq_socket *s, void *arg)
{
	uint8_t *b = malloc(MiB);
	ssize_t  n;
	int      fails = 0;

	(void) arg;
	if (b == NULL)
		return 50;
	for (;;) {
		n = rmq_recv(s, b, MiB, 0);
		if (n < 0) {
			fails++;
			break;
		}
		if (n == 3 && memcmp(b, "end", 3) == 0)
			break;
		if (rmq_send(s, b, (size_t) n, 0) != n) {
			fails++;
			break;
		}
	}
	free(b);
	return fails;
}

START_TEST(test_thread_pingpong_mixed)
{
	static const size_t sizes[] = {0, 8, 4096, 5000, 65536, 300000, MiB};
	char        bep[64], ep[256];
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint8_t    *a = malloc(MiB), *b = malloc(MiB);
	size_t      n;
	int         i;
	pid_t       pid;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	/* The child inherits the mode: both ends run a progress thread. */
	setenv("RMQ_PROGRESS_MODE", "thread", 1);
	pid = spawn_server(RMQ_PAIR, bind_addr("shm", bep, sizeof(bep)),
	                   serve_echo, NULL, ep, sizeof(ep));
	ck_assert_int_eq(open_thread_ctx(&ctx), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	for (i = 0; i < 700; i++) {
		n = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
		test_fill(a, n, (uint64_t) i);
		ck_assert_int_eq(rmq_send(s, a, n, 0), (ssize_t) n);
		ck_assert_int_eq(rmq_recv(s, b, MiB, 0), (ssize_t) n);
		ck_assert_uint_eq(test_check(b, n, (uint64_t) i), n);
	}
	ck_assert_int_eq(rmq_send(s, "end", 3, 0), 3);
	close_all(ctx, s);
	free(a);
	free(b);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* The binder: bind, say where, compute 3 s without a call, then take the
 * message the client sent meanwhile. */
struct busy_arg {
	const char *prov;
	int         ep_fd;
};

static int
bind_then_compute(void *arg)
{
	struct busy_arg *a = arg;
	char             bep[64], ep[256], buf[8];
	size_t           len = sizeof(ep);
	rmq_ctx         *ctx;
	rmq_socket      *s;
	int              tmo = 20000;

	if (rmq_ctx_new(&ctx, NULL) != 0 ||
	    rmq_socket_open(ctx, RMQ_PAIR, &s) != 0 ||
	    rmq_bind(s, bind_addr(a->prov, bep, sizeof(bep))) != 0 ||
	    rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len) != 0)
		return 90;
	pipe_put_ep(a->ep_fd, ep);
	sleep(3); /* computing: no librmq call */
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	if (rmq_recv(s, buf, sizeof(buf), 0) != 1 || buf[0] != 'x')
		return 91;
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return 0;
}

/* _i: shm with coalescing on, tcp with it off (no flusher: the thread
 * runs for this alone), sockets on. */
START_TEST(test_handshake_while_computing)
{
	static const char *const provs[] = {"shm", "tcp", "sockets"};
	struct busy_arg a = {provs[_i], -1};
	char            ep[256];
	int             p[2], tmo = 2000;
	double          t0, ms;
	pid_t           pid;
	rmq_ctx        *ctx;
	rmq_socket     *s;

	setenv("RMQ_COALESCE", _i == 1 ? "0" : "1", 1);
	ck_assert_int_eq(pipe(p), 0);
	a.ep_fd = p[1];
	pid     = spawn_child(bind_then_compute, &a);
	ck_assert_int_eq(pipe_get_ep(p[0], ep, 30000), 0);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_CONNECT_TIMEOUT, &tmo, sizeof(tmo)),
	                 0);
	t0 = test_now();
	ck_assert_int_eq(rmq_connect(s, ep), 0); /* within 2 s, not 3 */
	ms = (test_now() - t0) * 1e3;
	fprintf(stderr, "%s, coalescing %s: connected to a computing binder "
	        "in %.1f ms\n", a.prov, _i == 1 ? "off" : "on", ms);
	ck_assert_int_eq(rmq_send(s, "x", 1, 0), 1);
	ck_assert_int_eq(reap(pid), 0);
	close_all(ctx, s);
	unsetenv("RMQ_COALESCE");
	close(p[0]);
	close(p[1]);
}
END_TEST

static Suite *
progress_suite(void)
{
	Suite *s  = suite_create("progress");
	TCase *tc = tcase_create("multiprocess");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_background_rndv_shm);
	tcase_add_test(tc, test_background_rndv_tcp);
	tcase_add_test(tc, test_close_while_streaming);
	tcase_add_test(tc, test_thread_pingpong_mixed);
	tcase_add_loop_test(tc, test_handshake_while_computing, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(progress_suite)
