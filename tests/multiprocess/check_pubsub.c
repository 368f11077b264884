/*
 * PUB/SUB between real processes: nothing before a subscription, prefix
 * filtering with counted subscriptions, no slow-joiner loss (SUB
 * connecting, subscribing before connecting, PUB connecting to a bound
 * SUB), drop accounting (one slow subscriber, a slow and a fast one; slow
 * ones that poll, and busy ones that make no librmq call at all),
 * RMQ_NODROP, per-publisher order from three publishers, 64 subscribers,
 * a subscriber killed mid-stream.  The 'stress' case (64 subscribers,
 * 64 MiB messages, every provider) runs only with RMQ_TEST_STRESS=1.
 *
 * A publisher hears of subscriptions only while it makes progress, so a
 * PUB process waiting for its test's word waits in rmq_poll() on the pipe
 * with its socket among the items (events 0).
 */
#include "testutil.h"
#include "checkmain.h"

static const char *const provs[] = {"shm", "tcp", "sockets"};

/* ---- tagged messages: topic, (publisher, index), checked bytes ---- */

#define TOPIC "t"
#define HDR   (1u + 8u) /* TOPIC and the tag */

static uint64_t
tag_seed(uint32_t pub, uint32_t idx)
{
	return ((uint64_t) pub << 32 | idx) + 7;
}

static void
tag_fill(uint8_t *b, size_t size, uint32_t pub, uint32_t idx)
{
	b[0] = TOPIC[0];
	memcpy(b + 1, &pub, 4);
	memcpy(b + 5, &idx, 4);
	test_fill(b + HDR, size - HDR, tag_seed(pub, idx));
}

static int
tag_parse(const uint8_t *b, size_t n, uint32_t *pub, uint32_t *idx)
{
	if (n < HDR || b[0] != TOPIC[0])
		return -1;
	memcpy(pub, b + 1, 4);
	memcpy(idx, b + 5, 4);
	return test_check(b + HDR, n - HDR, tag_seed(*pub, *idx)) == n - HDR
	           ? 0
	           : -1;
}

/* Message idx's size in the mixed streams: mostly small, some large. */
static size_t
mixed_size(uint32_t idx)
{
	if (idx % 100 == 99)
		return 65536 + HDR;
	if (idx % 10 == 9)
		return 4096;
	return 64;
}

/*
 * Publish [from, to) on pub as publisher id; 0 or the failures.  With
 * max_s > 0, a send that takes longer fails.
 */
static int
publish(rmq_socket *pub, uint32_t id, uint32_t from, uint32_t to,
        size_t (*size)(uint32_t), double max_s)
{
	uint8_t *b = malloc(65536 + HDR);
	uint32_t i;
	ssize_t  n;
	double   t0;
	int      fails = 0;

	if (b == NULL)
		return 50;
	for (i = from; i < to && fails == 0; i++) {
		tag_fill(b, size(i), id, i);
		t0 = test_now();
		n  = rmq_send(pub, b, size(i), 0);
		CHILD_CHECK(fails, n == (ssize_t) size(i),
		            "publisher %u: send %u: %zd (%s)", id, i, n,
		            rmq_strerror((int) n));
		CHILD_CHECK(fails, max_s <= 0 || test_now() - t0 < max_s,
		            "publisher %u: send %u took %.1f s", id, i,
		            test_now() - t0);
	}
	free(b);
	return fails;
}

/*
 * Receive n messages per publisher from npubs on s: each (publisher,
 * index) exactly once, in each publisher's order.  While it waits, the
 * nkids processes in pids (st as for children_check) must not fail; at
 * most 20 s may pass without a message.
 */
static void
recv_tagged(rmq_socket *s, int npubs, int n, size_t cap, const pid_t *pids,
            int *st, int nkids, const char *what)
{
	const struct tagged_stream t = {
	    .nsenders    = npubs,
	    .n           = n,
	    .cap         = cap,
	    .min         = HDR,
	    .parse       = tag_parse,
	    .what        = what,
	    .sender      = "publisher",
	    .pids        = pids,
	    .st          = st,
	    .nkids       = nkids,
	    .rcvtimeo_ms = 500,
	    .quiet_s     = 20,
	};

	(void) recv_in_order(s, &t);
}

/* Reap the children that recv_tagged did not; each must have passed. */
static void
reap_all(const pid_t *pids, int *st, int n, const char *what)
{
	int i;

	for (i = 0; i < n; i++) {
		if (st[i] == -1)
			st[i] = reap(pids[i]);
		ck_assert_msg(st[i] == 0, "%s: child %d: status %d", what, i,
		              st[i]);
	}
}

/* ---- a SUB receives nothing until it subscribes ---- */

struct ticker {
	volatile int stop;
	int          sent;
};

/* Publish "tick" messages until told to stop. */
static int
serve_ticker(rmq_socket *s, void *arg)
{
	struct ticker *t = arg;
	char           m[32];
	int            len, n, fails = 0;

	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE) && fails == 0) {
		len = snprintf(m, sizeof(m), "tick %d", t->sent);
		n   = (int) rmq_send(s, m, (size_t) len, 0);
		CHILD_CHECK(fails, n == len, "ticker: send: %s",
		            rmq_strerror(n));
		t->sent++;
		usleep(500);
	}
	return fails;
}

START_TEST(test_sub_nothing_before_subscribe)
{
	const char    *prov = provs[_i];
	struct ticker *t    = test_shared(sizeof(*t));
	char           bep[64], ep[256], buf[64];
	rmq_ctx       *ctx;
	rmq_socket    *s;
	pid_t          pid;
	ssize_t        n;

	pid = spawn_server(RMQ_PUB, bind_addr(prov, bep, sizeof(bep)),
	                   serve_ticker, t, ep, sizeof(ep));
	open_connected(RMQ_SUB, ep, &ctx, &s);
	ck_assert_int_eq(setopt_int(s, RMQ_RCVTIMEO, 500), 0);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), -RMQ_EAGAIN);
	ck_assert_int_gt(t->sent, 0); /* it was publishing meanwhile */
	ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, "", 0), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RCVTIMEO, 5000), 0);
	n = rmq_recv(s, buf, sizeof(buf), 0);
	ck_assert_msg(n > 5 && memcmp(buf, "tick ", 5) == 0,
	              "%s: after subscribing: %zd (%s)", prov, n,
	              rmq_strerror((int) n));
	close_all(ctx, s);
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(reap(pid), 0);
	munmap(t, sizeof(*t));
}
END_TEST

