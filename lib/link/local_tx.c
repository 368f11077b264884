/*
 * The local path's writing side (local.c has the rest): records go into
 * the peer's ring (local_ring.h), published at once or held back for
 * coalescing, and the peer woken when it sleeps.
 */

#include <stdio.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "conn/peer.h"
#include "paths/batch.h"
#include "link/local_peer.h"
#include "link/local_ring.h"
#include "paths/path.h"
#include "paths/rndv.h"
#include "paths/tx.h"
#include "socket.h"
#include "util.h"

/* Bytes a stream may hold unpublished: about a hundred small messages
 * per look of the reader, which then takes lines the writer is done
 * with, instead of every record's line and the tail's twice each. */
#define LOCAL_HOLD 8192
/* Replies held back (their peer waits for them, its next requests held
 * until it has them): less, so that both sides work at once.  64 B at
 * W = 64, 256 B to 8 KiB tried: docs/INTERNALS.md, local. */
#define LOCAL_HOLD_REPLY 1024

/* The reader sees everything written to it: the records held back
 * appear at once, with the first's prefix (the others' were stored
 * behind it), so their lines move to the reader together rather than
 * one by one as it would chase the writer (64 B PUSH/PULL on shm was
 * slower so, measured: INTERNALS §17, "the local path"). */
static void
local_publish(struct rmq_socket *s, struct local_peer *lp)
{
	if (lp->gate >= 0) {
		rmq_lring_show(&lp->tx, lp->gate, lp->gate_len);
		lp->gate = -1;
	}
	if (lp->ptail != lp->tail) {
		lp->ptail = lp->tail;
		if (rmq_lring_publish(&lp->tx, lp->ptail))
			rmq_local_wake(s, lp);
	}
	rmq_batch_hold(s, lp->p, false);
}

void
rmq_local_flush(struct rmq_socket *s, struct rmq_peer *p)
{
	struct local_peer *lp = local_of(p);

	if (lp != NULL && lp->tx.h != NULL)
		local_publish(s, lp);
	else
		rmq_batch_hold(s, p, false);
}

/* The record written at off is done: the reader may see it now, or (hold)
 * with the first record held back, at the publish. */
static void
local_commit(struct rmq_socket *s, struct local_peer *lp, int64_t off,
             uint32_t len, bool hold)
{
	if (hold && lp->gate < 0) {
		lp->gate     = off;
		lp->gate_len = len;
	}
	rmq_lring_commit(&lp->tx, &lp->tail, off, len, lp->gate != off);
	if (!hold || !rmq_batch_hold(s, lp->p, true))
		local_publish(s, lp);
}

/*
 * A waited send from 16 KiB up to what the ring takes goes by the ring or
 * as a large message does (an RTS, and the peer reads it from our memory
 * in one copy), whichever cost less so far.  Where the host puts the two
 * processes decides: writing 64 KiB into the ring was several times
 * slower in one placement than in another, where the lines it writes sit
 * in the reader's cache, while one copy cost about the same in either
 * (docs/INTERNALS.md §17, "the local path").  The ring's cost is taken
 * as twice its writer's
 * copy (the reader copies it out again); one copy's, from the RTS to the
 * FIN, as the send waits.  The ring until it has gone round once (its
 * first lap maps its pages), then one copy twice (the first teaches
 * nothing: cold buffers), then the cheaper, the other every
 * LOCAL_MID_PROBE-th time, since the placement can change.
 */
#define LOCAL_MID_MIN   16384
#define LOCAL_MID_PROBE 128

/* Whether a ring send of len bytes teaches mid_by_cma anything. */
static bool
mid_timed(const struct local_peer *lp, size_t len)
{
	return len >= LOCAL_MID_MIN && lp->tail >= lp->tx.size;
}

/* waits: the send waits until the peer has it (rmq_rndv_waits). */
static bool
mid_by_cma(const struct rmq_socket *s, const struct local_peer *lp,
           size_t len, bool waits)
{
	if (!waits || !mid_timed(lp, len) || !rmq_local_big(s) ||
	    s->paths.force >= 0 || lp->mid_rate[0] == 0)
		return false;
	if (lp->mid_n[1] < 2)
		return true;
	return local_rate_pick(lp->mid_rate[1] > lp->mid_rate[0],
	                       lp->mid_n[0] + lp->mid_n[1], LOCAL_MID_PROBE);
}

