/*
 * PUSH/PULL between real processes: every size class in one stream, the
 * high-water mark (DONTWAIT and SNDTIMEO give -RMQ_EAGAIN, nothing lost),
 * close waiting for what it accepted, pushers fair-queued (taken in turn
 * from a backlog) and each in order, load balance over pullers, a puller
 * killed mid-stream, the wrong directions and peers, 64 pushers into one
 * puller.  The 'stress' case (64 pushers with 64 MiB messages on every
 * provider) runs only with RMQ_TEST_STRESS=1.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "testutil.h"
#include "checkmain.h"

static const char *const provs[] = {"shm", "tcp", "sockets"};

/* ---- tagged messages: (sender, index) first, then checked bytes ---- */

#define TAG 8u

static uint64_t
tag_seed(uint32_t sender, uint32_t idx)
{
	return ((uint64_t) sender << 32 | idx) + 1;
}

/* Fill b (size >= TAG) as message idx of sender. */
static void
tag_fill(uint8_t *b, size_t size, uint32_t sender, uint32_t idx)
{
	memcpy(b, &sender, 4);
	memcpy(b + 4, &idx, 4);
	test_fill(b + TAG, size - TAG, tag_seed(sender, idx));
}

/* 0 when b holds a well-formed tagged message; its tag in *sender, *idx. */
static int
tag_parse(const uint8_t *b, size_t n, uint32_t *sender, uint32_t *idx)
{
	if (n < TAG)
		return -1;
	memcpy(sender, b, 4);
	memcpy(idx, b + 4, 4);
	return test_check(b + TAG, n - TAG, tag_seed(*sender, *idx)) ==
	               n - TAG
	           ? 0
	           : -1;
}

/*
 * Reap the n children in pids that still run (st[i] == -1) while keeping
 * s (a receiving socket) progressing, so that their closes get our
 * goodbye confirmations.  Returns the number of messages that arrived
 * meanwhile (none expected).
 */
static int
reap_receiving(rmq_socket *s, const pid_t *pids, int n, int *st)
{
	char   buf[64];
	int    extra = 0, i, left;
	double end = test_now() + 60;

	setopt_int(s, RMQ_RCVTIMEO, 20);
	for (;;) {
		for (i = 0, left = 0; i < n; i++)
			left += st[i] == -1;
		if (left == 0 || test_now() > end)
			break;
		if (rmq_recv(s, buf, sizeof(buf), 0) >= 0)
			extra++;
		children_check(pids, st, n, "reap");
	}
	for (i = 0; i < n; i++)
		if (st[i] == -1) {
			kill(pids[i], SIGKILL);
			st[i] = reap(pids[i]);
		}
	return extra;
}

/* ---- every size class in one stream, in order, every byte ---- */

static const size_t sizes[] = {0, 64, 4096, 65536, MiB};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define NSTREAM (3 * NSIZES)

static int
serve_sizes(rmq_socket *s, void *arg)
{
	uint8_t *b = malloc(MiB + 1);
	ssize_t  n;
	size_t   i, at;
	int      fails = 0;

	(void) arg;
	if (b == NULL)
		return 50;
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	for (i = 0; i < NSTREAM && fails == 0; i++) {
		n = rmq_recv(s, b, MiB + 1, 0);
		CHILD_CHECK(fails, n == (ssize_t) sizes[i % NSIZES],
		            "message %zu: %zd bytes (%s), want %zu", i, n,
		            n < 0 ? rmq_strerror((int) n) : "",
		            sizes[i % NSIZES]);
		if (n > 0) {
			at = test_check(b, (size_t) n, i + 1);
			CHILD_CHECK(fails, at == (size_t) n,
			            "message %zu (%zd B): bad byte %zu", i,
			            n, at);
		}
	}
	/* Nothing more: the pusher is gone, so this times out. */
	setopt_int(s, RMQ_RCVTIMEO, 300);
	n = rmq_recv(s, b, MiB + 1, 0);
	CHILD_CHECK(fails, n == -RMQ_EAGAIN, "extra recv gave %zd", n);
	free(b);
	return fails;
}