/* ---- filtering: several prefixes, counted, removed ---- */

static const char *const topics[] = {
    "a", "a1", "ab", "A", "b", "bc", "bcd", "x", "xy", "xyz", "xyz!",
    "", "ba", "xya", "\x01xyz", "aEND",
};
#define NTOPICS (sizeof(topics) / sizeof(topics[0]))
#define NREPEAT 3

struct round_pipes {
	int cmd_fd;  /* the SUB says: publish round r */
};

/* Each round: every topic NREPEAT times as "topic#r.k", then "END" r. */
static int
serve_rounds(rmq_socket *s, void *arg)
{
	struct round_pipes *p = arg;
	char                m[64];
	size_t              t;
	int                 r, k, len, fails = 0;

	setopt_int(s, RMQ_NODROP, 1);
	while (fails == 0) {
		if (pipe_get_progress(s, p->cmd_fd, &r, 60000) != 0)
			return 90;
		if (r < 0)
			break;
		for (k = 0; k < NREPEAT * (int) NTOPICS; k++) {
			t   = (size_t) k % NTOPICS;
			len = snprintf(m, sizeof(m), "%s#%d.%d.%zu", topics[t],
			               r, k / (int) NTOPICS, t);
			CHILD_CHECK(fails,
			            rmq_send(s, m, (size_t) len, 0) == len,
			            "publish %s", m);
		}
		len = snprintf(m, sizeof(m), "END%d", r);
		CHILD_CHECK(fails, rmq_send(s, m, (size_t) len, 0) == len,
		            "publish %s", m);
	}
	return fails;
}

/* Run round r: the SUB gets exactly the topics that match subs. */
static void
filter_round(rmq_socket *s, int cmd_fd, int r, const char *const *subs,
             int nsubs)
{
	char   want[64], got[64], end[16];
	size_t t;
	int    k, j;

	ck_assert_int_eq(pipe_put(cmd_fd, r), 0);
	snprintf(end, sizeof(end), "END%d", r);
	for (k = 0; k < NREPEAT; k++)
		for (t = 0; t < NTOPICS; t++) {
			for (j = 0; j < nsubs; j++)
				if (strncmp(topics[t], subs[j],
				            strlen(subs[j])) == 0)
					break;
			if (j == nsubs)
				continue;
			snprintf(want, sizeof(want), "%s#%d.%d.%zu", topics[t],
			         r, k, t);
			memset(got, 0, sizeof(got));
			ck_assert_int_ge(rmq_recv(s, got, sizeof(got) - 1, 0),
			                 0);
			ck_assert_msg(strcmp(got, want) == 0,
			              "round %d: got '%s', want '%s'", r, got,
			              want);
		}
	memset(got, 0, sizeof(got));
	ck_assert_int_ge(rmq_recv(s, got, sizeof(got) - 1, 0), 0);
	ck_assert_msg(strcmp(got, end) == 0, "round %d: got '%s', want '%s'",
	              r, got, end);
}

START_TEST(test_sub_filter)
{
	static const char *const r1[] = {"a", "bc", "xyz", "END"};
	static const char *const r2[] = {"a", "xyz", "END"};
	static const char *const r3[] = {"xyz", "END"};
	static const char *const r4[] = {""};
	const char              *prov = provs[_i];
	struct round_pipes       p;
	char                     bep[64], ep[256], big[1001] = {0};
	struct rmq_stats         st;
	int                      cmd[2];
	rmq_ctx                 *ctx;
	rmq_socket              *s;
	pid_t                    pid;

	ck_assert_int_eq(pipe(cmd), 0);
	p   = (struct round_pipes){.cmd_fd = cmd[0]};
	pid = spawn_server(RMQ_PUB, bind_addr(prov, bep, sizeof(bep)),
	                   serve_rounds, &p, ep, sizeof(ep));
	open_connected(RMQ_SUB, ep, &ctx, &s);
	ck_assert_int_eq(setopt_int(s, RMQ_RCVTIMEO, 10000), 0);
	/* "a" twice: it takes two unsubscribes to go. */
	ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, "a", 1), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, "bc", 2), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, "xyz", 3), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, "a", 1), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, "END", 3), 0);
	filter_round(s, cmd[1], 1, r1, 4);
	ck_assert_int_eq(rmq_setopt(s, RMQ_UNSUBSCRIBE, "bc", 2), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_UNSUBSCRIBE, "bc", 2), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(s, RMQ_UNSUBSCRIBE, "a", 1), 0);
	filter_round(s, cmd[1], 2, r2, 3);
	ck_assert_int_eq(rmq_setopt(s, RMQ_UNSUBSCRIBE, "a", 1), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_UNSUBSCRIBE, "a", 1), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(s, RMQ_UNSUBSCRIBE, "q", 1), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(s, RMQ_UNSUBSCRIBE, "xy", 2), -RMQ_EINVAL);
	filter_round(s, cmd[1], 3, r3, 2);
	/* Everything (len 0), on top of the others. */
	ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, "", 0), 0);
	filter_round(s, cmd[1], 4, r4, 1);
	ck_assert_int_eq(rmq_setopt(s, RMQ_UNSUBSCRIBE, "", 0), 0);
	filter_round(s, cmd[1], 5, r3, 2);
	/* A prefix has at most 1000 bytes. */
	ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, big, 1001), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, big, 1000), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_UNSUBSCRIBE, big, 1000), 0);
	/* Nothing else came. */
	ck_assert_int_eq(setopt_int(s, RMQ_RCVTIMEO, 200), 0);
	ck_assert_int_eq(rmq_recv(s, big, sizeof(big), 0), -RMQ_EAGAIN);
	/* The publisher filtered: each round began after the SUB's changes
	 * were acknowledged, so nothing unwanted came to be discarded. */
	ck_assert_int_eq(rmq_stats(s, &st), 0);
	ck_assert_uint_eq(st.dropped, 0);
	ck_assert_int_eq(pipe_put(cmd[1], -1), 0);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* ---- no slow-joiner loss ---- */

