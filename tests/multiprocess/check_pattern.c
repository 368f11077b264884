/*
 * The patterns on their ops (patterns/, lib/pattern.c), against a real
 * peer process: what each pattern says the socket can do now (events),
 * REQ hearing of its REP's death through peer_gone, its receive filter
 * dropping stale replies, and unknown options reaching the pattern.
 * Links the internals to call the ops; the peers use the public API.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "checkmain.h"

#include "pattern.h"
#include "progress.h"
#include "conn/peer.h"
#include "rxq.h"
#include "socket.h"

static int
events(rmq_socket *s)
{
	return s->pat->events(s->pstate, s);
}

/* Progress s until its events have want (10 s at most). */
static int
events_until(rmq_socket *s, int want)
{
	double end = test_now() + 10;
	int    ev;

	while ((ev = events(s)) != want && test_now() < end)
		if (rmq_reactor_progress(&s->reactor) == 0)
			usleep(100);
	return ev;
}

static int
serve_pair(rmq_socket *s, void *arg)
{
	char buf[8];
	int  fails = 0;

	(void) arg;
	fails += rmq_recv(s, buf, sizeof(buf), 0) != 2;
	fails += rmq_send(s, "one", 3, 0) != 3;
	fails += rmq_recv(s, buf, sizeof(buf), 0) != 3;
	return fails;
}

/* PAIR: writable once connected; readable while a message waits. */
START_TEST(test_pair_events)
{
	char        bep[64], ep[256], buf[8];
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;

	pid = spawn_server(RMQ_PAIR, bind_addr("shm", bep, sizeof(bep)),
	                   serve_pair, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(events(s), RMQ_EV_OUT);
	ck_assert_int_eq(rmq_send(s, "go", 2, 0), 2);
	ck_assert_int_eq(events_until(s, RMQ_EV_IN | RMQ_EV_OUT),
	                 RMQ_EV_IN | RMQ_EV_OUT);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 3);
	ck_assert_int_eq(events(s), RMQ_EV_OUT);
	ck_assert_int_eq(rmq_send(s, "bye", 3, 0), 3);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

static int
serve_rep(rmq_socket *s, void *arg)
{
	char buf[8];
	int  fails = 0;

	(void) arg;
	fails += rmq_recv(s, buf, sizeof(buf), 0) != 1;
	fails += rmq_send(s, "r1", 2, 0) != 2;
	return fails;
}

/*
 * REQ: writable when idle, nothing while its request is out, readable
 * when the reply is in.  Its receive filter takes only the reply to the
 * request out, from the REP asked: anything else is stale.
 */
START_TEST(test_req_events_and_filter)
{
	char              bep[64], ep[256], buf[8];
	struct rmq_rxent  e;
	struct rmq_peer   other;
	rmq_ctx          *ctx;
	rmq_socket       *s;
	struct rmq_peer  *p;
	pid_t             pid;

	pid = spawn_server(RMQ_REP, bind_addr("shm", bep, sizeof(bep)),
	                   serve_rep, NULL, ep, sizeof(ep));
	open_connected(RMQ_REQ, ep, &ctx, &s);
	ck_assert_int_eq(events(s), RMQ_EV_OUT);
	p = rmq_peer_at(s, 0);
	ck_assert_ptr_nonnull(p);
	memset(&e, 0, sizeof(e));
	e.peer = p;
	ck_assert(!s->pat->rx_filter(s->pstate, s, &e)); /* nothing asked */
	ck_assert_int_eq(rmq_send(s, "a", 1, 0), 1);
	ck_assert_int_eq(events(s), 0);
	/* the reply's id is the request's: find it by trying */
	for (e.msgid = 0; e.msgid < 1000; e.msgid++)
		if (s->pat->rx_filter(s->pstate, s, &e))
			break;
	ck_assert_uint_lt(e.msgid, 1000);
	e.msgid++;
	ck_assert(!s->pat->rx_filter(s->pstate, s, &e)); /* another request's */
	e.msgid--;
	other    = *p;
	other.id = p->id + 0x10000; /* the same slot, another peer */
	e.peer   = &other;
	ck_assert(!s->pat->rx_filter(s->pstate, s, &e)); /* another REP's */
	ck_assert_int_eq(events_until(s, RMQ_EV_IN), RMQ_EV_IN);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 2);
	ck_assert_int_eq(memcmp(buf, "r1", 2), 0);
	e.peer = p;
	ck_assert(!s->pat->rx_filter(s->pstate, s, &e)); /* answered */
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* REP: takes the request, then dies without answering. */
static int
serve_rep_dies(rmq_socket *s, void *arg)
{
	char buf[8];

	(void) arg;
	if (rmq_recv(s, buf, sizeof(buf), 0) == 1)
		kill(getpid(), SIGKILL);
	return 1;
}

/* REQ hears through peer_gone that its REP died: readable, and the
 * receive says ECONNRESET; then it may send again (writable or not, as
 * peers allow). */
START_TEST(test_req_peer_gone)
{
	char        bep[64], ep[256], buf[8];
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;

	pid = spawn_server(RMQ_REP, bind_addr("shm", bep, sizeof(bep)),
	                   serve_rep_dies, NULL, ep, sizeof(ep));
	open_connected(RMQ_REQ, ep, &ctx, &s);
	ck_assert_int_eq(rmq_send(s, "a", 1, 0), 1);
	ck_assert_int_eq(events_until(s, RMQ_EV_IN), RMQ_EV_IN);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), -RMQ_ECONNRESET);
	ck_assert_int_eq(events(s), 0); /* idle, and no REP to send to */
	/* It waits for the REP to come back (reconnecting). */
	ck_assert_int_eq(rmq_send(s, "b", 1, RMQ_DONTWAIT), -RMQ_EAGAIN);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 200 + SIGKILL);
}
END_TEST