START_TEST(test_push_sizes)
{
	const char *prov = provs[_i];
	char        bep[64], ep[256];
	uint8_t    *b = malloc(MiB);
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;
	size_t      i;
	ssize_t     n;

	ck_assert_ptr_nonnull(b);
	pid = spawn_server(RMQ_PULL, bind_addr(prov, bep, sizeof(bep)),
	                   serve_sizes, NULL, ep, sizeof(ep));
	open_connected(RMQ_PUSH, ep, &ctx, &s);
	for (i = 0; i < NSTREAM; i++) {
		test_fill(b, sizes[i % NSIZES], i + 1);
		n = rmq_send(s, b, sizes[i % NSIZES], 0);
		ck_assert_msg(n == (ssize_t) sizes[i % NSIZES],
		              "%s: send %zu (%zu B): %zd (%s)", prov, i,
		              sizes[i % NSIZES], n, rmq_strerror((int) n));
	}
	close_all(ctx, s);
	free(b);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* ---- ring.peers: the first peers get a ring, the others rendezvous ---- */

#define RING_PUSHERS 4
#define RING_MSGS    8
#define RING_SIZE    16384 /* between the eager and ring limits below */

static int
serve_ring_peers(rmq_socket *s, void *arg)
{
	uint8_t *b = malloc(RING_SIZE);
	int      i, fails = 0;

	int      seen[RING_PUSHERS][RING_MSGS] = {{0}};
	ssize_t  n;

	(void) arg;
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	for (i = 0; i < RING_PUSHERS * RING_MSGS; i++) {
		n = rmq_recv(s, b, RING_SIZE, 0);
		CHILD_CHECK(fails, n == RING_SIZE, "message %d: %zd", i, n);
		if (n != RING_SIZE)
			continue;
		CHILD_CHECK(fails, b[0] < RING_PUSHERS && b[1] < RING_MSGS &&
		                       seen[b[0]][b[1]]++ == 0,
		            "message %d: pusher %d's %d again", i, b[0], b[1]);
	}
	/* And close at once: the last pusher's rendezvous may still be
	 * finishing at its end (it must not take it for lost and wait to
	 * send it again: seen on sockets under load before closing waited
	 * for a goodbye's trailing FIN). */
	free(b);
	return fails;
}

START_TEST(test_ring_peers)
{
	const char      *prov = provs[_i];
	char             bep[64], ep[256];
	uint8_t         *b = calloc(1, RING_SIZE);
	rmq_ctx         *ctx[RING_PUSHERS];
	rmq_socket      *s[RING_PUSHERS];
	struct rmq_stats st;
	pid_t            pid;
	int              i, k;

	/* The provider's ring path is what this counts: not the local one,
	 * which same-host peers take by default. */
	setenv("RMQ_LOCAL", "0", 1);
	setenv("RMQ_EAGER_MAX", "4096", 1);
	setenv("RMQ_RING_MAX", "32768", 1);
	setenv("RMQ_RING_PEERS", "2", 1);
	pid = spawn_server(RMQ_PULL, bind_addr(prov, bep, sizeof(bep)),
	                   serve_ring_peers, NULL, ep, sizeof(ep));
	unsetenv("RMQ_RING_PEERS");
	for (i = 0; i < RING_PUSHERS; i++) /* in turn: the first 2 get one */
		open_connected(RMQ_PUSH, ep, &ctx[i], &s[i]);
	for (i = 0; i < RING_PUSHERS; i++) {
		if (socket_ring_max(s[i]) < RING_SIZE) {
			fprintf(stderr, "%s: no ring by size here: skipped\n",
			        prov);
			break;
		}
		for (k = 0; k < RING_MSGS; k++) {
			b[0] = (uint8_t) i;
			b[1] = (uint8_t) k;
			ck_assert_int_eq(rmq_send(s[i], b, RING_SIZE, 0),
			                 RING_SIZE);
		}
		ck_assert_int_eq(rmq_stats(s[i], &st), 0);
		ck_assert_msg(st.sent_msgs[RMQ_PATH_RING] ==
		                  (i < 2 ? RING_MSGS : 0),
		              "%s: pusher %d sent %llu by the ring", prov, i,
		              (unsigned long long) st.sent_msgs[RMQ_PATH_RING]);
	}
	for (i = 0; i < RING_PUSHERS; i++)
		close_all(ctx[i], s[i]);
	unsetenv("RMQ_EAGER_MAX");
	unsetenv("RMQ_RING_MAX");
	if (i == RING_PUSHERS)
		ck_assert_int_eq(reap(pid), 0);
	else
		kill(pid, SIGKILL), reap(pid);
	free(b);
}
END_TEST

/* ---- rmq_close with the default linger delivers what it accepted ---- */

#define NLINGER 300

static size_t
linger_size(int i)
{
	return i % 50 == 49 ? MiB : 64;
}

static int
serve_linger(rmq_socket *s, void *arg)
{
	uint8_t *b = malloc(MiB);
	uint32_t snd, idx;
	ssize_t  n;
	int      i, fails = 0;

	(void) arg;
	if (b == NULL)
		return 50;
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	for (i = 0; i < NLINGER && fails == 0; i++) {
		n = rmq_recv(s, b, MiB, 0);
		CHILD_CHECK(fails, n == (ssize_t) linger_size(i),
		            "message %d: %zd (%s)", i, n,
		            n < 0 ? rmq_strerror((int) n) : "bytes");
		if (n < (ssize_t) TAG)
			break;
		CHILD_CHECK(fails, tag_parse(b, (size_t) n, &snd, &idx) == 0,
		            "message %d: bad bytes", i);
		CHILD_CHECK(fails, idx == (uint32_t) i,
		            "message %d has index %u", i, idx);
	}
	free(b);
	return fails;
}

START_TEST(test_push_close_delivers)
{
	const char *prov = provs[_i];
	char        bep[64], ep[256];
	uint8_t    *b = malloc(MiB);
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;
	int         i;
	ssize_t     n;

	ck_assert_ptr_nonnull(b);
	pid = spawn_server(RMQ_PULL, bind_addr(prov, bep, sizeof(bep)),
	                   serve_linger, NULL, ep, sizeof(ep));
	open_connected(RMQ_PUSH, ep, &ctx, &s);
	for (i = 0; i < NLINGER; i++) {
		tag_fill(b, linger_size(i), 0, (uint32_t) i);
		/* The big ones copied and in flight when rmq_send returns. */
		n = rmq_send(s, b, linger_size(i), RMQ_DONTWAIT);
		if (n == -RMQ_EAGAIN)
			n = rmq_send(s, b, linger_size(i), 0);
		ck_assert_msg(n == (ssize_t) linger_size(i), "%s: send %d: %s",
		              prov, i, rmq_strerror((int) n));
	}
	/* At once: the default linger must still deliver all of them. */
	close_all(ctx, s);
	free(b);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* ---- high-water mark: the puller does not read ---- */

#define HWM_PULL 4
#define HWM_MSG  64 /* bytes */

struct slow_puller {
	int ep_fd;  /* the PUSH's endpoint */
	int cmd_fd; /* how many to read, once the pusher is blocked */
};

/* Receive message i of a stream of HWM_MSG-byte ones: 0 or 1 (failed). */
static int
take_one(rmq_socket *s, int i)
{
	uint8_t  buf[HWM_MSG];
	uint32_t snd, idx = 0;
	ssize_t  n;
	int      fails = 0;

	n = rmq_recv(s, buf, sizeof(buf), 0);
	CHILD_CHECK(fails, n == HWM_MSG, "message %d: %zd (%s)", i, n,
	            n < 0 ? rmq_strerror((int) n) : "bytes");
	if (n == HWM_MSG)
		CHILD_CHECK(fails,
		            tag_parse(buf, HWM_MSG, &snd, &idx) == 0 &&
		                idx == (uint32_t) i,
		            "message %d: bad bytes or index %u", i, idx);
	return fails;
}

static int
slow_puller(void *arg)
{
	struct slow_puller *a = arg;
	char                ep[EP_LEN], buf[HWM_MSG];
	rmq_ctx            *ctx;
	rmq_socket         *s;
	ssize_t             n;
	int                 k, i, rc, fails = 0;

	if (pipe_get_ep(a->ep_fd, ep, 30000) != 0)
		return 90;
	if (open_socket(RMQ_PULL, &ctx, &s) != 0)
		return 91;
	setopt_int(s, RMQ_RCVHWM, HWM_PULL);
	setopt_int(s, RMQ_RCVTIMEO, 30000);
	rc = rmq_connect(s, ep);
	if (rc != 0) {
		fprintf(stderr, "puller: connect %s: %s\n", ep,
		        rmq_strerror(rc));
		return 92;
	}
	/*
	 * Take the first message: on shm and tcp;ofi_rxm, the first one
	 * from a peer needs our progress (the provider's own connection
	 * setup).  Then read nothing and make no progress until told how
	 * many were accepted in all; read those.
	 */
	fails += take_one(s, 0);
	if (pipe_get(a->cmd_fd, &k, 60000) != 0)
		return 93;
	for (i = 1; i < k && fails == 0; i++)
		fails += take_one(s, i);
	setopt_int(s, RMQ_RCVTIMEO, 300);
	n = rmq_recv(s, buf, sizeof(buf), 0);
	/* Nothing more; -RMQ_ENOTCONN once the pusher has left. */
	CHILD_CHECK(fails, n == -RMQ_EAGAIN || n == -RMQ_ENOTCONN,
	            "after %d: recv gave %zd", k, n);
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return fails;
}

START_TEST(test_push_hwm)
{
	const char        *prov = provs[_i];
	struct slow_puller a;
	char               bep[64], ep[256];
	uint8_t            m[HWM_MSG];
	size_t             len = sizeof(ep);
	int                epp[2], cmd[2], k;
	rmq_ctx           *ctx;
	rmq_socket        *s;
	pid_t              pid;
	ssize_t            n;
	double             t0, dt;

	ck_assert_int_eq(pipe(epp), 0);
	ck_assert_int_eq(pipe(cmd), 0);
	a   = (struct slow_puller){.ep_fd = epp[0], .cmd_fd = cmd[0]};
	pid = spawn_child(slow_puller, &a);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PUSH, &s), 0);
	ck_assert_int_eq(rmq_bind(s, bind_addr(prov, bep, sizeof(bep))), 0);
	ck_assert_int_eq(rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len), 0);
	ck_assert_int_eq(pipe_put_ep(epp[1], ep), 0);
	/* Bound and no puller yet: the first send waits for one. */
	ck_assert_int_eq(setopt_int(s, RMQ_SNDTIMEO, 30000), 0);
	tag_fill(m, sizeof(m), 0, 0);
	n = rmq_send(s, m, sizeof(m), 0);
	ck_assert_msg(n == HWM_MSG, "%s: first send: %s", prov,
	              rmq_strerror((int) n));
	for (k = 1; k < 100000; k++) {
		tag_fill(m, sizeof(m), 0, (uint32_t) k);
		n = rmq_send(s, m, sizeof(m), RMQ_DONTWAIT);
		if (n != HWM_MSG)
			break;
	}
	ck_assert_msg(n == -RMQ_EAGAIN,
	              "%s: DONTWAIT send %d to a full puller: %zd (%s)", prov,
	              k, n, rmq_strerror((int) n));
	fprintf(stderr, "%s: the PUSH took %d messages (puller RCVHWM %d)\n",
	        prov, k, HWM_PULL);
	/* Blocking, with a timeout: -RMQ_EAGAIN once it expires. */
	ck_assert_int_eq(setopt_int(s, RMQ_SNDTIMEO, 200), 0);
	t0 = test_now();
	n  = rmq_send(s, m, sizeof(m), 0);
	dt = test_now() - t0;
	ck_assert_msg(n == -RMQ_EAGAIN, "%s: send at HWM: %zd (%s)", prov, n,
	              rmq_strerror((int) n));
	ck_assert_msg(dt >= 0.15, "%s: SNDTIMEO 200 returned after %.0f ms",
	              prov, dt * 1e3);
	/* Now the puller reads all k; nothing was lost or added. */
	ck_assert_int_eq(pipe_put(cmd[1], k), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_LINGER, 20000), 0);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* ---- several pushers into one PULL: each (sender, index) once ---- */