#define NJOIN 1000

struct pub_arg {
	int      ready_fd; /* nready ints: subscribers ready */
	int      nready;
	int      done_fd;  /* then one int: the test is done */
	int      res_fd;   /* the publisher's results (drops, accepted) */
	int      ep_fd;    /* for a connecting PUB: where */
	uint32_t id;
	int      n;        /* messages to publish */
	int      nodrop;
};

/* The PUB's side of most tests: wait for the subscribers, publish, wait
 * for the word to close. */
static int
pub_body(rmq_socket *s, struct pub_arg *a)
{
	int i, v, fails = 0;

	setopt_int(s, RMQ_NODROP, a->nodrop);
	setopt_int(s, RMQ_SNDTIMEO, 30000);
	for (i = 0; i < a->nready; i++)
		if (pipe_get_progress(s, a->ready_fd, &v, 60000) != 0)
			return 90;
	fails += publish(s, a->id, 0, (uint32_t) a->n, mixed_size, 0);
	if (pipe_get_progress(s, a->done_fd, &v, 60000) != 0)
		return 91;
	return fails;
}

static int
serve_pub(rmq_socket *s, void *arg)
{
	return pub_body(s, arg);
}

/* A PUB that connects to a bound SUB and publishes at once. */
static int
pub_connecting(void *arg)
{
	struct pub_arg *a = arg;
	rmq_ctx        *ctx;
	rmq_socket     *s;
	int             rc, fails;

	rc = child_connect(a->ep_fd, RMQ_PUB, "pub", &ctx, &s);
	if (rc != 0)
		return rc;
	fails = pub_body(s, a); /* nready 0: right away */
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return fails;
}

/* 0: SUB connects, then subscribes; 1: subscribes, then connects; 2: SUB
 * binds and subscribes, then the PUB connects. */
static void
slow_joiner(const char *prov, int how)
{
	struct pub_arg a;
	char           bep[64], ep[256];
	size_t         len = sizeof(ep);
	int            ready[2], done[2], epp[2], st = -1;
	rmq_ctx       *ctx;
	rmq_socket    *s;
	pid_t          pid;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(done), 0);
	ck_assert_int_eq(pipe(epp), 0);
	a = (struct pub_arg){.ready_fd = ready[0], .nready = how == 2 ? 0 : 1,
	                     .done_fd = done[0], .ep_fd = epp[0], .n = NJOIN,
	                     .nodrop = 1};
	if (how == 2)
		pid = spawn_child(pub_connecting, &a);
	else
		pid = spawn_server(RMQ_PUB, bind_addr(prov, bep, sizeof(bep)),
		                   serve_pub, &a, ep, sizeof(ep));
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_SUB, &s), 0);
	if (how == 0) {
		ck_assert_int_eq(rmq_connect(s, ep), 0);
		ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, TOPIC, 1), 0);
	} else if (how == 1) {
		ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, TOPIC, 1), 0);
		ck_assert_int_eq(rmq_connect(s, ep), 0);
	} else {
		bind_addr(prov, bep, sizeof(bep));
		ck_assert_int_eq(rmq_bind(s, bep), 0);
		ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, TOPIC, 1), 0);
		ck_assert_int_eq(rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len),
		                 0);
		ck_assert_int_eq(pipe_put_ep(epp[1], ep), 0);
	}
	/* Only now may the publisher start (how 2: it starts by itself as
	 * soon as its rmq_connect returns). */
	if (how != 2)
		ck_assert_int_eq(pipe_put(ready[1], 1), 0);
	recv_tagged(s, 1, NJOIN, 65536 + HDR, &pid, &st, 1, prov);
	ck_assert_int_eq(pipe_put(done[1], 1), 0);
	close_all(ctx, s);
	reap_all(&pid, &st, 1, prov);
}

START_TEST(test_join_sub_connects)
{
	slow_joiner(provs[_i], 0);
}
END_TEST

START_TEST(test_join_sub_subscribed_first)
{
	slow_joiner(provs[_i], 1);
}
END_TEST

START_TEST(test_join_pub_connects)
{
	slow_joiner(provs[_i], 2);
}
END_TEST

/* ---- drop accounting ---- */

#define NDROP    2000
#define SLOW_HWM 8

static size_t
small_size(uint32_t idx)
{
	(void) idx;
	return 64;
}

/* Publish n, say so, wait for the word, report rmq_stats().dropped (a
 * fan-out log counts what a subscriber missed once it says where it is:
 * after it read all it could). */
static int
serve_drops(rmq_socket *s, void *arg)
{
	struct pub_arg  *a = arg;
	struct rmq_stats st;
	int              i, v, fails = 0;

	/* Drop mode never waits (bounded: a failure stays short). */
	setopt_int(s, RMQ_SNDTIMEO, 3000);
	for (i = 0; i < a->nready; i++)
		if (pipe_get_progress(s, a->ready_fd, &v, 60000) != 0)
			return 90;
	fails += publish(s, 0, 0, (uint32_t) a->n, small_size, 1.0);
	if (pipe_put(a->res_fd, 0) != 0)
		return 92;
	if (pipe_get_progress(s, a->done_fd, &v, 60000) != 0)
		return 91;
	CHILD_CHECK(fails, rmq_stats(s, &st) == 0, "stats");
	if (pipe_put(a->res_fd, (int) st.dropped) != 0)
		return 93;
	return fails;
}

/* Read everything there is (until RCVTIMEO); check the order.  Returns
 * the count. */
