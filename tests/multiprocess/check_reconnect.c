/*
 * Reconnection, asynchronous connects, rmq_disconnect and rmq_unbind,
 * with real processes: a REQ whose REP is killed and restarted on the
 * same endpoint goes on by itself; a PUSH connected before its PULL exists
 * keeps its messages until it comes; RMQ_RECONNECT_IVL -1 stops it; a REQ
 * that sends again cancels its request; a REP whose reply cannot go
 * still receives.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "testutil.h"
#include "checkmain.h"

static const char *const provs[] = {"shm", "tcp", "sockets"};

/* An endpoint nobody listens on yet, that a later bind can take. */
static void
free_endpoint(const char *prov, char *ep, size_t len)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t          sl  = sizeof(sin);
	int                fd;

	if (strcmp(prov, "shm") == 0) {
		snprintf(ep, len, "shm://rc_%d_%ld", (int) getpid(),
		         (long) (test_now() * 1e6) % 1000000);
		return;
	}
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *) &sin, sizeof(sin)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *) &sin, &sl), 0);
	close(fd);
	snprintf(ep, len, "%s://127.0.0.1:%u", prov, ntohs(sin.sin_port));
}

/* A REP on ep that echoes until killed; it says on go_fd when bound. */
struct rep_arg {
	const char *ep;
	int         ready_fd; /* writes 1 once bound (-1: none) */
	int         wait_fd;  /* binds after reading from it (-1: at once) */
};

static int
rep_echo(void *arg)
{
	struct rep_arg *a = arg;
	rmq_ctx        *ctx;
	rmq_socket     *s;
	int             v, rc;

	if (a->wait_fd >= 0 && pipe_get(a->wait_fd, &v, 60000) != 0)
		return 90;
	if (open_socket(RMQ_REP, &ctx, &s) != 0)
		return 91;
	rc = rmq_bind(s, a->ep);
	if (rc != 0) {
		fprintf(stderr, "rep bind %s: %s\n", a->ep, rmq_strerror(rc));
		return 92;
	}
	if (a->ready_fd >= 0)
		pipe_put(a->ready_fd, 1);
	echo_forever(s);
	return 0;
}

/* _i: provider.  The REP is killed and a new one binds the same
 * endpoint: the REQ goes on without a new rmq_connect. */
START_TEST(test_req_reconnects)
{
	char            ep[128];
	int             p1[2], p2[2], v;
	struct rep_arg  a1, a2;
	pid_t           r1, r2;
	rmq_ctx        *ctx;
	rmq_socket     *s;
	struct rmq_stats st;
	double          t0;

	free_endpoint(provs[_i], ep, sizeof(ep));
	ck_assert_int_eq(pipe(p1), 0);
	ck_assert_int_eq(pipe(p2), 0);
	a1 = (struct rep_arg){ep, p1[1], -1};
	a2 = (struct rep_arg){ep, p1[1], p2[0]};
	r1 = spawn_child(rep_echo, &a1);
	r2 = spawn_child(rep_echo, &a2); /* binds when told */
	ck_assert_int_eq(pipe_get(p1[0], &v, 30000), 0);
	ck_assert_int_eq(open_socket(RMQ_REQ, &ctx, &s), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RCVTIMEO, 2000), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_SNDTIMEO, 2000), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RECONNECT_IVL, 20), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	ck_assert_int_eq(round_trip_within(s, "one", 5000), 0);

	kill(r1, SIGKILL);
	ck_assert_int_eq(reap(r1), 200 + SIGKILL);
	pipe_put(p2[1], 1);
	ck_assert_int_eq(pipe_get(p1[0], &v, 30000), 0);
	t0 = test_now();
	ck_assert_msg(round_trip_within(s, "two", 10000) == 0,
	              "no round trip with the restarted REP");
	ck_assert_double_lt(test_now() - t0, 10.0);
	ck_assert_int_eq(rmq_stats(s, &st), 0);
	ck_assert_uint_ge(st.reconnects, 1);
	ck_assert_uint_ge(st.peers_lost, 1);
	ck_assert_int_eq(getopt_int(s, RMQ_NPEERS), 1);
	close_all(ctx, s);
	kill(r2, SIGKILL);
	reap(r2);
}
END_TEST