#define NPUSHERS 3
#define NFAIR    300
#define NORDER   (12 * NPUSHERS) /* first messages whose senders we see */

struct pusher {
	int      ep_fd; /* the PULL's endpoint */
	int      up_fd; /* "connected" */
	int      go_fd; /* start sending */
	bool     say_sent; /* and on up_fd again once all are sent */
	uint32_t id;
	int      n;
	size_t   big;   /* every 16th message is this big (0: none) */
};

static size_t
pusher_size(const struct pusher *a, int i)
{
	static const size_t small[] = {TAG, 64, 4096, 200};

	if (a->big > 0 && i % 16 == 15)
		return a->big;
	return small[i % 4];
}

static int
pusher(void *arg)
{
	struct pusher *a = arg;
	char           ep[EP_LEN];
	uint8_t       *b;
	rmq_ctx       *ctx;
	rmq_socket    *s;
	ssize_t        n;
	int            i, rc, go, fails = 0;

	if (pipe_get_ep(a->ep_fd, ep, 60000) != 0)
		return 90;
	b = malloc(a->big > 4096 ? a->big : 4096);
	if (b == NULL || open_socket(RMQ_PUSH, &ctx, &s) != 0)
		return 91;
	setopt_int(s, RMQ_CONNECT_TIMEOUT, 60000);
	rc = rmq_connect(s, ep);
	if (rc != 0) {
		fprintf(stderr, "pusher %u: connect %s: %s\n", a->id, ep,
		        rmq_strerror(rc));
		return 92;
	}
	if (a->up_fd >= 0 && pipe_put(a->up_fd, (int) a->id) != 0)
		return 93;
	if (a->go_fd >= 0 && pipe_get(a->go_fd, &go, 60000) != 0)
		return 94;
	setopt_int(s, RMQ_SNDTIMEO, 60000);
	for (i = 0; i < a->n && fails == 0; i++) {
		tag_fill(b, pusher_size(a, i), a->id, (uint32_t) i);
		n = rmq_send(s, b, pusher_size(a, i), 0);
		CHILD_CHECK(fails, n == (ssize_t) pusher_size(a, i),
		            "pusher %u: send %d: %zd (%s)", a->id, i, n,
		            rmq_strerror((int) n));
	}
	if (a->say_sent && pipe_put(a->up_fd, (int) a->id) != 0)
		return 95;
	rc = rmq_close(s);
	CHILD_CHECK(fails, rc == 0, "pusher %u: close: %s", a->id,
	            rmq_strerror(rc));
	rmq_ctx_destroy(ctx);
	free(b);
	return fails;
}