static int
drain(rmq_socket *s, int ms, int *fails)
{
	uint8_t  b[128];
	uint32_t pub = 0, idx = 0, prev = 0;
	ssize_t  n;
	int      got = 0;

	setopt_int(s, RMQ_RCVTIMEO, ms);
	while ((n = rmq_recv(s, b, sizeof(b), 0)) >= 0) {
		CHILD_CHECK(*fails, tag_parse(b, (size_t) n, &pub, &idx) == 0,
		            "bad message");
		CHILD_CHECK(*fails, got == 0 || idx > prev,
		            "index %u after %u", idx, prev);
		prev = idx;
		got++;
	}
	CHILD_CHECK(*fails, n == -RMQ_EAGAIN, "recv: %s",
	            rmq_strerror((int) n));
	return got;
}

/* A subscriber that reads all the time, until stop and quiet. */
struct fast_sub {
	const char  *ep;
	int          ready_fd;
	volatile int stop;
	int          got;
};

static int
fast_sub(void *arg)
{
	struct fast_sub *f = arg;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	int              rc, fails = 0;

	if (open_socket(RMQ_SUB, &ctx, &s) != 0)
		return 80;
	rc = rmq_connect(s, f->ep);
	if (rc == 0)
		rc = rmq_setopt(s, RMQ_SUBSCRIBE, TOPIC, 1);
	if (rc != 0) {
		fprintf(stderr, "fast sub: %s\n", rmq_strerror(rc));
		return 81;
	}
	if (pipe_put(f->ready_fd, 1) != 0)
		return 82;
	do
		f->got += drain(s, 1000, &fails);
	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE));
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return fails;
}

/*
 * The slow subscriber's wait for the publisher's word: busy (no librmq
 * call at all, as a program computing) or polling (in rmq_poll with its
 * socket's events 0: progress, but no message taken).
 */
static int
slow_wait(rmq_socket *s, int fd, int *v, bool busy)
{
	return busy ? pipe_get(fd, v, 30000)
	            : pipe_get_progress(s, fd, v, 30000);
}

/* A slow subscriber (this process; RMQ_RCVHWM SLOW_HWM, reads only once
 * the publisher is done) and, with fast, one that reads all along. */
static void
drops(const char *prov, bool fast, bool busy)
{
	struct pub_arg   a;
	struct fast_sub *f = test_shared(sizeof(*f));
	char             bep[64], ep[256];
	int              ready[2], done[2], res[2], dropped, got, fails = 0;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	pid_t            pid, fpid = -1;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(done), 0);
	ck_assert_int_eq(pipe(res), 0);
	a   = (struct pub_arg){.ready_fd = ready[0], .nready = fast ? 2 : 1,
	                       .done_fd = done[0], .res_fd = res[1],
	                       .n = NDROP};
	pid = spawn_server(RMQ_PUB, bind_addr(prov, bep, sizeof(bep)),
	                   serve_drops, &a, ep, sizeof(ep));
	if (fast) {
		*f   = (struct fast_sub){.ep = ep, .ready_fd = ready[1]};
		fpid = spawn_child(fast_sub, f);
	}
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_SUB, &s), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RCVHWM, SLOW_HWM), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, TOPIC, 1), 0);
	ck_assert_int_eq(pipe_put(ready[1], 1), 0);
	/* Not reading while it publishes. */
	ck_assert_msg(slow_wait(s, res[0], &dropped, busy) == 0,
	              "%s: the publisher did not finish", prov);
	got = drain(s, 1000, &fails);
	ck_assert_int_eq(fails, 0);
	if (fast) {
		__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
		ck_assert_int_eq(reap(fpid), 0);
	}
	ck_assert_int_eq(pipe_put(done[1], 1), 0);
	ck_assert_int_eq(pipe_get(res[0], &dropped, 30000), 0);
	fprintf(stderr,
	        "%s, %s: slow subscriber got %d, fast one %d, dropped %d, "
	        "of %d each\n",
	        prov, busy ? "busy" : "polling", got, f->got, dropped, NDROP);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
	ck_assert_int_gt(got, 0);
	ck_assert_int_gt(dropped, 0);
	ck_assert_int_eq(got + f->got + dropped, (fast ? 2 : 1) * NDROP);
	munmap(f, sizeof(*f));
}

/* _i: provider (shm, tcp). */
START_TEST(test_drops_one_slow)
{
	drops(provs[_i], false, false);
}
END_TEST

START_TEST(test_drops_slow_and_fast)
{
	drops(provs[_i], true, false);
}
END_TEST

/* The slow subscriber makes no librmq call while the publisher sends. */
START_TEST(test_drops_one_busy)
{
	drops(provs[_i], false, true);
}
END_TEST

START_TEST(test_drops_busy_and_fast)
{
	drops(provs[_i], true, true);
}
END_TEST

/* ---- RMQ_NODROP: -RMQ_EAGAIN at a full subscriber, else wait ---- */

#define NNODROP 2000

static int
serve_nodrop(rmq_socket *s, void *arg)
{
	struct pub_arg  *a = arg;
	struct rmq_stats st;
	uint8_t          b[64];
	ssize_t          n = 0;
	double           t0;
	int              k, v, fails = 0;

	CHILD_CHECK(fails, setopt_int(s, RMQ_NODROP, 1) == 0, "NODROP");
	CHILD_CHECK(fails, getopt_int(s, RMQ_NODROP) == 1, "NODROP read");
	setopt_int(s, RMQ_SNDTIMEO, 3000); /* DONTWAIT: must not matter */
	if (pipe_get_progress(s, a->ready_fd, &v, 60000) != 0)
		return 90;
	for (k = 0; k < 100000; k++) {
		tag_fill(b, sizeof(b), 0, (uint32_t) k);
		t0 = test_now();
		n  = rmq_send(s, b, sizeof(b), RMQ_DONTWAIT);
		CHILD_CHECK(fails, test_now() - t0 < 1,
		            "DONTWAIT send %d took %.1f s", k,
		            test_now() - t0);
		if (n != (ssize_t) sizeof(b) || fails != 0)
			break;
	}
	if (fails == 0)
		CHILD_CHECK(fails, n == -RMQ_EAGAIN,
		            "DONTWAIT send %d: %zd (%s)", k, n,
		            rmq_strerror((int) n));
	CHILD_CHECK(fails, rmq_stats(s, &st) == 0 && st.dropped == 0,
	            "NODROP, yet dropped %llu",
	            (unsigned long long) st.dropped);
	/* Failed: say so (-1), let the test end. */
	if (pipe_put(a->res_fd, fails ? -1 : k) != 0)
		return 92;
	if (fails) {
		(void) pipe_get_progress(s, a->done_fd, &v, 60000);
		return fails;
	}
	/* Blocking: waits for the subscriber, which reads now. */
	setopt_int(s, RMQ_SNDTIMEO, 30000);
	fails += publish(s, 0, (uint32_t) k, (uint32_t) (k + NNODROP),
	                 small_size, 0);
	CHILD_CHECK(fails, rmq_stats(s, &st) == 0 && st.dropped == 0,
	            "dropped %llu", (unsigned long long) st.dropped);
	if (pipe_get_progress(s, a->done_fd, &v, 60000) != 0)
		return 91;
	return fails;
}