/* An option no layer knows: the pattern's setopt/getopt, if any, else
 * -RMQ_EINVAL. */
START_TEST(test_unknown_option)
{
	rmq_ctx    *ctx;
	rmq_socket *s;
	int         v = 1;
	size_t      len = sizeof(v);

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_REQ, &s), 0);
	ck_assert(s->pat->setopt == NULL); /* REQ has no options of its own */
	ck_assert_int_eq(rmq_setopt(s, 9999, &v, sizeof(v)), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_getopt(s, 9999, &v, &len), -RMQ_EINVAL);
	close_all(ctx, s);
}
END_TEST

/* The registry: one ops table per type, wire ids paired both ways, and
 * each pattern's thresholds section named. */
START_TEST(test_registry)
{
	const struct rmq_pattern_ops *const *p, *const *r, *q;
	const uint16_t                     *ids;
	int                                 i;

	for (p = rmq_pattern_all(); *p != NULL; p++) {
		ck_assert_ptr_eq(rmq_pattern_find((*p)->type), *p);
		ck_assert_ptr_nonnull((*p)->section);
		ck_assert((*p)->send != NULL);
		ck_assert((*p)->recv != NULL);
		ck_assert((*p)->events != NULL);
		/* each peer it takes takes it back */
		ids = (*p)->peer_ids != NULL ? (*p)->peer_ids : &(*p)->peer_id;
		for (i = 0; i == 0 || ((*p)->peer_ids != NULL && ids[i] != 0);
		     i++) {
			for (r = rmq_pattern_all(), q = NULL; *r != NULL; r++)
				if ((*r)->self_id == ids[i])
					q = *r;
			ck_assert_ptr_nonnull(q);
			ck_assert(rmq_pattern_takes(q, (*p)->self_id));
			if ((*p)->peer_ids == NULL)
				ck_assert_str_eq(q->name, (*p)->peer_name);
			else
				ck_assert_ptr_nonnull(strstr((*p)->peer_name,
				                             q->name));
		}
	}
	/* every public type has its table; nothing else has one */
	ck_assert_ptr_nonnull(rmq_pattern_find(RMQ_PUB));
	ck_assert_ptr_nonnull(rmq_pattern_find(RMQ_SUB));
	ck_assert_ptr_nonnull(rmq_pattern_find(RMQ_PUSH));
	ck_assert_ptr_nonnull(rmq_pattern_find(RMQ_PULL));
	ck_assert_ptr_nonnull(rmq_pattern_find(RMQ_DEALER));
	ck_assert_ptr_nonnull(rmq_pattern_find(RMQ_ROUTER));
	ck_assert_ptr_null(rmq_pattern_find(9));
	ck_assert_ptr_null(rmq_pattern_find(10));
}
END_TEST

static Suite *
pattern_suite(void)
{
	Suite *su = suite_create("pattern");
	TCase *tc = tcase_create("multiprocess");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_pair_events);
	tcase_add_test(tc, test_req_events_and_filter);
	tcase_add_test(tc, test_req_peer_gone);
	tcase_add_test(tc, test_unknown_option);
	tcase_add_test(tc, test_registry);
	suite_add_tcase(su, tc);
	return su;
}

RMQ_CHECK_MAIN(pattern_suite)