/* RMQ_RECONNECT_IVL -1: the REQ stays without a peer. */
START_TEST(test_reconnect_off)
{
	char            ep[128], buf[8];
	int             p1[2], p2[2], v;
	struct rep_arg  a1, a2;
	pid_t           r1, r2;
	rmq_ctx        *ctx;
	rmq_socket     *s;
	ssize_t         rc;

	free_endpoint("tcp", ep, sizeof(ep));
	ck_assert_int_eq(pipe(p1), 0);
	ck_assert_int_eq(pipe(p2), 0);
	a1 = (struct rep_arg){ep, p1[1], -1};
	a2 = (struct rep_arg){ep, p1[1], p2[0]};
	r1 = spawn_child(rep_echo, &a1);
	r2 = spawn_child(rep_echo, &a2);
	ck_assert_int_eq(pipe_get(p1[0], &v, 30000), 0);
	ck_assert_int_eq(open_socket(RMQ_REQ, &ctx, &s), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RECONNECT_IVL, -1), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RCVTIMEO, 2000), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_SNDTIMEO, 500), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	ck_assert_int_eq(round_trip_within(s, "one", 5000), 0);
	kill(r1, SIGKILL);
	ck_assert_int_eq(reap(r1), 200 + SIGKILL);
	pipe_put(p2[1], 1);
	ck_assert_int_eq(pipe_get(p1[0], &v, 30000), 0);
	usleep(300000);
	/* The death is reported once, then there is nobody to talk to. */
	rc = rmq_send(s, "x", 1, 0);
	if (rc == 1)
		rc = rmq_recv(s, buf, sizeof(buf), 0);
	ck_assert_int_eq(rc, -RMQ_ECONNRESET);
	ck_assert_int_eq(rmq_send(s, "x", 1, 0), -RMQ_ENOTCONN);
	ck_assert_int_eq(getopt_int(s, RMQ_NPEERS), 0);
	close_all(ctx, s);
	kill(r2, SIGKILL);
	reap(r2);
}
END_TEST

/* A PULL that binds when told and takes n messages "m<i>" in order. */
struct pull_arg {
	const char *ep;
	int         wait_fd;
	int         n;
};

static int
pull_in_order(void *arg)
{
	struct pull_arg *a = arg;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	char             buf[64], want[64];
	ssize_t          n;
	int              i, v, fails = 0;

	if (pipe_get(a->wait_fd, &v, 60000) != 0)
		return 90;
	if (open_socket(RMQ_PULL, &ctx, &s) != 0)
		return 91;
	if (rmq_bind(s, a->ep) != 0)
		return 92;
	setopt_int(s, RMQ_RCVTIMEO, 10000);
	for (i = 0; i < a->n; i++) {
		n = rmq_recv(s, buf, sizeof(buf), 0);
		snprintf(want, sizeof(want), "m%d", i);
		CHILD_CHECK(fails, n == (ssize_t) strlen(want) &&
		                   memcmp(buf, want, (size_t) n) == 0,
		            "message %d: got %zd bytes", i, n);
		if (n < 0)
			break;
	}
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return fails;
}

/* _i: provider.  RMQ_CONNECT_ASYNC before the PULL exists: rmq_connect
 * returns at once, sends are kept up to RMQ_SNDHWM (then -RMQ_EAGAIN),
 * and all arrive in order once the PULL binds. */
START_TEST(test_connect_async_keeps_messages)
{
	char            ep[128], m[16];
	int             go[2], i;
	struct pull_arg pa;
	pid_t           puller;
	rmq_ctx        *ctx;
	rmq_socket     *s;
	rmq_pollitem    it;
	double          t0;

	free_endpoint(provs[_i], ep, sizeof(ep));
	ck_assert_int_eq(pipe(go), 0);
	pa     = (struct pull_arg){ep, go[0], 12};
	puller = spawn_child(pull_in_order, &pa);
	ck_assert_int_eq(open_socket(RMQ_PUSH, &ctx, &s), 0);
	ck_assert_int_eq(getopt_int(s, RMQ_CONNECT_ASYNC), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_CONNECT_ASYNC, 1), 0);
	ck_assert_int_eq(getopt_int(s, RMQ_CONNECT_ASYNC), 1);
	ck_assert_int_eq(setopt_int(s, RMQ_SNDHWM, 10), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RECONNECT_IVL, 20), 0);
	t0 = test_now();
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	ck_assert_double_lt(test_now() - t0, 1.0); /* did not wait */
	ck_assert_int_eq(getopt_int(s, RMQ_NPEERS), 0);
	it = (rmq_pollitem){.socket = s, .events = RMQ_POLLOUT};
	ck_assert_int_eq(rmq_poll(&it, 1, 0), 1);
	for (i = 0; i < 10; i++) {
		snprintf(m, sizeof(m), "m%d", i);
		ck_assert_int_eq(rmq_send(s, m, strlen(m), RMQ_DONTWAIT),
		                 (ssize_t) strlen(m));
	}
	ck_assert_int_eq(rmq_send(s, "m10", 3, RMQ_DONTWAIT), -RMQ_EAGAIN);
	ck_assert_int_eq(rmq_poll(&it, 1, 0), 0);
	pipe_put(go[1], 1); /* now the PULL binds */
	/* A blocking send waits for room: the kept ones leave first. */
	ck_assert_int_eq(setopt_int(s, RMQ_SNDTIMEO, 20000), 0);
	ck_assert_int_eq(rmq_send(s, "m10", 3, 0), 3);
	ck_assert_int_eq(rmq_send(s, "m11", 3, 0), 3);
	ck_assert_int_eq(getopt_int(s, RMQ_NPEERS), 1);
	close_all(ctx, s);
	ck_assert_int_eq(reap(puller), 0);
}
END_TEST