/*
 * Receive n messages per sender from nsenders on s: each (sender, index)
 * exactly once, each sender's indices in order.  The senders of the first
 * norder messages go to order.  While it waits, the senders (pids, with
 * st as for children_check) must not fail; at most 60 s may pass without
 * a message.  Returns the number of times the sender changed from one
 * message to the next.
 */
static int
recv_tagged(rmq_socket *s, int nsenders, int n, size_t cap, const char *what,
            const pid_t *pids, int *st, uint32_t *order, int norder)
{
	const struct tagged_stream t = {
	    .nsenders    = nsenders,
	    .n           = n,
	    .cap         = cap,
	    .min         = TAG,
	    .parse       = tag_parse,
	    .what        = what,
	    .sender      = "sender",
	    .pids        = pids,
	    .st          = st,
	    .nkids       = nsenders,
	    .rcvtimeo_ms = 1000,
	    .quiet_s     = 60,
	    .order       = order,
	    .norder      = norder,
	};

	return recv_in_order(s, &t);
}

/*
 * NPUSHERS pushers connected (all of them) to a bound PULL here, then
 * started together.  Streaming: they send while it reads; every 16th
 * message is 64 KiB (rendezvous).  Backlog: it reads only once they all
 * sent everything (small messages), and must then take them in turn.
 */
static void
fair_queue(const char *prov, bool backlog)
{
	struct pusher a[NPUSHERS];
	char          bep[64], ep[256], buf[16];
	size_t        len = sizeof(ep);
	pid_t         pids[NPUSHERS];
	uint32_t      order[NORDER];
	int           epp[2], up[2], go[2], st[NPUSHERS], seen[NPUSHERS];
	int           i, c, switches;
	rmq_pollitem  it;
	rmq_ctx      *ctx;
	rmq_socket   *s;
	double        end;

	ck_assert_int_eq(pipe(epp), 0);
	ck_assert_int_eq(pipe(up), 0);
	ck_assert_int_eq(pipe(go), 0);
	for (i = 0; i < NPUSHERS; i++) {
		st[i]   = -1;
		a[i]    = (struct pusher){.ep_fd = epp[0], .up_fd = up[1],
		                          .go_fd = go[0], .say_sent = backlog,
		                          .id = (uint32_t) i, .n = NFAIR,
		                          .big = backlog ? 0 : 65536};
		pids[i] = spawn_child(pusher, &a[i]);
	}
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PULL, &s), 0);
	ck_assert_int_eq(rmq_bind(s, bind_addr(prov, bep, sizeof(bep))), 0);
	ck_assert_int_eq(rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len), 0);
	for (i = 0; i < NPUSHERS; i++)
		ck_assert_int_eq(pipe_put_ep(epp[1], ep), 0);
	/* Accept them all (progress in short receives), then go. */
	ck_assert_int_eq(setopt_int(s, RMQ_RCVTIMEO, 10), 0);
	end = test_now() + 60;
	for (c = 0; c < NPUSHERS && test_now() < end;) {
		ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0),
		                 -RMQ_EAGAIN);
		while (pipe_get(up[0], &i, 0) == 0)
			c++;
	}
	ck_assert_msg(c == NPUSHERS, "%s: %d of %d pushers connected", prov,
	              c, NPUSHERS);
	for (i = 0; i < NPUSHERS; i++)
		ck_assert_int_eq(pipe_put(go[1], 1), 0);
	/*
	 * Backlog: progress (their messages land) but take none, and once
	 * all are sent, progress 200 ms more so that the socket has taken
	 * in what the provider holds.
	 */
	for (c = 0; backlog && c < NPUSHERS; c++)
		ck_assert_msg(pipe_get_progress(s, up[0], &i, 60000) == 0,
		              "%s: %d of %d pushers done sending", prov, c,
		              NPUSHERS);
	if (backlog) {
		it = (rmq_pollitem){.socket = s, .fd = -1, .events = 0};
		ck_assert_int_eq(rmq_poll(&it, 1, 200), 0);
	}
	switches = recv_tagged(s, NPUSHERS, NFAIR, 65536, prov, pids, st,
	                       order, NORDER);
	fprintf(stderr, "%s%s: %d pushers x %d: %d switches between pushers;"
	        " first:", prov, backlog ? " (backlog)" : "", NPUSHERS, NFAIR,
	        switches);
	for (i = 0; i < NORDER; i++)
		fprintf(stderr, " %u", order[i]);
	fputc('\n', stderr);
	if (backlog) {
		/* All were waiting: in the first 12, each had its turns. */
		memset(seen, 0, sizeof(seen));
		for (i = 0; i < 4 * NPUSHERS; i++)
			seen[order[i]]++;
		for (i = 0; i < NPUSHERS; i++)
			ck_assert_msg(seen[i] >= 3,
			              "%s: pusher %d had %d of the first %d "
			              "messages taken",
			              prov, i, seen[i], 4 * NPUSHERS);
	}
	ck_assert_int_eq(reap_receiving(s, pids, NPUSHERS, st), 0);
	for (i = 0; i < NPUSHERS; i++)
		ck_assert_msg(st[i] == 0, "%s: pusher %d: status %d", prov, i,
		              st[i]);
	close_all(ctx, s);
}

