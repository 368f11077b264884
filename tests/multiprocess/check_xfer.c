/*
 * Data integrity and path choice, between two real processes, over shm and
 * tcp, with PAIR and with REQ/REP: sizes 0, 1, around the inject and eager
 * thresholds, 1 MiB and 64 MiB; every byte checked in both directions, and
 * rmq_stats proves the path each size took on both sides.
 */
#include "testutil.h"
#include "checkmain.h"

#define BIG  (64u * MiB)
#define END  "__END__"

/*
 * Echo server: verify each request, answer with a different pattern.  arg
 * points to the rendezvous path both sides force (0: the provider's).
 */
static int
serve_echo(rmq_socket *s, void *arg)
{
	struct rmq_stats a, b;
	uint8_t         *buf = malloc(BIG + 16);
	size_t           inj, eag, ring, len = sizeof(size_t), at;
	ssize_t          n;
	int              fails = 0, want, rndv = *(int *) arg;

	if (buf == NULL)
		return 50;
	if (rndv != 0 &&
	    rmq_setopt(s, RMQ_RNDV_PATH, &rndv, sizeof(rndv)) != 0)
		return 51;
	rmq_getopt(s, RMQ_INJECT_MAX, &inj, &len);
	len = sizeof(size_t);
	rmq_getopt(s, RMQ_EAGER_MAX, &eag, &len);
	len = sizeof(int);
	rmq_getopt(s, RMQ_RNDV_PATH, &rndv, &len);
	len = sizeof(size_t);
	ring = 0;
	rmq_getopt(s, RMQ_RING_MAX, &ring, &len);
	for (;;) {
		rmq_stats(s, &a);
		n = rmq_recv(s, buf, BIG + 16, 0);
		if (n < 0) {
			fprintf(stderr, "echo recv: %s\n", rmq_strerror((int) n));
			fails++;
			break;
		}
		if (n == (ssize_t) strlen(END) && memcmp(buf, END, (size_t) n) == 0)
			break;
		rmq_stats(s, &b);
		want = expected_path_ring((size_t) n, inj, eag, ring, rndv);
		if (b.recv_msgs[want] != a.recv_msgs[want] + 1) {
			fprintf(stderr, "echo: %zd B not received by %s\n", n,
			        rmq_path_name(want));
			fails++;
		}
		at = test_check(buf, (size_t) n, (uint64_t) n);
		if (at != (size_t) n) {
			fprintf(stderr, "echo: %zd B: byte %zu wrong\n", n, at);
			fails++;
		}
		test_fill(buf, (size_t) n, (uint64_t) n + 1);
		if (rmq_send(s, buf, (size_t) n, 0) != n) {
			fails++;
			break;
		}
	}
	free(buf);
	return fails;
}

