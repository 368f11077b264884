/*
 * Coalescing (rmq_paths(7)): small messages sent back to back travel
 * packed into one transfer.  Between two real processes on shm, tcp and
 * sockets, through the public API: every message arrives once, whole and
 * in order, sizes 0 to the eager limit mixed with rendezvous-sized ones in
 * one stream; the sender's rmq_stats shows that messages were coalesced;
 * a receiver that stops reading stops the sender at its RCVHWM; a batch
 * the application leaves queued while it computes leaves anyway (the
 * flusher); replies to many requests queued at once are packed, those of
 * a ping-pong never; and coalesce.enabled off (RMQ_COALESCE=0) sends none
 * packed.
 */
#include "testutil.h"
#include "checkmain.h"

#define END   "__END__"
#define NMIX  6000
#define BIGSZ (300u * 1024u)

/* The size of message i of the mixed stream, below eag except every 997th
 * (rendezvous-sized) and a few at the eager limit exactly. */
static size_t
mix_size(uint32_t i, size_t eag)
{
	if (i % 997 == 500)
		return BIGSZ + i;
	if (i % 331 == 7)
		return eag;
	switch (i % 7) {
	case 0: return 0;
	case 1: return 1;
	case 2: return 8;
	case 3: return 64 + i % 64;
	case 4: return 256;
	case 5: return i % 1030; /* around the largest coalesced item */
	default: return (i * 37) % (eag + 1);
	}
}

/* Receive the mixed stream, check every message, answer with the count. */
static int
serve_mix(rmq_socket *s, void *arg)
{
	size_t   eag, len = sizeof(eag), cap = BIGSZ + NMIX + 16, at;
	uint8_t *buf = malloc(cap);
	uint32_t i, fails = 0;
	ssize_t  n;

	(void) arg;
	if (buf == NULL || rmq_getopt(s, RMQ_EAGER_MAX, &eag, &len) != 0)
		return 50;
	for (i = 0; i < NMIX; i++) {
		n = rmq_recv(s, buf, cap, 0);
		if (n != (ssize_t) mix_size(i, eag)) {
			fprintf(stderr, "mix: message %u: %zd B, not %zu\n", i,
			        n, mix_size(i, eag));
			fails++;
			break;
		}
		at = test_check(buf, (size_t) n, i);
		if (at != (size_t) n) {
			fprintf(stderr, "mix: message %u byte %zu wrong\n", i, at);
			fails++;
			break;
		}
	}
	n = rmq_recv(s, buf, cap, 0);
	if (n != (ssize_t) strlen(END) || memcmp(buf, END, (size_t) n) != 0)
		fails++;
	free(buf);
	return (int) fails + (rmq_send(s, &i, sizeof(i), 0) != sizeof(i));
}

