/*
 * Batches written into a ring (RBATCH, coalescing over the ring path) as a
 * hostile peer would write them.  The attacker completes a real handshake
 * with a victim PAIR on tcp (the one provider whose table sends by ring),
 * then writes hand-made RBATCHes straight into the victim's ring through
 * its endpoint (this test links the engine's internals):
 *
 *   1. a well-formed one (three items: 1 byte, 0 bytes, 1024 bytes): the
 *      victim delivers exactly those three, whole and in order;
 *   2. malformed ones, one per connection -- a count larger than the items
 *      (the last runs past the body), an item over the 1024-byte limit, a
 *      count of zero, bytes left after the last item: the victim delivers
 *      nothing of it, counts it (proto_errors) and drops that peer, and a
 *      good message after it, on the next connection, still arrives.
 *
 * Normal and strict mode (meson: check_rbatch, check_rbatch_strict).
 */
#include <rdma/fi_rma.h>

#include "checkmain.h"
#include "conn/peer.h"
#include "ep.h"
#include "paths/ring.h"
#include "progress.h"
#include "socket.h"
#include "testutil.h"
#include "util.h"
#include "wire.h"

#define GOOD     "good after"
#define N_BAD    4
#define BODY_MAX 4096

enum bad {
	B_COUNT = 0, /* says 3 items, holds 2 */
	B_ITEM_MAX,  /* one item of RMQ_BATCH_ITEM_MAX + 1 bytes */
	B_ZERO,      /* a count of 0 */
	B_TRAILING,  /* 8 bytes after the last item */
};

static const char *const bad_names[N_BAD] = {
	"count beyond the items", "item over the limit", "count zero",
	"bytes after the last item",
};

/* The i-th good item's size and byte. */
static const size_t good_len[3] = {1, 0, RMQ_BATCH_ITEM_MAX};

static size_t
put_item(uint8_t *b, size_t n, uint32_t msgid, uint8_t fill)
{
	rmq_put32(b, (uint32_t) n);
	rmq_put32(b + 4, msgid);
	memset(b + RMQ_BATCH_ITEM_HDR, fill, rmq_batch_item_size(n) -
	                                         RMQ_BATCH_ITEM_HDR);
	return rmq_batch_item_size(n);
}

/* The body of batch kind (-1: the good one); its item count in *count. */
static size_t
build(uint8_t *body, int kind, uint32_t *count)
{
	size_t   n = 0;
	uint32_t i;

	if (kind < 0) {
		for (i = 0; i < 3; i++)
			n += put_item(body + n, good_len[i], 0, (uint8_t) (0xa0 + i));
		*count = 3;
		return n;
	}
	n += put_item(body + n, 5, 0, 0x11);
	n += put_item(body + n, 7, 0, 0x22);
	*count = 2;
	switch (kind) {
	case B_COUNT:
		*count = 3;
		break;
	case B_ITEM_MAX:
		n += put_item(body + n, RMQ_BATCH_ITEM_MAX + 1, 0, 0x33);
		*count = 3;
		break;
	case B_ZERO:
		*count = 0;
		break;
	case B_TRAILING:
		memset(body + n, 0, 8);
		n += 8;
		break;
	}
	return n;
}

/* Victim: the good batch, then one bad batch per new connection, each
 * followed (next connection) by GOOD. */
static int
victim(rmq_socket *s, void *arg)
{
	struct rmq_stats st;
	uint8_t          buf[2048];
	ssize_t          n;
	int              i, fails = 0, tmo = 3000;
	uint64_t         lost0;

	(void) arg;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	if (rmq_recv(s, buf, sizeof(buf), 0) != 2) /* "hi" */
		return 90;
	for (i = 0; i < 3; i++) {
		n = rmq_recv(s, buf, sizeof(buf), 0);
		if (n != (ssize_t) good_len[i] ||
		    (n > 0 && (buf[0] != 0xa0 + i || buf[n - 1] != 0xa0 + i))) {
			fprintf(stderr, "victim: good item %d: %zd bytes\n", i, n);
			fails++;
		}
	}
	if (rmq_send(s, "ok", 2, 0) != 2)
		return 91;
	for (i = 0; i < N_BAD; i++) {
		rmq_stats(s, &st);
		lost0 = st.peers_lost;
		/* The next one is the attacker's next connection: nothing of
		 * the bad batch, then its peer gone, then GOOD from a new
		 * one. */
		/* Its peer dropped may show as -RMQ_ECONNRESET first (a
		 * PAIR's receive says so), never as a message. */
		int resets = 0;

		while ((n = rmq_recv(s, buf, sizeof(buf), 0)) ==
		           -RMQ_ECONNRESET &&
		       resets++ < 3)
			;
		if (n != (ssize_t) strlen(GOOD) ||
		    memcmp(buf, GOOD, strlen(GOOD)) != 0) {
			fprintf(stderr, "victim: %s: got %zd bytes, not GOOD\n",
			        bad_names[i], n);
			fails++;
		}
		rmq_stats(s, &st);
		if (st.peers_lost <= lost0) {
			fprintf(stderr, "victim: %s: its peer was kept\n",
			        bad_names[i]);
			fails++;
		}
		if (rmq_send(s, "ok", 2, 0) != 2)
			return 92;
	}
	rmq_stats(s, &st);
	fprintf(stderr, "victim: proto_errors %llu, peers lost %llu\n",
	        (unsigned long long) st.proto_errors,
	        (unsigned long long) st.peers_lost);
	if (st.proto_errors < N_BAD)
		fails++;
	return fails;
}