static void
roundtrip_sizes(const char *prov, int ctype, int stype, int rndv)
{
	char             bep[64], ep[256];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats a, b;
	size_t           inj, eag, ring, sizes[24], i, ns = 0, at;
	uint8_t         *sb, *rb;
	ssize_t          n;
	pid_t            pid;
	int              want, path;

	pid = spawn_server(stype, bind_addr(prov, bep, sizeof(bep)),
	                   serve_echo, &rndv, ep, sizeof(ep));
	open_connected(ctype, ep, &ctx, &s);
	if (rndv != 0)
		ck_assert_int_eq(rmq_setopt(s, RMQ_RNDV_PATH, &rndv,
		                            sizeof(rndv)),
		                 0);
	socket_paths(s, &inj, &eag, &path);
	ring = socket_ring_max(s);
	if (rndv != 0)
		ck_assert_int_eq(path, rndv);
	ck_assert_uint_gt(inj, 1);
	ck_assert_uint_ge(eag, inj);
	sizes[ns++] = 0;
	sizes[ns++] = 1;
	sizes[ns++] = inj - 1;
	sizes[ns++] = inj;
	sizes[ns++] = inj + 1;
	sizes[ns++] = eag - 1;
	sizes[ns++] = eag;
	sizes[ns++] = eag + 1;
	if (ring > eag) {
		sizes[ns++] = ring - 1;
		sizes[ns++] = ring;
		sizes[ns++] = ring + 1;
	}
	sizes[ns++] = MiB;
	sizes[ns++] = BIG;
	sb = malloc(BIG);
	rb = malloc(BIG);
	ck_assert_ptr_nonnull(sb);
	ck_assert_ptr_nonnull(rb);
	for (i = 0; i < ns; i++) {
		test_fill(sb, sizes[i], sizes[i]);
		rmq_stats(s, &a);
		n = rmq_send(s, sb, sizes[i], 0);
		ck_assert_msg(n == (ssize_t) sizes[i], "%s send %zu: %s", prov,
		              sizes[i], rmq_strerror((int) n));
		rmq_stats(s, &b);
		want = expected_path_ring(sizes[i], inj, eag, ring, path);
		ck_assert_msg(b.sent_msgs[want] == a.sent_msgs[want] + 1,
		              "%s: %zu B did not go %s", prov, sizes[i],
		              rmq_path_name(want));
		memset(rb, 0xee, sizes[i] + (sizes[i] < BIG));
		n = rmq_recv(s, rb, BIG, 0);
		ck_assert_msg(n == (ssize_t) sizes[i], "%s recv %zu: %zd %s",
		              prov, sizes[i], n, rmq_strerror((int) n));
		at = test_check(rb, sizes[i], sizes[i] + 1);
		ck_assert_msg(at == sizes[i], "%s: echo of %zu B wrong at %zu",
		              prov, sizes[i], at);
	}
	n = rmq_send(s, END, strlen(END), 0);
	ck_assert_int_eq(n, (ssize_t) strlen(END));
	close_all(ctx, s);
	free(sb);
	free(rb);
	ck_assert_int_eq(reap(pid), 0);
}

/* Every provider x rendezvous path (0: the provider's default). */
static const char *const provs[] = {"shm", "tcp", "sockets"};
static const int rndvs[] = {0, RMQ_PATH_RNDV_READ, RMQ_PATH_RNDV_SEND};

START_TEST(test_pair_sizes)
{
	roundtrip_sizes(provs[_i / 3], RMQ_PAIR, RMQ_PAIR, rndvs[_i % 3]);
}
END_TEST

START_TEST(test_reqrep_sizes)
{
	roundtrip_sizes(provs[_i / 3], RMQ_REQ, RMQ_REP, rndvs[_i % 3]);
}
END_TEST

/* shm://NAME: control channel on an abstract Unix socket. */
static int
serve_one(rmq_socket *s, void *arg)
{
	char    buf[64];
	ssize_t n = rmq_recv(s, buf, sizeof(buf), 0);

	(void) arg;
	if (n != 5 || memcmp(buf, "hello", 5) != 0)
		return 1;
	return rmq_send(s, "world", 5, 0) == 5 ? 0 : 1;
}

START_TEST(test_shm_named_endpoint)
{
	char        bep[64], ep[256], buf[16];
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;

	snprintf(bep, sizeof(bep), "shm://check-xfer-%d", (int) getpid());
	pid = spawn_server(RMQ_PAIR, bep, serve_one, NULL, ep, sizeof(ep));
	ck_assert_str_eq(ep, bep);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(rmq_send(s, "hello", 5, 0), 5);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 5);
	ck_assert_int_eq(memcmp(buf, "world", 5), 0);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* Zero-copy messages, eager (in place in the slab) and rendezvous. */
static int
serve_msg(rmq_socket *s, void *arg)
{
	rmq_msg *m;
	int      i, fails = 0;

	(void) arg;
	for (i = 0; i < 2; i++) {
		if (rmq_msg_recv(s, &m, 0) != 0)
			return 1;
		if (test_check(rmq_msg_data(m), rmq_msg_size(m),
		               rmq_msg_size(m)) != rmq_msg_size(m))
			fails++;
		/* Send the same message back: ownership passes. */
		if (rmq_msg_send(s, m, 0) != 0) {
			rmq_msg_free(m);
			fails++;
		}
	}
	return fails;
}