START_TEST(test_pull_fair_queue)
{
	fair_queue(provs[_i], false);
}
END_TEST

START_TEST(test_pull_fair_queue_backlog)
{
	fair_queue(provs[_i], true);
}
END_TEST

/* ---- one PUSH over three PULL processes that read all the time ---- */

#define NPULLERS 3
#define NLB      3000
#define NMAXIDX  (1u << 20) /* indices the pullers can record */

struct lb {
	volatile int stop;       /* set by the test: no more coming */
	int          count[NPULLERS];
	uint8_t      got[NPULLERS][NMAXIDX];
};

struct lb_arg {
	struct lb *lb;
	int        id;
};

/* Read until told to stop, recording every index received. */
static int
serve_lb(rmq_socket *s, void *arg)
{
	struct lb_arg *a = arg;
	uint8_t        b[4096];
	uint32_t       snd, idx;
	ssize_t        n;
	int            fails = 0;

	setopt_int(s, RMQ_RCVTIMEO, 50);
	for (;;) {
		n = rmq_recv(s, b, sizeof(b), 0);
		if (n == -RMQ_EAGAIN) {
			if (__atomic_load_n(&a->lb->stop, __ATOMIC_ACQUIRE))
				break;
			continue;
		}
		CHILD_CHECK(fails, n >= (ssize_t) TAG, "puller %d: recv: %s",
		            a->id, rmq_strerror((int) n));
		if (n < (ssize_t) TAG)
			break;
		CHILD_CHECK(fails, tag_parse(b, (size_t) n, &snd, &idx) == 0,
		            "puller %d: bad bytes", a->id);
		if (idx < sizeof(a->lb->got[0])) {
			a->lb->got[a->id][idx]++;
			__atomic_add_fetch(&a->lb->count[a->id], 1,
			                   __ATOMIC_RELEASE);
		}
	}
	return fails;
}

/* NPULLERS pullers bound, one PUSH connected to all of them. */
static void
lb_start(const char *prov, struct lb **lbp, struct lb_arg *args,
         pid_t *pids, rmq_ctx **ctx, rmq_socket **s)
{
	char bep[64], ep[NPULLERS][256];
	int  i;

	*lbp = test_shared(sizeof(**lbp));
	for (i = 0; i < NPULLERS; i++) {
		args[i] = (struct lb_arg){.lb = *lbp, .id = i};
		pids[i] = spawn_server(RMQ_PULL,
		                       bind_addr(prov, bep, sizeof(bep)),
		                       serve_lb, &args[i], ep[i],
		                       sizeof(ep[i]));
	}
	ck_assert_int_eq(rmq_ctx_new(ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(*ctx, RMQ_PUSH, s), 0);
	for (i = 0; i < NPULLERS; i++)
		ck_assert_int_eq(rmq_connect(*s, ep[i]), 0);
	ck_assert_int_eq(getopt_int(*s, RMQ_NPEERS), NPULLERS);
}

static void
push_tagged(rmq_socket *s, int from, int to, const char *prov)
{
	uint8_t m[64];
	ssize_t n;
	int     i;

	for (i = from; i < to; i++) {
		tag_fill(m, sizeof(m), 0, (uint32_t) i);
		n = rmq_send(s, m, sizeof(m), 0);
		ck_assert_msg(n == 64, "%s: send %d: %zd (%s)", prov, i, n,
		              rmq_strerror((int) n));
	}
}

START_TEST(test_push_load_balance)
{
	const char   *prov = provs[_i];
	struct lb    *lb;
	struct lb_arg args[NPULLERS];
	pid_t         pids[NPULLERS];
	rmq_ctx      *ctx;
	rmq_socket   *s;
	int           i, k, total;

	lb_start(prov, &lb, args, pids, &ctx, &s);
	push_tagged(s, 0, NLB, prov);
	close_all(ctx, s); /* returns once all have arrived */
	__atomic_store_n(&lb->stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NPULLERS; i++)
		ck_assert_int_eq(reap(pids[i]), 0);
	fprintf(stderr, "%s: %d messages over %d pullers:", prov, NLB,
	        NPULLERS);
	for (i = 0; i < NPULLERS; i++)
		fprintf(stderr, " %d", lb->count[i]);
	fputc('\n', stderr);
	for (k = 0; k < NLB; k++) {
		total = 0;
		for (i = 0; i < NPULLERS; i++)
			total += lb->got[i][k];
		ck_assert_msg(total == 1, "%s: message %d arrived %d times",
		              prov, k, total);
	}
	for (i = 0; i < NPULLERS; i++)
		ck_assert_msg(lb->count[i] > NLB / 10,
		              "%s: puller %d got %d of %d", prov, i,
		              lb->count[i], NLB);
	munmap(lb, sizeof(*lb));
}
END_TEST

/* ---- a puller SIGKILLed mid-stream ---- */

START_TEST(test_push_puller_killed)
{
	const char      *prov = provs[_i];
	struct lb       *lb;
	struct lb_arg    args[NPULLERS];
	struct rmq_stats st;
	pid_t            pids[NPULLERS];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	int              i, k, total, noticed, sent, survivors = 0;
	double           end, t0;

	lb_start(prov, &lb, args, pids, &ctx, &s);
	/* Guard: a send stuck on the dead puller fails instead of hanging. */
	ck_assert_int_eq(setopt_int(s, RMQ_SNDTIMEO, 5000), 0);
	push_tagged(s, 0, 600, prov);
	kill(pids[0], SIGKILL);
	ck_assert_int_eq(reap(pids[0]), 200 + SIGKILL);
	/* Keep sending until the PUSH has noticed. */
	sent = 600;
	t0   = test_now();
	end  = t0 + 10;
	for (;;) {
		ck_assert_int_eq(rmq_stats(s, &st), 0);
		if (getopt_int(s, RMQ_NPEERS) == NPULLERS - 1 ||
		    st.peers_lost > 0)
			break;
		ck_assert_msg(test_now() < end && sent < (int) NMAXIDX - 1000,
		              "%s: the death not noticed after %d sends", prov,
		              sent - 600);
		push_tagged(s, sent, sent + 1, prov);
		sent++;
	}
	noticed = sent;
	t0      = test_now() - t0;
	push_tagged(s, sent, sent + 600, prov);
	sent += 600;
	close_all(ctx, s);
	__atomic_store_n(&lb->stop, 1, __ATOMIC_RELEASE);
	for (i = 1; i < NPULLERS; i++)
		ck_assert_int_eq(reap(pids[i]), 0);
	fprintf(stderr,
	        "%s: sent %d, the death noticed at %d (%.0f ms); the killed "
	        "one read %d, the others %d and %d\n",
	        prov, sent, noticed, t0 * 1e3, lb->count[0], lb->count[1],
	        lb->count[2]);
	for (k = 0; k < sent; k++) {
		total = 0;
		for (i = 1; i < NPULLERS; i++)
			total += lb->got[i][k];
		ck_assert_msg(total <= 1, "%s: message %d arrived %d times",
		              prov, k, total);
		survivors += total;
		/* Sent after the death was noticed: must reach a survivor. */
		if (k >= noticed)
			ck_assert_msg(total == 1, "%s: message %d (after the "
			              "death was noticed at %d) lost", prov, k,
			              noticed);
	}
	ck_assert_int_le(survivors + lb->count[0], sent);
	for (i = 1; i < NPULLERS; i++)
		ck_assert_int_gt(lb->count[i], 0);
	munmap(lb, sizeof(*lb));
}
END_TEST

/* ---- a puller that stops reading ---- */

struct stall_arg {
	char   ep[256];
	size_t size;
	int    stall;  /* read 5, then sleep until killed */
	int    want;   /* else: read this many, then exit 0 */
	int    got;    /* read so far (shared) */
	int    stop;   /* the reader may go (shared) */
};

static int
stall_pull(void *arg)
{
	struct stall_arg *a = arg;
	rmq_ctx          *ctx;
	rmq_socket       *s;
	char             *buf = malloc(a->size);
	int               i, fails = 0;
	ssize_t           n;

	if (buf == NULL || open_socket(RMQ_PULL, &ctx, &s) != 0)
		return 90;
	/* The PUSH binds after the fork; a loaded CI host is slow. */
	setopt_int(s, RMQ_CONNECT_TIMEOUT, 60000);
	if (rmq_connect(s, a->ep) != 0)
		return 91;
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	for (i = 0; i < (a->stall ? 5 : a->want); i++) {
		n = rmq_recv(s, buf, a->size, 0);
		CHILD_CHECK(fails, n == (ssize_t) a->size, "recv %d: %zd", i, n);
		if (n < 0)
			break;
		__atomic_add_fetch(&a->got, 1, __ATOMIC_RELEASE);
	}
	if (a->stall)
		pause();
	/* Keep reading until told: a send in flight must find us. */
	setopt_int(s, RMQ_RCVTIMEO, 10);
	while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE))
		(void) rmq_recv(s, buf, a->size, 0);
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	free(buf);
	return fails;
}