/* A PUSH whose PULL died keeps what it sends until the next PULL. */
START_TEST(test_push_keeps_while_reconnecting)
{
	char            ep[128], m[16];
	int             go1[2], go2[2], i;
	struct pull_arg a1, a2;
	pid_t           p1, p2;
	rmq_ctx        *ctx;
	rmq_socket     *s;
	double          end;

	free_endpoint("tcp", ep, sizeof(ep));
	ck_assert_int_eq(pipe(go1), 0);
	ck_assert_int_eq(pipe(go2), 0);
	a1 = (struct pull_arg){ep, go1[0], 1000000}; /* never done */
	a2 = (struct pull_arg){ep, go2[0], 5};
	p1 = spawn_child(pull_in_order, &a1);
	p2 = spawn_child(pull_in_order, &a2);
	pipe_put(go1[1], 1);
	ck_assert_int_eq(open_socket(RMQ_PUSH, &ctx, &s), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RECONNECT_IVL, 20), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_CONNECT_TIMEOUT, 20000), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	kill(p1, SIGKILL);
	ck_assert_int_eq(reap(p1), 200 + SIGKILL);
	/* Until we notice, nothing is sent: then no peer, a dialer. */
	end = test_now() + 10;
	while (getopt_int(s, RMQ_NPEERS) != 0 && test_now() < end) {
		rmq_pollitem it = {.socket = s, .events = RMQ_POLLIN};
		(void) rmq_poll(&it, 1, 10);
	}
	ck_assert_int_eq(getopt_int(s, RMQ_NPEERS), 0);
	for (i = 0; i < 5; i++) {
		snprintf(m, sizeof(m), "m%d", i);
		ck_assert_int_eq(rmq_send(s, m, strlen(m), RMQ_DONTWAIT),
		                 (ssize_t) strlen(m));
	}
	pipe_put(go2[1], 1);
	close_all(ctx, s); /* lingers until they are out */
	ck_assert_int_eq(reap(p2), 0);
}
END_TEST

static int
rep_two(void *arg)
{
	const char *ep = arg;
	rmq_ctx    *ctx;
	rmq_socket *s;
	char        buf[256], big[100] = {0};
	ssize_t     n;
	int         fails = 0;

	if (open_socket(RMQ_REP, &ctx, &s) != 0 || rmq_bind(s, ep) != 0)
		return 90;
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	/* Two requests, each echoed: the REQ cancels the first. */
	n = rmq_recv(s, buf, sizeof(buf), 0);
	CHILD_CHECK(fails, n == 1 && buf[0] == 'a', "first: %zd", n);
	CHILD_CHECK(fails, rmq_send(s, buf, 1, 0) == 1, "reply a");
	n = rmq_recv(s, buf, sizeof(buf), 0);
	CHILD_CHECK(fails, n == 1 && buf[0] == 'b', "second: %zd", n);
	CHILD_CHECK(fails, rmq_send(s, buf, 1, 0) == 1, "reply b");
	/* A reply the asker cannot take (its RMQ_MAXMSGSIZE is 16) fails;
	 * the next recv takes the next request all the same. */
	n = rmq_recv(s, buf, sizeof(buf), 0);
	CHILD_CHECK(fails, n == 1 && buf[0] == 'c', "third: %zd", n);
	n = rmq_send(s, big, sizeof(big), 0);
	CHILD_CHECK(fails, n == -RMQ_EMSGSIZE, "big reply: %zd", n);
	n = rmq_recv(s, buf, sizeof(buf), 0);
	CHILD_CHECK(fails, n == 1 && buf[0] == 'd', "fourth: %zd", n);
	CHILD_CHECK(fails, rmq_send(s, buf, 1, 0) == 1, "reply d");
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return fails;
}