static void
msg_roundtrip(const char *prov)
{
	static const size_t sizes[] = {1000, 4 * MiB};
	char                bep[64], ep[256];
	rmq_ctx            *ctx;
	rmq_socket         *s;
	rmq_msg            *m;
	pid_t               pid;
	size_t              i;

	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_msg, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(rmq_msg_alloc(s, sizes[i], &m), 0);
		ck_assert_uint_eq(rmq_msg_size(m), sizes[i]);
		ck_assert_uint_eq((uintptr_t) rmq_msg_data(m) % 4096, 0);
		test_fill(rmq_msg_data(m), sizes[i], sizes[i]);
		ck_assert_int_eq(rmq_msg_send(s, m, 0), 0);
		ck_assert_int_eq(rmq_msg_recv(s, &m, 0), 0);
		ck_assert_uint_eq(rmq_msg_size(m), sizes[i]);
		ck_assert_uint_eq(test_check(rmq_msg_data(m), sizes[i],
		                             sizes[i]),
		                  sizes[i]);
		rmq_msg_free(m);
	}
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_msg_shm)
{
	msg_roundtrip("shm");
}
END_TEST

START_TEST(test_msg_tcp)
{
	msg_roundtrip("tcp");
}
END_TEST

/* Truncation: recv returns the full size and copies cap bytes. */
static int
serve_trunc(rmq_socket *s, void *arg)
{
	uint8_t *b = malloc(MiB);
	int      fails = 0;

	(void) arg;
	test_fill(b, MiB, 7);
	if (rmq_send(s, b, 100, 0) != 100)
		fails++;
	if (rmq_send(s, b, MiB, 0) != (ssize_t) MiB)
		fails++;
	if (rmq_recv(s, b, 1, 0) != 1) /* wait for the client to finish */
		fails++;
	free(b);
	return fails;
}

static void
truncation(const char *prov)
{
	char        bep[64], ep[256];
	uint8_t     buf[64], want[64];
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;

	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_trunc, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	test_fill(want, sizeof(want), 7);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(rmq_recv(s, buf, 10, 0), 100);
	ck_assert_int_eq(memcmp(buf, want, 10), 0);
	ck_assert_int_eq(buf[10], 0);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(rmq_recv(s, buf, 64, 0), (ssize_t) MiB);
	ck_assert_int_eq(memcmp(buf, want, 64), 0);
	ck_assert_int_eq(rmq_send(s, "x", 1, 0), 1);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_truncation_shm)
{
	truncation("shm");
}
END_TEST

START_TEST(test_truncation_tcp)
{
	truncation("tcp");
}
END_TEST

/* Many small messages arrive complete and in order. */
#define NMSG 20000

static int
serve_stream(rmq_socket *s, void *arg)
{
	uint32_t v, i;
	int      fails = 0;

	(void) arg;
	for (i = 0; i < NMSG; i++) {
		if (rmq_recv(s, &v, sizeof(v), 0) != sizeof(v) || v != i) {
			fails++;
			break;
		}
	}
	return fails + (rmq_send(s, &v, sizeof(v), 0) != sizeof(v));
}

static void
stream_order(const char *prov)
{
	char        bep[64], ep[256];
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint32_t    i, v;
	pid_t       pid;

	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_stream, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	for (i = 0; i < NMSG; i++)
		ck_assert_int_eq(rmq_send(s, &i, sizeof(i), 0), sizeof(i));
	ck_assert_int_eq(rmq_recv(s, &v, sizeof(v), 0), sizeof(v));
	ck_assert_uint_eq(v, NMSG - 1);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_stream_order_shm)
{
	stream_order("shm");
}
END_TEST

START_TEST(test_stream_order_tcp)
{
	stream_order("tcp");
}
END_TEST

/*
 * A burst the receiver leaves unread for a while, many times more
 * messages than it keeps receives posted (tcp: 128 one-message receives,
 * providers/tcp.c), sizes 1-300 B (inject up to 128, the ring above),
 * coalesced or not (_i = 0 / 1): every one arrives, whole and in order,
 * once it reads.
 */