/* _i: provider (shm, tcp) x the subscriber polling or busy meanwhile. */
START_TEST(test_nodrop)
{
	const char    *prov = provs[_i / 2];
	bool           busy = _i % 2;
	struct pub_arg a;
	char           bep[64], ep[256];
	int            ready[2], done[2], res[2], k, st = -1;
	rmq_ctx       *ctx;
	rmq_socket    *s;
	pid_t          pid;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(done), 0);
	ck_assert_int_eq(pipe(res), 0);
	a   = (struct pub_arg){.ready_fd = ready[0], .nready = 1,
	                       .done_fd = done[0], .res_fd = res[1]};
	pid = spawn_server(RMQ_PUB, bind_addr(prov, bep, sizeof(bep)),
	                   serve_nodrop, &a, ep, sizeof(ep));
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_SUB, &s), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RCVHWM, SLOW_HWM), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, TOPIC, 1), 0);
	ck_assert_int_eq(pipe_put(ready[1], 1), 0);
	ck_assert_msg(slow_wait(s, res[0], &k, busy) == 0,
	              "%s: the publisher did not report", prov);
	if (k < 0) {
		ck_assert_int_eq(pipe_put(done[1], 1), 0);
		ck_abort_msg("%s, %s: the publisher failed (status %d)", prov,
		             busy ? "busy" : "polling", reap(pid));
	}
	fprintf(stderr,
	        "%s, %s: NODROP took %d before -RMQ_EAGAIN (RCVHWM %d)\n",
	        prov, busy ? "busy" : "polling", k, SLOW_HWM);
	ck_assert_int_gt(k, 0);
	recv_tagged(s, 1, k + NNODROP, 128, &pid, &st, 1, prov);
	ck_assert_int_eq(setopt_int(s, RMQ_RCVTIMEO, 300), 0);
	ck_assert_int_eq(rmq_recv(s, &k, sizeof(k), 0), -RMQ_EAGAIN);
	ck_assert_int_eq(pipe_put(done[1], 1), 0);
	close_all(ctx, s);
	reap_all(&pid, &st, 1, prov);
}
END_TEST

/* ---- three publishers into one SUB ---- */

#define NPUBS  3
#define NMULTI 500

START_TEST(test_three_publishers)
{
	const char    *prov = provs[_i];
	struct pub_arg a[NPUBS];
	char           bep[64], ep[NPUBS][256];
	int            ready[2], done[2], i, st[NPUBS];
	rmq_ctx       *ctx;
	rmq_socket    *s;
	pid_t          pids[NPUBS];

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(done), 0);
	for (i = 0; i < NPUBS; i++) {
		a[i]    = (struct pub_arg){.ready_fd = ready[0], .nready = 1,
		                           .done_fd = done[0],
		                           .id = (uint32_t) i, .n = NMULTI,
		                           .nodrop = 1};
		pids[i] = spawn_server(RMQ_PUB,
		                       bind_addr(prov, bep, sizeof(bep)),
		                       serve_pub, &a[i], ep[i], sizeof(ep[i]));
		st[i]   = -1;
	}
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_SUB, &s), 0);
	for (i = 0; i < NPUBS; i++)
		ck_assert_int_eq(rmq_connect(s, ep[i]), 0);
	/* Returns once all three filter with it. */
	ck_assert_int_eq(rmq_setopt(s, RMQ_SUBSCRIBE, "", 0), 0);
	for (i = 0; i < NPUBS; i++)
		ck_assert_int_eq(pipe_put(ready[1], 1), 0);
	recv_tagged(s, NPUBS, NMULTI, 65536 + HDR, pids, st, NPUBS, prov);
	for (i = 0; i < NPUBS; i++)
		ck_assert_int_eq(pipe_put(done[1], 1), 0);
	close_all(ctx, s);
	reap_all(pids, st, NPUBS, prov);
}
END_TEST

/* ---- many subscribers ---- */

struct many_sub {
	int    ep_fd, ready_fd, done_fd;
	size_t big;
};

/* Two messages: 64 B, then big; then say so. */
static int
many_sub(void *arg)
{
	struct many_sub *m = arg;
	char             ep[EP_LEN];
	uint8_t         *b = malloc(m->big);
	uint32_t         pub, idx;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	ssize_t          n;
	int              i, rc, fails = 0;

	if (b == NULL || pipe_get_ep(m->ep_fd, ep, 60000) != 0)
		return 80;
	if (open_socket(RMQ_SUB, &ctx, &s) != 0)
		return 81;
	setopt_int(s, RMQ_CONNECT_TIMEOUT, 60000);
	rc = rmq_connect(s, ep);
	if (rc == 0)
		rc = rmq_setopt(s, RMQ_SUBSCRIBE, TOPIC, 1);
	if (rc != 0) {
		fprintf(stderr, "sub %d: connect, subscribe: %s\n",
		        (int) getpid(), rmq_strerror(rc));
		return 82;
	}
	if (pipe_put(m->ready_fd, 1) != 0)
		return 83;
	setopt_int(s, RMQ_RCVTIMEO, 120000);
	for (i = 0; i < 2; i++) {
		n = rmq_recv(s, b, m->big, 0);
		CHILD_CHECK(fails, n == (ssize_t) (i == 0 ? 64 : m->big),
		            "recv %d: %zd (%s)", i, n, rmq_strerror((int) n));
		CHILD_CHECK(fails,
		            n >= (ssize_t) HDR &&
		                tag_parse(b, (size_t) n, &pub, &idx) == 0 &&
		                idx == (uint32_t) i,
		            "message %d: bad", i);
	}
	if (pipe_put(m->done_fd, fails) != 0)
		return 84;
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	free(b);
	return fails;
}