/* _i: provider.  A REQ that sends again cancels its request (the late
 * reply is dropped and counted); a REP whose reply cannot go receives
 * the next request. */
START_TEST(test_req_resend_and_rep_recv)
{
	char             ep[128], buf[8];
	pid_t            rep;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	int64_t          mm = 16;
	struct rmq_stats st;

	free_endpoint(provs[_i], ep, sizeof(ep));
	rep = spawn_child(rep_two, ep);
	ck_assert_int_eq(open_socket(RMQ_REQ, &ctx, &s), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_MAXMSGSIZE, &mm, sizeof(mm)), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RCVTIMEO, 10000), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	ck_assert_int_eq(rmq_send(s, "a", 1, 0), 1);
	ck_assert_int_eq(rmq_send(s, "b", 1, 0), 1); /* cancels "a" */
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 1);
	ck_assert_int_eq(buf[0], 'b');
	ck_assert_int_eq(rmq_stats(s, &st), 0);
	ck_assert_uint_ge(st.dropped, 1); /* a's late reply */
	ck_assert_int_eq(setopt_int(s, RMQ_RCVTIMEO, 300), 0);
	ck_assert_int_eq(rmq_send(s, "c", 1, 0), 1);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), -RMQ_EAGAIN);
	ck_assert_int_eq(setopt_int(s, RMQ_RCVTIMEO, 10000), 0);
	ck_assert_int_eq(rmq_send(s, "d", 1, 0), 1);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 1);
	ck_assert_int_eq(buf[0], 'd');
	close_all(ctx, s);
	ck_assert_int_eq(reap(rep), 0);
}
END_TEST

/* _i: provider.  rmq_disconnect: no more peer, no reconnecting. */
START_TEST(test_disconnect)
{
	char           ep[128];
	int            p1[2], v;
	struct rep_arg a;
	pid_t          r;
	rmq_ctx       *ctx;
	rmq_socket    *s;

	free_endpoint(provs[_i], ep, sizeof(ep));
	ck_assert_int_eq(pipe(p1), 0);
	a = (struct rep_arg){ep, p1[1], -1};
	r = spawn_child(rep_echo, &a);
	ck_assert_int_eq(pipe_get(p1[0], &v, 30000), 0);
	ck_assert_int_eq(open_socket(RMQ_REQ, &ctx, &s), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RECONNECT_IVL, 10), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	ck_assert_int_eq(round_trip_within(s, "one", 5000), 0);
	ck_assert_int_eq(rmq_disconnect(s, ep), 0);
	ck_assert_int_eq(getopt_int(s, RMQ_NPEERS), 0);
	ck_assert_int_eq(rmq_disconnect(s, ep), -ENOENT);
	ck_assert_int_eq(rmq_disconnect(s, NULL), -RMQ_EINVAL);
	usleep(200000);
	ck_assert_int_eq(getopt_int(s, RMQ_NPEERS), 0); /* stays so */
	ck_assert_int_eq(rmq_send(s, "x", 1, RMQ_DONTWAIT), -RMQ_ENOTCONN);
	/* And connecting again works. */
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	ck_assert_int_eq(round_trip_within(s, "two", 5000), 0);
	close_all(ctx, s);
	kill(r, SIGKILL);
	reap(r);
}
END_TEST

/* rmq_unbind: the port is free again, the endpoint refuses. */
START_TEST(test_unbind)
{
	char        ep[256], other[128];
	size_t      len = sizeof(ep);
	rmq_ctx    *ctx;
	rmq_socket *s;
	int         fd;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	unsigned    port;

	ck_assert_int_eq(open_socket(RMQ_PULL, &ctx, &s), 0);
	ck_assert_int_eq(rmq_bind(s, "tcp://127.0.0.1:0"), 0);
	ck_assert_int_eq(rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len), 0);
	ck_assert_int_eq(sscanf(ep, "tcp://127.0.0.1:%u", &port), 1);
	ck_assert_int_eq(rmq_unbind(s, ep), 0);
	ck_assert_int_eq(rmq_unbind(s, ep), -ENOENT);
	sin.sin_port        = htons((uint16_t) port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ne(connect(fd, (struct sockaddr *) &sin, sizeof(sin)), 0);
	ck_assert_int_eq(errno, ECONNREFUSED);
	close(fd);
	/* Bound again, and unbound by the endpoint as given. */
	ck_assert_int_eq(rmq_bind(s, ep), 0);
	ck_assert_int_eq(rmq_unbind(s, ep), 0);
	free_endpoint("tcp", other, sizeof(other));
	ck_assert_int_eq(rmq_bind(s, other), 0);
	ck_assert_int_eq(rmq_unbind(s, "tcp://127.0.0.1:1"), -ENOENT);
	ck_assert_int_eq(rmq_unbind(s, other), 0);
	ck_assert_int_eq(rmq_unbind(NULL, other), -RMQ_EINVAL);
	close_all(ctx, s);
}
END_TEST