struct wop {
	struct rmq_op op;
	bool          done;
	int           err;
};

static void
wop_done(struct rmq_op *op, const struct rmq_cqe *e, void *owner)
{
	struct wop *w = rmq_container_of(op, struct wop, op);

	RMQ_UNUSED(owner);
	w->done = true;
	w->err  = e->err;
}

static struct rmq_peer *
the_peer(struct rmq_socket *s)
{
	struct rmq_peer *p;
	int              i;

	for (i = 0; i < s->peers->cap; i++) {
		p = rmq_peer_at(s, i);
		if (p != NULL && p->state == RMQ_PEER_LIVE)
			return p;
	}
	return NULL;
}

/* Write an RBATCH (kind, -1: good) at the start of p's ring, where the
 * victim's next ring message is due on a fresh connection; wait for its
 * completion. */
static void
forge(struct rmq_socket *s, struct rmq_peer *p, int kind)
{
	uint8_t       *b = calloc(1, RMQ_HDR_SIZE + BODY_MAX);
	struct rmq_hdr h = {0};
	struct fid_mr *mr;
	struct wop     w = {0};
	uint64_t       raddr, rkey;
	size_t         rlen, len;
	uint32_t       count;
	void          *desc;
	ssize_t        rc;
	double         end = test_now() + 5.0;

	ck_assert_ptr_nonnull(b);
	ck_assert(rmq_ring_tx_area(p, &raddr, &rkey, &rlen));
	len       = build(b + RMQ_HDR_SIZE, kind, &count);
	h.version = RMQ_WIRE_VERSION;
	h.type    = RMQ_MT_RBATCH;
	h.conn    = p->rid;
	h.msgid   = count;
	h.len     = (uint32_t) len;
	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_mr_reg(s, b, RMQ_HDR_SIZE + BODY_MAX, FI_WRITE,
	                            &mr, &desc, NULL), 0);
	rmq_op_init(&w.op, wop_done, 0);
	do {
		rc = fi_writedata(rmq_peer_ep(s, p), b, RMQ_HDR_SIZE + len,
		                  desc, RMQ_IMM_RING_MAKE(p->rid & 0xffff, 0),
		                  p->fiaddr, raddr, rkey,
		                  &w.op.fctx);
		if (rc == -FI_EAGAIN)
			rmq_reactor_progress(&s->reactor);
	} while (rc == -FI_EAGAIN && test_now() < end);
	ck_assert_int_eq(rc, 0);
	while (!w.done && test_now() < end)
		rmq_reactor_progress(&s->reactor);
	ck_assert_msg(w.done, "the forged write never completed");
	fi_close(&mr->fid);
	free(b);
}

/* One attacker connection: the handshake, "hi" if say_hi (by inject: the
 * ring's head stays at slot 0), and the peer. */
static struct rmq_peer *
attacker_open(const char *ep, rmq_ctx **ctx, rmq_socket **s, bool say_hi)
{
	struct rmq_peer *p;

	open_connected(RMQ_PAIR, ep, ctx, s);
	if (say_hi)
		ck_assert_int_eq(rmq_send(*s, "hi", 2, 0), 2);
	p = the_peer(*s);
	ck_assert_ptr_nonnull(p);
	return p;
}

START_TEST(test_rbatch_forged)
{
	char             bep[64], ep[256], buf[16];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_peer *p;
	pid_t            pid;
	int              i, tmo = 10000;

	pid = spawn_server(RMQ_PAIR, bind_addr("tcp", bep, sizeof(bep)),
	                   victim, NULL, ep, sizeof(ep));
	p = attacker_open(ep, &ctx, &s, true);
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	forge(s, p, -1);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 2);
	close_all(ctx, s);
	for (i = 0; i < N_BAD; i++) {
		/* A bad batch: the victim drops this connection. */
		p = attacker_open(ep, &ctx, &s, false);
		fprintf(stderr, "attacker: %s\n", bad_names[i]);
		forge(s, p, i);
		/* Until the victim has read it and dropped us: a goodbye of
		 * ours before that would let it close our peer first, and a
		 * batch the goodbye's count does not hold (it is forged)
		 * would then go unread. */
		rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
		ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0),
		                 -RMQ_ECONNRESET);
		close_all(ctx, s);
		/* Then a good message on a fresh connection. */
		open_connected(RMQ_PAIR, ep, &ctx, &s);
		rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
		ck_assert_int_eq(rmq_send(s, GOOD, strlen(GOOD), 0),
		                 (ssize_t) strlen(GOOD));
		ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 2);
		close_all(ctx, s);
	}
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

static Suite *
rbatch_suite(void)
{
	Suite *su = suite_create("rbatch");
	TCase *tc = tcase_create("hostile");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_rbatch_forged);
	suite_add_tcase(su, tc);
	return su;
}

RMQ_CHECK_MAIN(rbatch_suite)