/*
 * _i: provider x size.  One of two pullers stops reading: the other
 * still gets its messages (a PUSH waits only when no puller has room).
 * On shm, sends above the inject size to the stalled one once held up
 * the provider's every send (providers/shm.c).  And a rendezvous-sized
 * send (8 KiB) that fell to the stalled one as the PUSH's last, blocking
 * try waited for its FIN for ever: 2 runs of 6 timed out on shm with
 * RMQ_LOCAL=0 (27 Nov 2026) until that try copied the payload too.
 */
START_TEST(test_stalled_puller)
{
	static const size_t stall_sizes[] = {1024, 8192};
	const char         *prov = provs[_i / 2];
	size_t              size = stall_sizes[_i % 2];
	struct stall_arg   *a = test_shared(2 * sizeof(*a));
	pid_t               stalled, reader;
	rmq_ctx            *ctx;
	rmq_socket         *s;
	char               *m = calloc(1, size);
	int                 i;
	ssize_t             n;

	/* An endpoint nobody has yet: the children connect (retrying)
	 * while we bind; they are forked before our first librmq call. */
	if (strcmp(prov, "shm") == 0) {
		snprintf(a[0].ep, sizeof(a[0].ep), "shm://stall_%d_%d",
		         (int) getpid(), _i);
	} else {
		struct sockaddr_in sin = {.sin_family = AF_INET};
		socklen_t          sl  = sizeof(sin);
		int                fd  = socket(AF_INET, SOCK_STREAM, 0);

		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ck_assert_int_eq(bind(fd, (struct sockaddr *) &sin, sl), 0);
		ck_assert_int_eq(getsockname(fd, (struct sockaddr *) &sin, &sl),
		                 0);
		close(fd);
		snprintf(a[0].ep, sizeof(a[0].ep), "%s://127.0.0.1:%u", prov,
		         ntohs(sin.sin_port));
	}
	memcpy(a[1].ep, a[0].ep, sizeof(a[0].ep));
	a[0].size = a[1].size = size;
	a[0].stall = 1;
	a[1].want  = 2000;
	stalled = spawn_child(stall_pull, &a[0]);
	reader  = spawn_child(stall_pull, &a[1]);
	ck_assert_int_eq(open_socket(RMQ_PUSH, &ctx, &s), 0);
	/* Room for the stalled one's whole share and the reader's. */
	ck_assert_int_eq(setopt_int(s, RMQ_SNDHWM, 5000), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_SNDTIMEO, 10000), 0);
	ck_assert_int_eq(rmq_bind(s, a[0].ep), 0);
	for (i = 0; getopt_int(s, RMQ_NPEERS) < 2 && i < 12000; i++) {
		rmq_pollitem it = {.socket = s, .events = RMQ_POLLIN};
		(void) rmq_poll(&it, 1, 5);
	}
	ck_assert_int_eq(getopt_int(s, RMQ_NPEERS), 2);
	/* Until the reader has its 2000: every send must go (to it, or to
	 * the stalled one while that has credits). */
	for (i = 0; __atomic_load_n(&a[1].got, __ATOMIC_ACQUIRE) < 2000 &&
	            i < 100000; i++) {
		n = rmq_send(s, m, size, 0);
		ck_assert_msg(n == (ssize_t) size, "%s %zu B: send %d: %zd (%s); "
		              "the reader got %d", prov, size, i, n,
		              rmq_strerror((int) n), a[1].got);
	}
	__atomic_store_n(&a[1].stop, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(reap(reader), 0);
	fprintf(stderr, "%s %zu B: %d sent, the reading puller got %d, the "
	        "stalled one read %d\n", prov, size, i, a[1].got, a[0].got);
	kill(stalled, SIGKILL);
	reap(stalled);
	ck_assert_int_eq(setopt_int(s, RMQ_LINGER, 0), 0);
	close_all(ctx, s);
	free(m);
}
END_TEST