#define NBURST 3000

static size_t
burst_len(uint32_t i)
{
	return 1 + (i * 37u) % 300;
}

static int
serve_burst(rmq_socket *s, void *arg)
{
	uint8_t  buf[512];
	uint32_t i, v;
	ssize_t  n;
	int      fails = 0;

	(void) arg;
	if (rmq_recv(s, buf, sizeof(buf), 0) != 1)
		return 1;
	usleep(500000); /* the burst piles up unread */
	for (i = 0; i < NBURST && fails < 5; i++) {
		n = rmq_recv(s, buf, sizeof(buf), 0);
		memcpy(&v, buf, sizeof(v));
		if (n != (ssize_t) (burst_len(i) < 4 ? 4 : burst_len(i)) ||
		    v != i ||
		    test_check(buf + 4, (size_t) n - 4, i) != (size_t) n - 4) {
			fprintf(stderr, "burst %u: %zd B, first word %u\n", i,
			        n, v);
			fails++;
		}
	}
	return fails + (rmq_send(s, "k", 1, 0) != 1);
}

START_TEST(test_unread_burst_tcp)
{
	char        bep[64], ep[256];
	uint8_t     buf[512];
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint32_t    i;
	size_t      n;
	pid_t       pid;

	setenv("RMQ_COALESCE", _i ? "1" : "0", 1);
	pid = spawn_server_opts(RMQ_PAIR, bind_addr("tcp", bep, sizeof(bep)),
	                        serve_burst, NULL, ep, sizeof(ep),
	                        2 * NBURST, 0);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(rmq_send(s, "g", 1, 0), 1);
	for (i = 0; i < NBURST; i++) {
		n = burst_len(i) < 4 ? 4 : burst_len(i);
		memcpy(buf, &i, sizeof(i));
		test_fill(buf + 4, n - 4, i);
		ck_assert_int_eq(rmq_send(s, buf, n, 0), (int) n);
	}
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 1);
	close_all(ctx, s);
	unsetenv("RMQ_COALESCE");
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* Credits: a receiver that does not read stops the sender at RCVHWM. */
static int
serve_slow(rmq_socket *s, void *arg)
{
	char    c;
	int     i, fails = 0;

	(void) arg;
	/*
	 * Take the first message, then stop progressing for a while: the
	 * sender must run out of credits (5) and cannot get more meanwhile.
	 */
	if (rmq_recv(s, &c, 1, 0) != 1 || c != 'g')
		return 1;
	usleep(1500000);
	for (i = 0; i < 4; i++)
		if (rmq_recv(s, &c, 1, 0) != 1 || c != (char) ('a' + i))
			fails++;
	if (rmq_send(s, "d", 1, 0) != 1)
		fails++;
	if (rmq_recv(s, &c, 1, 0) != 1 || c != 'z')
		fails++;
	return fails;
}