/* A config file that widens the coalescing window to 1 ms. */
static const char *
window_yaml(void)
{
	static char path[64];
	FILE       *f;

	snprintf(path, sizeof(path), "/tmp/check_coalesce.%ld.yaml",
	         (long) getpid());
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("coalesce:\n  window_us: 1000\n", f);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

static void
mixed_stream(const char *prov)
{
	char             bep[64], ep[256];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	size_t           eag, len = sizeof(eag), sz;
	uint8_t         *buf = malloc(BIGSZ + NMIX);
	uint32_t         i, got;
	pid_t            pid;
	const char      *yaml;

	ck_assert_ptr_nonnull(buf);
	/*
	 * A window of 1 ms (coalesce.window_us, both processes): what is
	 * checked is what packing keeps (boundaries, order, every byte) and
	 * that a stream sent back to back gets packed, not how fast this
	 * loop is.  Under ASan, with tcp's eager range to 4 KiB (messages of
	 * up to 4 KiB to fill and send alone), the default 10 us was missed:
	 * 573 of 6000 packed (27 Nov 2026).
	 */
	yaml = window_yaml();
	ck_assert_int_eq(setenv("RMQ_CONFIG", yaml, 1), 0);
	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_mix, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	unsetenv("RMQ_CONFIG");
	unlink(yaml); /* both contexts have read it */
	ck_assert_int_eq(rmq_getopt(s, RMQ_EAGER_MAX, &eag, &len), 0);
	for (i = 0; i < NMIX; i++) {
		sz = mix_size(i, eag);
		test_fill(buf, sz, i);
		ck_assert_int_eq(rmq_send(s, buf, sz, 0), (ssize_t) sz);
	}
	ck_assert_int_eq(rmq_send(s, END, strlen(END), 0), strlen(END));
	ck_assert_int_eq(rmq_recv(s, &got, sizeof(got), 0), sizeof(got));
	ck_assert_uint_eq(got, NMIX);
	ck_assert_int_eq(rmq_stats(s, &st), 0);
	/* Back to back from one loop: most small ones went packed. */
	ck_assert_msg(st.coalesced > NMIX / 4, "%s: only %llu of %u coalesced",
	              prov, (unsigned long long) st.coalesced, NMIX);
	/* Where the table sends by ring (tcp, above its eager limit),
	 * batches go into the peer's ring (RBATCH), counted there: more
	 * messages went by ring than ring-sized ones alone, so small ones
	 * went packed in it. */
	if (strcmp(prov, "tcp") == 0) {
		size_t inj, ringmax, n_ring = 0;

		len = sizeof(inj);
		ck_assert_int_eq(rmq_getopt(s, RMQ_INJECT_MAX, &inj, &len), 0);
		len = sizeof(ringmax);
		ck_assert_int_eq(rmq_getopt(s, RMQ_RING_MAX, &ringmax, &len),
		                 0);
		if (eag > inj)
			inj = eag; /* eager above inject: ring above eager */
		for (i = 0; i < NMIX; i++) {
			sz = mix_size(i, eag);
			n_ring += sz > inj && sz <= ringmax;
		}
		if (ringmax > inj)
			ck_assert_msg(st.sent_msgs[RMQ_PATH_RING] > n_ring,
			              "tcp: %llu sent by ring, %zu ring-sized: "
			              "no batch went into the ring",
			              (unsigned long long)
			                  st.sent_msgs[RMQ_PATH_RING],
			              n_ring);
	}
	close_all(ctx, s);
	free(buf);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_mixed_shm)
{
	mixed_stream("shm");
}
END_TEST

START_TEST(test_mixed_tcp)
{
	mixed_stream("tcp");
}
END_TEST

/*
 * tcp with the ring range of rmq_paths(7) (eager_max lowered to inject's:
 * the ring from 129 B, as tcp's row had it before 27 Nov): batches go
 * into the peer's ring.  Both processes read the variable.
 */
START_TEST(test_mixed_tcp_ring)
{
	ck_assert_int_eq(setenv("RMQ_EAGER_MAX", "1", 1), 0);
	mixed_stream("tcp");
	unsetenv("RMQ_EAGER_MAX");
}
END_TEST

START_TEST(test_mixed_sockets)
{
	mixed_stream("sockets");
}
END_TEST

/*
 * Backpressure: the receiver (RCVHWM 100) reads nothing for a while; the
 * sender's non-blocking sends stop at exactly 100, packed or not; then it
 * reads all 100 intact and in order.
 */
#define HWM 100

static int
serve_stall(rmq_socket *s, void *arg)
{
	uint8_t  b[64];
	uint32_t i, fails = 0;

	(void) arg;
	if (rmq_recv(s, b, sizeof(b), 0) != 1) /* "g": the sender begins */
		return 1;
	usleep(800000);
	for (i = 0; i < HWM; i++)
		if (rmq_recv(s, b, sizeof(b), 0) != 48 ||
		    test_check(b, 48, i) != 48)
			fails++;
	return (int) fails + (rmq_send(s, "d", 1, 0) != 1);
}

static void
stall(const char *prov)
{
	char        bep[64], ep[256], c;
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint8_t     b[48];
	uint32_t    n = 0;
	double      t0;
	pid_t       pid;
	ssize_t     rc;

	pid = spawn_server_opts(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                        serve_stall, NULL, ep, sizeof(ep), HWM + 1, 0);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(rmq_send(s, "g", 1, 0), 1);
	t0 = test_now();
	while (test_now() - t0 < 0.5) {
		test_fill(b, sizeof(b), n);
		rc = rmq_send(s, b, sizeof(b), RMQ_DONTWAIT);
		if (rc == sizeof(b))
			n++;
		else
			ck_assert_int_eq(rc, -RMQ_EAGAIN);
	}
	ck_assert_uint_eq(n, HWM);
	ck_assert_int_eq(rmq_recv(s, &c, 1, 0), 1);
	ck_assert_int_eq(c, 'd');
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_stall_shm)
{
	stall("shm");
}
END_TEST

START_TEST(test_stall_tcp)
{
	stall("tcp");
}
END_TEST

/*
 * The flusher: messages back to back until some are packed (coalesced),
 * then the application computes for 1.5 s without a call.  The receiver
 * must have every one long before (each receive times out after 500 ms):
 * it says how many came, in order.
 */
#define FLUSH_MAX 64

static int
serve_quick(rmq_socket *s, void *arg)
{
	uint32_t v = UINT32_MAX, n = 0;
	int      tmo = 500;
	ssize_t  rc = 0;

	(void) arg;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	while (n < FLUSH_MAX &&
	       (rc = rmq_recv(s, &v, sizeof(v), 0)) == sizeof(v) && v == n)
		n++;
	if (rc < 0 || v != n)
		fprintf(stderr, "flusher: after %u in order: %s\n", n,
		        rc < 0 ? rmq_strerror((int) rc) : "out of order");
	return rmq_send(s, &n, sizeof(n), 0) != sizeof(n);
}

static void
flusher(const char *prov)
{
	char             bep[64], ep[256];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st = {0};
	uint32_t         i, got;
	pid_t            pid;

	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_quick, NULL, ep, sizeof(ep));
	/* A window a slow machine (or ThreadSanitizer) can meet. */
	setenv("RMQ_COALESCE_WINDOW_US", "1000", 1);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	unsetenv("RMQ_COALESCE_WINDOW_US");
	/* Back to back until a batch forms (three did, mostly; a thread
	 * of ours or the scheduler may part them). */
	for (i = 0; i < FLUSH_MAX && st.coalesced == 0; i++) {
		ck_assert_int_eq(rmq_send(s, &i, sizeof(i), 0), sizeof(i));
		ck_assert_int_eq(rmq_stats(s, &st), 0);
	}
	ck_assert_msg(st.coalesced >= 1, "nothing coalesced in %u sends", i);
	usleep(1500000); /* computing: no librmq call */
	ck_assert_int_eq(rmq_recv(s, &got, sizeof(got), 0), sizeof(got));
	ck_assert_uint_eq(got, i);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_flusher_shm)
{
	flusher("shm");
}
END_TEST