/*
 * Wait (progressing pub) for n ints on fd, while none of the children in
 * pids fails (st as for children_check).
 */
static void
pub_collect(rmq_socket *pub, int fd, int n, const pid_t *pids, int *st,
            int npids, const char *what)
{
	int i, v;

	for (i = 0; i < n;) {
		if (pipe_get_progress(pub, fd, &v, 1000) == 0)
			i++;
		else
			children_check(pids, st, npids, what);
	}
}

static void
many_subs(const char *prov, int nsubs, size_t big)
{
	struct many_sub m;
	/* Not on the heap before the fork: a child under valgrind would
	 * count the parent's blocks as its own leaks. */
	static pid_t    pids[64];
	static int      st[64];
	uint8_t        *b;
	char            bep[64], ep[256];
	size_t          len = sizeof(ep);
	int             epp[2], ready[2], done[2], i;
	rmq_ctx        *ctx;
	rmq_socket     *s;
	double          t0;
	ssize_t         n;

	ck_assert_int_le(nsubs, 64);
	ck_assert_int_eq(pipe(epp), 0);
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(done), 0);
	m = (struct many_sub){.ep_fd = epp[0], .ready_fd = ready[1],
	                      .done_fd = done[1], .big = big};
	for (i = 0; i < nsubs; i++) {
		pids[i] = spawn_child_secs(many_sub, &m, 600);
		st[i]   = -1;
	}
	b = malloc(big);
	ck_assert_ptr_nonnull(b);
	t0 = test_now();
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PUB, &s), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_NODROP, 1), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_SNDTIMEO, 120000), 0);
	ck_assert_int_eq(rmq_bind(s, bind_addr(prov, bep, sizeof(bep))), 0);
	ck_assert_int_eq(rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len), 0);
	for (i = 0; i < nsubs; i++)
		ck_assert_int_eq(pipe_put_ep(epp[1], ep), 0);
	pub_collect(s, ready[0], nsubs, pids, st, nsubs, prov);
	ck_assert_int_eq(getopt_int(s, RMQ_NPEERS), nsubs);
	tag_fill(b, 64, 0, 0);
	ck_assert_int_eq(rmq_send(s, b, 64, 0), 64);
	tag_fill(b, big, 0, 1);
	n = rmq_send(s, b, big, 0);
	ck_assert_msg(n == (ssize_t) big, "%s: big send: %s", prov,
	              rmq_strerror((int) n));
	/* Keep progressing until every subscriber has both. */
	pub_collect(s, done[0], nsubs, pids, st, nsubs, prov);
	fprintf(stderr, "%s: %d subscribers, 64 B + %zu B: %.1f s\n", prov,
	        nsubs, big, test_now() - t0);
	close_all(ctx, s);
	for (i = 0; i < nsubs; i++) {
		if (st[i] == -1)
			st[i] = reap(pids[i]);
		ck_assert_msg(st[i] == 0, "%s: subscriber %d: status %d", prov,
		              i, st[i]);
	}
	free(b);
}

START_TEST(test_64_subscribers)
{
	many_subs(provs[_i], 64, MiB);
}
END_TEST

START_TEST(test_64_subscribers_64mib)
{
	many_subs(provs[_i], 64, 64 * MiB);
}
END_TEST

/* ---- a subscriber SIGKILLed mid-stream ---- */

#define NKSUBS 3

struct kill_state {
	volatile int stop;
	int          got[NKSUBS];
	uint64_t     lost; /* the publisher's peers_lost at the end */
};

struct ksub_arg {
	struct kill_state *k;
	const char        *ep;
	int                id;
};

static int
serve_stream(rmq_socket *s, void *arg)
{
	struct kill_state *k = arg;
	struct rmq_stats   st;
	uint8_t            b[256];
	uint32_t           i;
	ssize_t            n;
	int                fails = 0;

	for (i = 0; !__atomic_load_n(&k->stop, __ATOMIC_ACQUIRE) && !fails;
	     i++) {
		tag_fill(b, sizeof(b), 0, i);
		n = rmq_send(s, b, sizeof(b), 0);
		CHILD_CHECK(fails, n == (ssize_t) sizeof(b),
		            "publish %u: %zd (%s)", i, n,
		            rmq_strerror((int) n));
		if (i % 8 == 0)
			usleep(200);
	}
	rmq_stats(s, &st);
	k->lost = st.peers_lost;
	return fails;
}