START_TEST(test_hwm_blocks_sender)
{
	char        bep[64], ep[256], c;
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;
	int         i, tmo = 200;

	pid = spawn_server_opts(RMQ_PAIR, bind_addr("tcp", bep, sizeof(bep)),
	                        serve_slow, NULL, ep, sizeof(ep), 5, 0);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(rmq_send(s, "g", 1, 0), 1);
	for (i = 0; i < 4; i++) {
		c = (char) ('a' + i);
		ck_assert_int_eq(rmq_send(s, &c, 1, 0), 1);
	}
	/* Five credits used: the sixth send must not go. */
	ck_assert_int_eq(rmq_send(s, "x", 1, RMQ_DONTWAIT), -RMQ_EAGAIN);
	ck_assert_int_eq(rmq_setopt(s, RMQ_SNDTIMEO, &tmo, sizeof(tmo)), 0);
	ck_assert_int_eq(rmq_send(s, "x", 1, 0), -RMQ_EAGAIN);
	/* The server drains, its reply brings credits back. */
	ck_assert_int_eq(rmq_recv(s, &c, 1, 0), 1);
	ck_assert_int_eq(c, 'd');
	ck_assert_int_eq(rmq_send(s, "z", 1, 0), 1);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/*
 * The sender's eager limit is larger than the receiver's slabs take (the
 * server's eager_max is 8 KiB, from the environment it inherits): the
 * handshake tells, and such messages go by rendezvous instead.
 */
static int
serve_small_eager(rmq_socket *s, void *arg)
{
	uint8_t *buf = malloc(50000);
	int      i, fails = 0;

	(void) arg;
	for (i = 0; i < 50; i++)
		if (rmq_recv(s, buf, 50000, 0) != 50000 ||
		    test_check(buf, 50000, (uint64_t) i) != 50000)
			fails++;
	free(buf);
	return fails + (rmq_send(s, "k", 1, 0) != 1);
}

START_TEST(test_peer_eager_limit_respected)
{
	char             bep[64], ep[256], c;
	uint8_t         *buf = malloc(50000);
	size_t           big = 60000;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	pid_t            pid;
	int              i;

	ck_assert_int_eq(setenv("RMQ_EAGER_MAX", "8192", 1), 0);
	pid = spawn_server(RMQ_PAIR, bind_addr("tcp", bep, sizeof(bep)),
	                   serve_small_eager, NULL, ep, sizeof(ep));
	unsetenv("RMQ_EAGER_MAX");
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_EAGER_MAX, &big, sizeof(big)), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	for (i = 0; i < 50; i++) {
		test_fill(buf, 50000, (uint64_t) i);
		ck_assert_int_eq(rmq_send(s, buf, 50000, 0), 50000);
	}
	ck_assert_int_eq(rmq_recv(s, &c, 1, 0), 1);
	rmq_stats(s, &st);
	ck_assert_uint_eq(st.sent_msgs[RMQ_PATH_EAGER], 0);
	close_all(ctx, s);
	free(buf);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

START_TEST(test_threshold_options_bounded)
{
	rmq_ctx    *ctx;
	rmq_socket *s;
	size_t      v;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	v = SIZE_MAX - 8;
	ck_assert_int_eq(rmq_setopt(s, RMQ_EAGER_MAX, &v, sizeof(v)),
	                 -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(s, RMQ_INJECT_MAX, &v, sizeof(v)),
	                 -RMQ_EINVAL);
	ck_assert_int_eq(rmq_bind(s, "tcp://127.0.0.1:0"), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_EAGER_MAX, &v, sizeof(v)),
	                 -RMQ_EINVAL);
	v = 1000;
	ck_assert_int_eq(rmq_setopt(s, RMQ_EAGER_MAX, &v, sizeof(v)), 0);
	close_all(ctx, s);
}
END_TEST

static Suite *
xfer_suite(void)
{
	Suite *s  = suite_create("xfer");
	/* What this checks is the provider's paths by size: not the local path, which
	 * same-host peers take by default (check_local.c tests that). */
	setenv("RMQ_LOCAL", "0", 1);
	TCase *tc = tcase_create("multiprocess");

	tcase_set_timeout(tc, 180);
	/* _i: provider (shm, tcp, sockets) x rendezvous (default, read,
	 * send); REQ/REP on shm and tcp */
	tcase_add_loop_test(tc, test_pair_sizes, 0, 9);
	tcase_add_loop_test(tc, test_reqrep_sizes, 0, 6);
	tcase_add_test(tc, test_shm_named_endpoint);
	tcase_add_test(tc, test_msg_shm);
	tcase_add_test(tc, test_msg_tcp);
	tcase_add_test(tc, test_truncation_shm);
	tcase_add_test(tc, test_truncation_tcp);
	tcase_add_test(tc, test_stream_order_shm);
	tcase_add_test(tc, test_stream_order_tcp);
	tcase_add_test(tc, test_hwm_blocks_sender);
	tcase_add_loop_test(tc, test_unread_burst_tcp, 0, 2);
	tcase_add_test(tc, test_peer_eager_limit_respected);
	tcase_add_test(tc, test_threshold_options_bounded);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(xfer_suite)