START_TEST(test_reconnect_options)
{
	rmq_ctx    *ctx;
	rmq_socket *s;

	ck_assert_int_eq(open_socket(RMQ_PAIR, &ctx, &s), 0);
	ck_assert_int_eq(getopt_int(s, RMQ_RECONNECT_IVL), 100);
	ck_assert_int_eq(getopt_int(s, RMQ_RECONNECT_IVL_MAX), 0);
	ck_assert_int_eq(getopt_int(s, RMQ_CONNECT_ASYNC), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RECONNECT_IVL, -2), -RMQ_EINVAL);
	ck_assert_int_eq(setopt_int(s, RMQ_RECONNECT_IVL_MAX, -1), -RMQ_EINVAL);
	ck_assert_int_eq(setopt_int(s, RMQ_CONNECT_ASYNC, 2), -RMQ_EINVAL);
	ck_assert_int_eq(setopt_int(s, RMQ_RECONNECT_IVL, -1), 0);
	ck_assert_int_eq(getopt_int(s, RMQ_RECONNECT_IVL), -1);
	ck_assert_int_eq(setopt_int(s, RMQ_RECONNECT_IVL_MAX, 5000), 0);
	ck_assert_int_eq(getopt_int(s, RMQ_RECONNECT_IVL_MAX), 5000);
	/* An async connect still checks the endpoint at once. */
	ck_assert_int_eq(setopt_int(s, RMQ_CONNECT_ASYNC, 1), 0);
	ck_assert_int_eq(rmq_connect(s, "nonsense"), -RMQ_EADDR);
	close_all(ctx, s);
}
END_TEST

/* Backoff: a PAIR connecting to nobody with IVL 10 and MAX 80 tries
 * about log2(8) + t/80 times, not t/10 (counted by a listening fd). */
START_TEST(test_backoff_grows)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t          sl  = sizeof(sin);
	char               ep[128];
	rmq_ctx           *ctx;
	rmq_socket        *s;
	rmq_pollitem       it;
	int                lfd, c, tries = 0;
	double             end;

	/* A listener that accepts and closes at once: every try fails. */
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *) &sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(lfd, 64), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *) &sin, &sl), 0);
	snprintf(ep, sizeof(ep), "tcp://127.0.0.1:%u", ntohs(sin.sin_port));
	ck_assert_int_eq(open_socket(RMQ_PAIR, &ctx, &s), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_CONNECT_ASYNC, 1), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RECONNECT_IVL, 10), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RECONNECT_IVL_MAX, 80), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	end = test_now() + 1.0;
	it  = (rmq_pollitem){.socket = s, .events = RMQ_POLLIN};
	while (test_now() < end) {
		(void) rmq_poll(&it, 1, 5);
		while ((c = accept(lfd, NULL, NULL)) >= 0) {
			tries++;
			close(c);
		}
	}
	/* 10+20+40+80+80...: about 4 + 920/80 = 16 in a second at most
	 * (less with the jitter); without doubling it would be ~70. */
	ck_assert_int_ge(tries, 3);
	ck_assert_int_le(tries, 25);
	close_all(ctx, s);
	close(lfd);
}
END_TEST

static Suite *
reconnect_suite(void)
{
	Suite *s  = suite_create("reconnect");
	TCase *tc = tcase_create("multiprocess");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_req_reconnects, 0, 3);
	tcase_add_test(tc, test_reconnect_off);
	tcase_add_loop_test(tc, test_connect_async_keeps_messages, 0, 3);
	tcase_add_test(tc, test_push_keeps_while_reconnecting);
	tcase_add_loop_test(tc, test_req_resend_and_rep_recv, 0, 3);
	tcase_add_loop_test(tc, test_disconnect, 0, 3);
	tcase_add_test(tc, test_unbind);
	tcase_add_test(tc, test_reconnect_options);
	tcase_add_test(tc, test_backoff_grows);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(reconnect_suite)