static int
ksub(void *arg)
{
	struct ksub_arg *a = arg;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	uint8_t          b[256];
	uint32_t         pub = 0, idx = 0, prev = 0;
	ssize_t          n;
	int              rc, fails = 0;

	if (open_socket(RMQ_SUB, &ctx, &s) != 0)
		return 80;
	rc = rmq_connect(s, a->ep);
	if (rc == 0)
		rc = rmq_setopt(s, RMQ_SUBSCRIBE, "", 0);
	if (rc != 0) {
		fprintf(stderr, "sub %d: %s\n", a->id, rmq_strerror(rc));
		return 81;
	}
	setopt_int(s, RMQ_RCVTIMEO, 500);
	while (fails == 0) {
		n = rmq_recv(s, b, sizeof(b), 0);
		/* Done once told and quiet (or the publisher gone). */
		if ((n == -RMQ_EAGAIN || n == -RMQ_ENOTCONN) &&
		    __atomic_load_n(&a->k->stop, __ATOMIC_ACQUIRE))
			break;
		if (n == -RMQ_EAGAIN)
			continue;
		CHILD_CHECK(fails, n == (ssize_t) sizeof(b),
		            "sub %d: %zd (%s)", a->id, n,
		            rmq_strerror((int) n));
		CHILD_CHECK(fails, tag_parse(b, sizeof(b), &pub, &idx) == 0,
		            "sub %d: bad message", a->id);
		/* Drops are allowed (default mode), reordering is not. */
		CHILD_CHECK(fails, a->k->got[a->id] == 0 || idx > prev,
		            "sub %d: %u after %u", a->id, idx, prev);
		prev = idx;
		__atomic_add_fetch(&a->k->got[a->id], 1, __ATOMIC_RELEASE);
	}
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return fails;
}

/* Wait until each of subs [from, NKSUBS) got at least want more. */
static void
wait_got(struct kill_state *k, int from, const int *base, int want,
         const char *what)
{
	double end = test_now() + 30;
	int    i;

	for (i = from; i < NKSUBS; i++) {
		while (__atomic_load_n(&k->got[i], __ATOMIC_ACQUIRE) <
		           base[i] + want &&
		       test_now() < end)
			usleep(1000);
		ck_assert_msg(k->got[i] >= base[i] + want,
		              "%s: subscriber %d got %d, want %d", what, i,
		              k->got[i], base[i] + want);
	}
}

START_TEST(test_sub_killed)
{
	const char        *prov = provs[_i];
	struct kill_state *k    = test_shared(sizeof(*k));
	struct ksub_arg    a[NKSUBS];
	char               bep[64], ep[256];
	int                base[NKSUBS] = {0}, i, st;
	pid_t              pub, subs[NKSUBS];

	/*
	 * On the fan-out log over shm, libfabric 1.17's fi_read takes a
	 * spinlock in the publisher's shared region: a subscriber killed
	 * while it holds it leaves the others spinning for ever (seen in
	 * one run in three).  A provider bug librmq cannot mend: shm ships
	 * with the log off (providers/shm.c); here it was forced on.
	 */
	if (strcmp(prov, "shm") == 0 && getenv("RMQ_FANOUT_LOG") != NULL &&
	    strcmp(getenv("RMQ_FANOUT_LOG"), "0") != 0) {
		fprintf(stderr, "SKIP shm with the fan-out log forced: a "
		        "subscriber SIGKILLed inside libfabric 1.17 shm's "
		        "fi_read leaves its spinlock held (providers/shm.c)\n");
		munmap(k, sizeof(*k));
		return;
	}

	pub = spawn_server(RMQ_PUB, bind_addr(prov, bep, sizeof(bep)),
	                   serve_stream, k, ep, sizeof(ep));
	for (i = 0; i < NKSUBS; i++) {
		a[i]    = (struct ksub_arg){.k = k, .ep = ep, .id = i};
		subs[i] = spawn_child(ksub, &a[i]);
	}
	wait_got(k, 0, base, 200, prov);
	kill(subs[0], SIGKILL);
	ck_assert_int_eq(reap(subs[0]), 200 + SIGKILL);
	for (i = 1; i < NKSUBS; i++)
		base[i] = k->got[i];
	wait_got(k, 1, base, 1000, prov);
	ck_assert_int_eq(waitpid(pub, &st, WNOHANG), 0); /* still there */
	__atomic_store_n(&k->stop, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(reap(pub), 0);
	for (i = 1; i < NKSUBS; i++)
		ck_assert_int_eq(reap(subs[i]), 0);
	fprintf(stderr, "%s: subscribers got %d (killed), %d, %d\n", prov,
	        k->got[0], k->got[1], k->got[2]);
	ck_assert_int_eq(k->lost, 1); /* the publisher noticed */
	munmap(k, sizeof(*k));
}
END_TEST

/* ---- the wrong direction ---- */

START_TEST(test_pubsub_wrong_direction)
{
	rmq_ctx    *ctx;
	rmq_socket *pub, *sub;
	char        c = 'x';

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PUB, &pub), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_SUB, &sub), 0);
	ck_assert_int_eq(getopt_int(pub, RMQ_TYPE), RMQ_PUB);
	ck_assert_int_eq(getopt_int(sub, RMQ_TYPE), RMQ_SUB);
	ck_assert_int_eq(rmq_recv(pub, &c, 1, 0), -RMQ_ENOTSUP);
	ck_assert_int_eq(rmq_send(sub, &c, 1, 0), -RMQ_ENOTSUP);
	/* Not subscribed to anything yet. */
	ck_assert_int_eq(rmq_setopt(sub, RMQ_UNSUBSCRIBE, "a", 1),
	                 -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(sub, RMQ_UNSUBSCRIBE, "", 0), -RMQ_EINVAL);
	/* No publisher: subscribing is only recorded. */
	ck_assert_int_eq(rmq_setopt(sub, RMQ_SUBSCRIBE, "a", 1), 0);
	ck_assert_int_eq(rmq_setopt(sub, RMQ_UNSUBSCRIBE, "a", 1), 0);
	ck_assert_int_eq(rmq_close(pub), 0);
	ck_assert_int_eq(rmq_close(sub), 0);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
}
END_TEST

/* ---- moving onto the fan-out log mid-stream ---- */

#define SWITCH_SUBS 4
#define SWITCH_END  UINT32_MAX

struct switch_arg {
	int joined_fd; /* the test's word: every subscriber is in */
};

/* Publish (RMQ_NODROP: nothing is dropped) until every subscriber joined,
 * 3000 more, then the end mark. */