/* A mid-sized send took ns by the ring (k 0: its copy) or one copy (1). */
static void
mid_learn(struct local_peer *lp, int k, size_t len, int64_t ns)
{
	if (lp->mid_n[k]++ == 0 && k == 1)
		return; /* cold */
	/* The ring's: the reader copies it out again. */
	local_rate_add(&lp->mid_rate[k], len, k == 0 ? 2 * ns : ns);
}

struct lput {
	struct rmq_socket *s;
	struct rmq_peer   *p;
	const void        *a, *b; /* a: a header or a whole message */
	size_t             na, nb;
	bool               hold;  /* written, not published (coalescing) */
	bool               mid;   /* timed for mid_by_cma */
};

static ssize_t
lput_once(void *arg)
{
	struct lput       *t  = arg;
	struct local_peer *lp = local_of(t->p);
	size_t             n  = rmq_lring_rec(t->na + t->nb);
	uint8_t           *at;
	int64_t            off, t0;

	if (lp == NULL || lp->tx.h == NULL)
		return -FI_ENOTCONN;
	off = rmq_lring_reserve(&lp->tx, &lp->tail, &lp->tfreed, n);
	if (off < 0) {
		local_publish(t->s, lp); /* what it can take, to make room */
		return -FI_EAGAIN;
	}
	at = lp->tx.d + off;
	t0 = t->mid ? rmq_now_ns() : 0;
	rmq_copy(at + RMQ_LRING_PFX, t->a, t->na);
	if (t->nb > 0)
		rmq_copy(at + RMQ_LRING_PFX + t->na, t->b, t->nb);
	if (t->mid)
		mid_learn(lp, 0, t->nb, rmq_now_ns() - t0);
	local_commit(t->s, lp, off, (uint32_t) (t->na + t->nb), t->hold);
	return 0;
}

static int
local_put(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
          const void *a, size_t na, const void *b, size_t nb, bool hold)
{
	struct lput        t  = {s, p, a, b, na, nb, hold, false};
	struct local_peer *lp = local_of(p);

	if (lp == NULL || rmq_lring_rec(na + nb) > lp->tx.size / 2)
		return -RMQ_EMSGSIZE;
	t.mid = mid_timed(lp, nb);
	return rmq_post_retry(s, p, w, lput_once, &t, "local ring");
}

int
rmq_local_put(struct rmq_socket *s, struct rmq_peer *p,
              struct rmq_waiter *w, const void *a, size_t na,
              const void *b, size_t nb)
{
	return local_put(s, p, w, a, na, b, nb, false);
}

/*
 * Coalescing, as for the provider's paths (rmq_paths(7)): a message sent
 * within coalesce.window_us of the last one to p, with nothing from p
 * since, is written but not published until LOCAL_HOLD bytes are held,
 * a wait or the flusher (batch.c) sends them, or anything else goes to p.
 */
static bool
local_hold(struct rmq_socket *s, struct rmq_peer *p, struct local_peer *lp,
           size_t len)
{
	int64_t now;
	int64_t window = rmq_batch_window(s);

	if (window == 0)
		return false;
	if (rmq_batch_held(p))
		return lp->tail - lp->ptail + rmq_lring_rec(RMQ_HDR_SIZE + len) <=
		       (p->heard ? LOCAL_HOLD_REPLY : LOCAL_HOLD);
	if (!rmq_batch_may(p)) {
		/* A reply: alone, and the next one looks at the clock. */
		p->heard   = false;
		p->last_tx = 0;
		return false;
	}
	now = rmq_now_ns();
	if (now - p->last_tx < window &&
	    rmq_lring_rec(RMQ_HDR_SIZE + len) <= LOCAL_HOLD) {
		p->last_tx = now; /* the flusher's window starts here */
		return true;
	}
	p->last_tx = now;
	return false;
}

int
rmq_local_can_carry(struct rmq_socket *s, const struct rmq_peer *p, size_t len,
                char *why, size_t whylen)
{
	if (!local_on(p)) {
		snprintf(why, whylen, "%s is not on this host's local path",
		         p->name);
		return -RMQ_ENOTSUP;
	}
	if (len <= local_of(p)->max || rmq_local_big(s))
		return 0;
	snprintf(why, whylen, "path local carries at most %zu bytes to %s, "
	         "not %zu", local_of(p)->max, p->name, len);
	return -RMQ_EMSGSIZE;
}