START_TEST(test_flusher_tcp)
{
	flusher("tcp");
}
END_TEST

/*
 * Replies: a client keeps NWIN requests in flight (a new one for each
 * answer), a server answers each as it takes it.  While more requests
 * wait at the server its answers are packed, though requests keep coming
 * in; then a ping-pong, whose every answer goes alone (none waits).  The
 * server reports what its rmq_stats counted in each phase.
 */
#define NREQ  2000
#define NWIN    64
#define NPING  100

static int
serve_replies(rmq_socket *s, void *arg)
{
	struct rmq_stats a, b;
	uint64_t         r[2];
	uint32_t         i, v;

	(void) arg;
	for (i = 0; i < NREQ + NPING; i++) {
		if (i == NREQ && rmq_stats(s, &a) != 0)
			return 1;
		if (rmq_recv(s, &v, sizeof(v), 0) != sizeof(v) || v != i ||
		    rmq_send(s, &v, sizeof(v), 0) != sizeof(v))
			return 2;
	}
	if (rmq_stats(s, &b) != 0)
		return 3;
	r[0] = a.coalesced;
	r[1] = b.coalesced - a.coalesced;
	return rmq_send(s, r, sizeof(r), 0) != sizeof(r);
}

static void
replies(const char *prov)
{
	char        bep[64], ep[256];
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint64_t    r[2];
	uint32_t    sent, i, v;
	pid_t       pid;

	/* A window a slow machine (or a sanitizer) can meet, both sides. */
	setenv("RMQ_COALESCE_WINDOW_US", "1000", 1);
	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_replies, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	unsetenv("RMQ_COALESCE_WINDOW_US");
	for (sent = 0; sent < NWIN; sent++)
		ck_assert_int_eq(rmq_send(s, &sent, sizeof(sent), 0),
		                 sizeof(sent));
	for (i = 0; i < NREQ; i++) {
		ck_assert_int_eq(rmq_recv(s, &v, sizeof(v), 0), sizeof(v));
		ck_assert_uint_eq(v, i);
		if (sent < NREQ) {
			ck_assert_int_eq(rmq_send(s, &sent, sizeof(sent), 0),
			                 sizeof(sent));
			sent++;
		}
	}
	for (; i < NREQ + NPING; i++) {
		ck_assert_int_eq(rmq_send(s, &i, sizeof(i), 0), sizeof(i));
		ck_assert_int_eq(rmq_recv(s, &v, sizeof(v), 0), sizeof(v));
		ck_assert_uint_eq(v, i);
	}
	ck_assert_int_eq(rmq_recv(s, r, sizeof(r), 0), sizeof(r));
	fprintf(stderr, "%s: %llu of %d answers packed with %d in flight, "
	        "%llu of %d ping-pong answers\n", prov,
	        (unsigned long long) r[0], NREQ, NWIN,
	        (unsigned long long) r[1], NPING);
	/* Measured: about 99% packed (88% before the rule looked at the
	 * queue: docs/INTERNALS.md, coalescing); a share would be a timing
	 * bound, so only that some are. */
	ck_assert_msg(r[0] >= 1, "%s: none of %d answers packed", prov, NREQ);
	ck_assert_msg(r[1] == 0, "%s: %llu of %d ping-pong answers packed",
	              prov, (unsigned long long) r[1], NPING);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_replies_shm)
{
	replies("shm");
}
END_TEST