/* ---- the wrong direction, the wrong peer ---- */

START_TEST(test_wrong_direction)
{
	rmq_ctx    *ctx;
	rmq_socket *push, *pull;
	char        c = 'x';

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PUSH, &push), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PULL, &pull), 0);
	ck_assert_int_eq(getopt_int(push, RMQ_TYPE), RMQ_PUSH);
	ck_assert_int_eq(getopt_int(pull, RMQ_TYPE), RMQ_PULL);
	ck_assert_int_eq(rmq_recv(push, &c, 1, 0), -RMQ_ENOTSUP);
	ck_assert_int_eq(rmq_recv(push, &c, 1, RMQ_DONTWAIT), -RMQ_ENOTSUP);
	ck_assert_int_eq(rmq_send(pull, &c, 1, 0), -RMQ_ENOTSUP);
	ck_assert_int_eq(rmq_send(pull, &c, 1, RMQ_DONTWAIT), -RMQ_ENOTSUP);
	ck_assert_int_eq(rmq_close(push), 0);
	ck_assert_int_eq(rmq_close(pull), 0);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
}
END_TEST

/* Make progress (accept, and refuse) for a while, whatever the type. */
static int
serve_idle(rmq_socket *s, void *arg)
{
	char c = 'x';

	(void) arg;
	setopt_int(s, RMQ_RCVTIMEO, 1500);
	setopt_int(s, RMQ_SNDTIMEO, 1500);
	if (getopt_int(s, RMQ_TYPE) == RMQ_PUSH ||
	    getopt_int(s, RMQ_TYPE) == RMQ_REQ)
		(void) rmq_send(s, &c, 1, 0); /* waits for a peer */
	else
		(void) rmq_recv(s, &c, 1, 0);
	return 0;
}

START_TEST(test_push_pattern_mismatch)
{
	static const int pairs[][2] = {
	    {RMQ_PUSH, RMQ_PUSH}, {RMQ_PULL, RMQ_PULL}, {RMQ_REQ, RMQ_PULL}};
	char        bep[64], ep[256];
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;

	pid = spawn_server(pairs[_i][0], bind_addr("tcp", bep, sizeof(bep)),
	                   serve_idle, NULL, ep, sizeof(ep));
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, pairs[_i][1], &s), 0);
	ck_assert_int_eq(rmq_connect(s, ep), -RMQ_EPATTERN);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* ---- many pushers into one PULL ---- */

static void
many_pushers(const char *prov, int npushers, size_t big)
{
	struct pusher *a    = calloc((size_t) npushers, sizeof(*a));
	pid_t         *pids = calloc((size_t) npushers, sizeof(pid_t));
	int           *st   = calloc((size_t) npushers, sizeof(int));
	char           bep[64], ep[256];
	size_t         len = sizeof(ep);
	int            epp[2], i;
	rmq_ctx       *ctx;
	rmq_socket    *s;
	double         t0;

	ck_assert_int_eq(pipe(epp), 0);
	for (i = 0; i < npushers; i++) {
		/* Two messages each: 200 B (i % 4 == 3), then the big one. */
		a[i]    = (struct pusher){.ep_fd = epp[0], .up_fd = -1,
		                          .go_fd = -1, .id = (uint32_t) i,
		                          .n = 16, .big = big};
		pids[i] = spawn_child_secs(pusher, &a[i], 600);
		st[i]   = -1;
	}
	t0 = test_now();
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PULL, &s), 0);
	ck_assert_int_eq(rmq_bind(s, bind_addr(prov, bep, sizeof(bep))), 0);
	ck_assert_int_eq(rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len), 0);
	for (i = 0; i < npushers; i++)
		ck_assert_int_eq(pipe_put_ep(epp[1], ep), 0);
	recv_tagged(s, npushers, 16, big, prov, pids, st, NULL, 0);
	fprintf(stderr, "%s: %d pushers x 16 (one of %zu B): %.1f s\n", prov,
	        npushers, big, test_now() - t0);
	ck_assert_int_eq(reap_receiving(s, pids, npushers, st), 0);
	for (i = 0; i < npushers; i++)
		ck_assert_msg(st[i] == 0, "%s: pusher %d: status %d", prov, i,
		              st[i]);
	close_all(ctx, s);
	free(a);
	free(pids);
	free(st);
}

START_TEST(test_64_pushers)
{
	many_pushers(provs[_i], 64, MiB);
}
END_TEST

START_TEST(test_64_pushers_64mib)
{
	many_pushers(provs[_i], 64, 64 * MiB);
}
END_TEST