/* A DATA message: header and payload straight into its ring. */
int
rmq_local_send(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_out *o,
           uint32_t msgid, int flags, struct rmq_waiter *w)
{
	struct local_peer *lp  = local_of(p);
	uint8_t            hb[RMQ_HDR_SIZE];
	struct rmq_hdr     h;
	int64_t            t0  = 0;
	bool               mid = false;
	int                rc;

	if (o->len <= lp->max && lp->tx.h != NULL &&
	    mid_by_cma(s, lp, o->len, rmq_rndv_waits(o, flags))) {
		mid = true;
		t0  = rmq_now_ns();
	}
	if (o->len > lp->max || mid) {
		static const struct rmq_rndv_how cma = {
			.path      = RMQ_PATH_LOCAL,
			.rts_flags = RMQ_RTS_F_CMA,
			.access    = FI_REMOTE_READ,
			.remote    = true,
			.own_va    = true,
		};
		/* It may ask us to write part of it (local_big.c, split_at):
		 * rmq_rndv_send keeps the flag only if this send waits. */
		static const struct rmq_rndv_how share = {
			.path       = RMQ_PATH_LOCAL,
			.rts_flags  = RMQ_RTS_F_CMA | RMQ_RTS_F_SHARE,
			.wait_flags = RMQ_RTS_F_SHARE,
			.access     = FI_REMOTE_READ,
			.remote     = true,
			.own_va     = true,
		};
		rc = rmq_rndv_send(s, p, w, o, msgid, flags,
		                   lp != NULL && lp->share ? &share : &cma);
		if (mid && rc == 0)
			mid_learn(lp, 1, o->len, rmq_now_ns() - t0);
		return rc;
	}
	rmq_hdr_fill(&h, p, RMQ_MT_DATA, msgid, (uint32_t) o->len);
	rmq_hdr_encode(hb, &h);
	rc = local_put(s, p, w, hb, sizeof(hb), o->buf, o->len,
	               local_hold(s, p, lp, o->len));
	if (rc != 0) {
		p->owed += h.credits;
		return rc;
	}
	rmq_tx_sent(s, p, RMQ_PATH_LOCAL, o->len);
	rmq_msg_free(o->msg); /* copied out */
	return 0;
}

/*
 * The common send in one pass: a message that fits the ring, to a live
 * local peer with credit, nothing else of ours queued to it, room in its
 * ring now.  The header is written in place.  1: not taken -- the
 * general path (xfer.c) then waits, flushes or chooses as it must.
 */
int
rmq_local_send_now(struct rmq_socket *s, struct rmq_peer *p, const void *buf,
                   size_t len, uint32_t msgid)
{
	struct local_peer *lp = local_of(p);
	struct rmq_hdr     h;
	uint8_t           *at;
	int64_t            off;
	size_t             n = RMQ_HDR_SIZE + len;
	int64_t            t0;
	bool               hold, mid = false;

	if (len > lp->max || (uint64_t) len > p->maxmsg ||
	    p->state != RMQ_PEER_LIVE || p->credits == 0 ||
	    s->inflight >= s->sndhwm || rmq_batch_open(p) ||
	    s->paths.force >= 0 || lp->tx.h == NULL)
		return 1;
	/* A copy that may wait (the general path asks again, with its
	 * flags). */
	if (mid_by_cma(s, lp, len, true))
		return 1; /* one copy: the general path */
	mid = mid_timed(lp, len);
	off = rmq_lring_reserve(&lp->tx, &lp->tail, &lp->tfreed,
	                        rmq_lring_rec(n));
	if (off < 0)
		return 1;
	hold = local_hold(s, p, lp, len);
	rmq_hdr_fill(&h, p, RMQ_MT_DATA, msgid, (uint32_t) len);
	at = lp->tx.d + off + RMQ_LRING_PFX;
	rmq_hdr_encode(at, &h);
	t0 = mid ? rmq_now_ns() : 0;
	rmq_copy(at + RMQ_HDR_SIZE, buf, len);
	if (mid)
		mid_learn(lp, 0, len, rmq_now_ns() - t0);
	local_commit(s, lp, off, (uint32_t) n, hold);
	rmq_tx_sent(s, p, RMQ_PATH_LOCAL, len);
	return 0;
}