static int
serve_switch(rmq_socket *s, void *arg)
{
	struct switch_arg *a = arg;
	uint8_t           *b = malloc(65536 + HDR);
	struct pollfd      pfd = {.fd = a->joined_fd, .events = POLLIN};
	uint32_t           i, end = UINT32_MAX - 1;
	ssize_t            n;
	size_t             len;
	int                fails = 0, v;

	if (b == NULL)
		return 50;
	setopt_int(s, RMQ_NODROP, 1);
	setopt_int(s, RMQ_SNDTIMEO, 20000);
	for (i = 0; i < end && fails == 0; i++) {
		if (end == UINT32_MAX - 1 && i % 50 == 0 &&
		    poll(&pfd, 1, 0) == 1) {
			if (pipe_get(a->joined_fd, &v, 1000) != 0)
				fails++;
			end = i + 3000;
		}
		len = mixed_size(i);
		tag_fill(b, len, 0, i);
		n = rmq_send(s, b, len, 0);
		CHILD_CHECK(fails, n == (ssize_t) len, "send %u: %s", i,
		            rmq_strerror((int) n));
		if (end == UINT32_MAX - 1)
			usleep(200); /* while they join */
	}
	tag_fill(b, HDR, 0, SWITCH_END);
	n = rmq_send(s, b, HDR, 0);
	CHILD_CHECK(fails, n == HDR, "end: %s", rmq_strerror((int) n));
	free(b);
	return fails;
}

struct switch_sub {
	const char *ep;
	int         ready_fd;
};

/* From its first message to the end mark: every index once, in order. */
static int
switch_sub(void *arg)
{
	struct switch_sub *a = arg;
	uint8_t           *b = malloc(65536 + HDR);
	rmq_ctx           *ctx;
	rmq_socket        *s;
	uint32_t           pub = 0, idx = 0, prev = 0;
	ssize_t            n;
	int                fails = 0, got = 0, rc;

	if (b == NULL || open_socket(RMQ_SUB, &ctx, &s) != 0)
		return 80;
	rc = rmq_connect(s, a->ep);
	if (rc == 0)
		rc = rmq_setopt(s, RMQ_SUBSCRIBE, TOPIC, 1);
	if (rc != 0 || pipe_put(a->ready_fd, 1) != 0)
		return 81;
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	for (;;) {
		n = rmq_recv(s, b, 65536 + HDR, 0);
		CHILD_CHECK(fails, n >= 0, "recv after %d: %s", got,
		            rmq_strerror((int) n));
		if (n < 0)
			break;
		CHILD_CHECK(fails, tag_parse(b, (size_t) n, &pub, &idx) == 0,
		            "bad message after %u", prev);
		if (idx == SWITCH_END)
			break;
		CHILD_CHECK(fails, got == 0 || idx == prev + 1,
		            "index %u after %u", idx, prev);
		prev = idx;
		got++;
		if (fails > 0)
			break;
	}
	CHILD_CHECK(fails, got >= 3000, "only %d messages", got);
	free(b);
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return fails;
}

/* _i: provider.  Subscribers join one by one while the publisher
 * publishes; the third moves them all from push onto the log
 * (thresholds.fanout_log 3), the fourth joins it at once. */
START_TEST(test_log_switch)
{
	const char       *prov = provs[_i];
	struct switch_arg a;
	struct switch_sub subs[SWITCH_SUBS];
	char              bep[64], ep[256];
	int               joined[2], ready[2], st[SWITCH_SUBS], k, v;
	pid_t             pid, pids[SWITCH_SUBS];

	ck_assert_int_eq(pipe(joined), 0);
	ck_assert_int_eq(pipe(ready), 0);
	a = (struct switch_arg){.joined_fd = joined[0]};
	setenv("RMQ_FANOUT_LOG", "3", 1);
	pid = spawn_server(RMQ_PUB, bind_addr(prov, bep, sizeof(bep)),
	                   serve_switch, &a, ep, sizeof(ep));
	unsetenv("RMQ_FANOUT_LOG");
	for (k = 0; k < SWITCH_SUBS; k++) {
		st[k]    = -1;
		subs[k]  = (struct switch_sub){.ep = ep, .ready_fd = ready[1]};
		pids[k]  = spawn_child(switch_sub, &subs[k]);
		ck_assert_msg(pipe_get(ready[0], &v, 30000) == 0,
		              "%s: subscriber %d did not join", prov, k);
		usleep(100000);
	}
	ck_assert_int_eq(pipe_put(joined[1], 1), 0);
	reap_all(pids, st, SWITCH_SUBS, prov);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

static Suite *
pubsub_suite(void)
{
	Suite *s  = suite_create("pubsub");
	TCase *tc = tcase_create("multiprocess");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_only(tc, test_pubsub_wrong_direction, 0, 1);
	tcase_add_loop_only(tc, test_sub_nothing_before_subscribe, 0, 2);
	tcase_add_loop_only(tc, test_sub_filter, 0, 3);
	tcase_add_loop_only(tc, test_join_sub_connects, 0, 3);
	tcase_add_loop_only(tc, test_join_sub_subscribed_first, 0, 2);
	tcase_add_loop_only(tc, test_join_pub_connects, 0, 3);
	tcase_add_loop_only(tc, test_drops_one_slow, 0, 2);
	tcase_add_loop_only(tc, test_drops_slow_and_fast, 0, 2);
	tcase_add_loop_only(tc, test_drops_one_busy, 0, 2);
	tcase_add_loop_only(tc, test_drops_busy_and_fast, 0, 2);
	tcase_add_loop_only(tc, test_nodrop, 0, 4);
	tcase_add_loop_only(tc, test_three_publishers, 0, 2);
	tcase_add_loop_only(tc, test_sub_killed, 0, 2);
	tcase_add_loop_only(tc, test_64_subscribers, 0, 2);
	tcase_add_loop_only(tc, test_log_switch, 0, 3);
	suite_add_tcase(s, tc);
	if (getenv("RMQ_TEST_STRESS") != NULL) {
		tc = tcase_create("stress");
		tcase_set_timeout(tc, 300);
		tcase_add_loop_only(tc, test_64_subscribers_64mib, 0, 3);
		suite_add_tcase(s, tc);
	}
	return s;
}

RMQ_CHECK_MAIN(pubsub_suite)