/* ---- one PULL connecting to more pushers than one shm endpoint takes ---- */

#define BOUND_PROCS 6
#define BOUND_SOCKS 50 /* 300 in all: past shm 1.17's 256 per endpoint */

struct bound_pushers {
	int      ep_fd;   /* our endpoints out */
	int      done_fd; /* end of file: the test has all it needs */
	int      done_w;  /* its other end, the test's */
	uint32_t first;   /* our sockets' ids */
};

static int
bound_pushers(void *arg)
{
	struct bound_pushers *a = arg;
	rmq_socket           *s[BOUND_SOCKS];
	char                  bep[64], ep[256], c;
	size_t                len;
	uint32_t              id;
	rmq_ctx              *ctx;
	int                   i, fails = 0;

	close(a->done_w);
	if (rmq_ctx_new(&ctx, NULL) != 0)
		return 1;
	for (i = 0; i < BOUND_SOCKS; i++) {
		len = sizeof(ep);
		if (rmq_socket_open(ctx, RMQ_PUSH, &s[i]) != 0 ||
		    rmq_bind(s[i], bind_addr("shm", bep, sizeof(bep))) != 0 ||
		    rmq_getopt(s[i], RMQ_LAST_ENDPOINT, ep, &len) != 0 ||
		    pipe_put_ep(a->ep_fd, ep) != 0)
			return 1;
	}
	for (i = 0; i < BOUND_SOCKS; i++) {
		/* Waits for the PULL to connect. */
		id = a->first + (uint32_t) i;
		setopt_int(s[i], RMQ_SNDTIMEO, 60000);
		if (rmq_send(s[i], &id, sizeof(id), 0) != (ssize_t) sizeof(id))
			fails++;
	}
	(void) !read(a->done_fd, &c, 1); /* end of file: the test is done */
	for (i = 0; i < BOUND_SOCKS; i++)
		rmq_close(s[i]);
	rmq_ctx_destroy(ctx);
	return fails;
}

START_TEST(test_pull_connects_300)
{
	struct bound_pushers a[BOUND_PROCS];
	pid_t                pids[BOUND_PROCS];
	int                  st[BOUND_PROCS], epp[2], donep[2], i, n;
	bool                 seen[BOUND_PROCS * BOUND_SOCKS] = {false};
	char                 ep[256];
	uint32_t             id;
	rmq_ctx             *ctx;
	rmq_socket          *s;
	double               t0;

	ck_assert_int_eq(pipe(epp), 0);
	ck_assert_int_eq(pipe(donep), 0);
	for (i = 0; i < BOUND_PROCS; i++) {
		a[i] = (struct bound_pushers){.ep_fd = epp[1],
		                              .done_fd = donep[0],
		                              .done_w  = donep[1],
		                              .first = (uint32_t) (i *
		                                                   BOUND_SOCKS)};
		pids[i] = spawn_child_secs(bound_pushers, &a[i], 300);
	}
	close(donep[0]);
	t0 = test_now();
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PULL, &s), 0);
	for (i = 0; i < BOUND_PROCS * BOUND_SOCKS; i++) {
		ck_assert_int_eq(pipe_get_ep(epp[0], ep, 120000), 0);
		ck_assert_msg(rmq_connect(s, ep) == 0, "connect %d to %s", i,
		              ep);

	}
	setopt_int(s, RMQ_RCVTIMEO, 60000);
	for (n = 0; n < BOUND_PROCS * BOUND_SOCKS; n++) {
		ck_assert_int_eq(rmq_recv(s, &id, sizeof(id), 0),
		                 (ssize_t) sizeof(id));
		ck_assert_uint_lt(id, BOUND_PROCS * BOUND_SOCKS);
		ck_assert_msg(!seen[id], "message %u twice", id);

		seen[id] = true;
	}
	fprintf(stderr, "shm: one PULL connected to %d pushers and took a "
	        "message from each in %.1f s\n", BOUND_PROCS * BOUND_SOCKS,
	        test_now() - t0);
	/* Ours first: a pusher's close then does not wait for our BYE. */
	close_all(ctx, s);
	close(donep[1]);
	for (i = 0; i < BOUND_PROCS; i++) {
		st[i] = reap(pids[i]);
		ck_assert_msg(st[i] == 0, "pushers %d: status %d", i, st[i]);
	}
	close(epp[0]);
	close(epp[1]);
}
END_TEST

static Suite *
pipeline_suite(void)
{
	Suite *s  = suite_create("pipeline");
	TCase *tc = tcase_create("multiprocess");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_only(tc, test_ring_peers, 0, 3);
	tcase_add_loop_only(tc, test_push_sizes, 0, 3);
	tcase_add_loop_only(tc, test_push_close_delivers, 0, 2);
	tcase_add_loop_only(tc, test_push_hwm, 0, 2);
	tcase_add_loop_only(tc, test_pull_fair_queue, 0, 3);
	tcase_add_loop_only(tc, test_pull_fair_queue_backlog, 0, 3);
	tcase_add_loop_only(tc, test_push_load_balance, 0, 2);
	tcase_add_loop_only(tc, test_push_puller_killed, 0, 2);
	tcase_add_loop_only(tc, test_stalled_puller, 0, 6);
	tcase_add_loop_only(tc, test_wrong_direction, 0, 1);
	tcase_add_loop_only(tc, test_push_pattern_mismatch, 0, 3);
	tcase_add_loop_only(tc, test_64_pushers, 0, 2);
	tcase_add_test(tc, test_pull_connects_300);
	suite_add_tcase(s, tc);
	if (getenv("RMQ_TEST_STRESS") != NULL) {
		tc = tcase_create("stress");
		tcase_set_timeout(tc, 300);
		tcase_add_loop_only(tc, test_64_pushers_64mib, 0, 3);
		suite_add_tcase(s, tc);
	}
	return s;
}

RMQ_CHECK_MAIN(pipeline_suite)