START_TEST(test_replies_tcp)
{
	replies("tcp");
}
END_TEST

/* coalesce.enabled off: the same stream, nothing packed. */
START_TEST(test_off)
{
	char             bep[64], ep[256];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	uint32_t         i, v;
	pid_t            pid;

	setenv("RMQ_COALESCE", "0", 1);
	pid = spawn_server(RMQ_PAIR, bind_addr("shm", bep, sizeof(bep)),
	                   serve_quick, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(rmq_send(s, &i, sizeof(i), 0), sizeof(i));
	ck_assert_int_eq(rmq_recv(s, &v, sizeof(v), 0), sizeof(v));
	ck_assert_uint_eq(v, 3); /* all three, in order */
	ck_assert_int_eq(rmq_stats(s, &st), 0);
	ck_assert_uint_eq(st.coalesced, 0);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
	unsetenv("RMQ_COALESCE");
}
END_TEST

static Suite *
coalesce_suite(void)
{
	Suite *s  = suite_create("coalesce");
	/* What this checks is the provider's batches: not the local path, which
	 * same-host peers take by default (check_local.c tests that). */
	setenv("RMQ_LOCAL", "0", 1);
	TCase *tc = tcase_create("coalesce");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_mixed_shm);
	tcase_add_test(tc, test_mixed_tcp);
	tcase_add_test(tc, test_mixed_tcp_ring);
	tcase_add_test(tc, test_mixed_sockets);
	tcase_add_test(tc, test_stall_shm);
	tcase_add_test(tc, test_stall_tcp);
	tcase_add_test(tc, test_flusher_shm);
	tcase_add_test(tc, test_flusher_tcp);
	tcase_add_test(tc, test_replies_shm);
	tcase_add_test(tc, test_replies_tcp);
	tcase_add_test(tc, test_off);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(coalesce_suite)
