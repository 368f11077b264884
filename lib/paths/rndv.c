/*
 * The rendezvous family (rndv.h): the RTS, the FIN, the sender's entries
 * and its blocking wait, and the receiver's fetch with its FIN, for
 * rndv_read, rndv_send and rndv_write alike.  How the payload moves is
 * each row's (rndv_read.c, rndv_send.c, rndv_write.c).
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_endpoint.h>

#include "conn/peer.h"
#include "ctx.h"
#include "ep.h"
#include "msg.h"
#include "paths/path.h"
#include "paths/rndv.h"
#include "paths/tx.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

#define RMQ_STUCK_CANCEL_NS 1000000000ll /* a dead peer's tsend: cancel */
#define RMQ_STUCK_GIVEUP_NS 2000000000ll /* ... and stop waiting */
#define RMQ_DEAD_GRACE_NS   2000000000ll /* a dead peer's reads: cancel */

/* ---- the sender's entries ---- */

static void
rndv_unlink(struct rmq_socket *s, struct rmq_rndv_tx *r)
{
	struct rmq_rndv_tx **pp;

	for (pp = &s->ps->rndv.list; *pp != NULL; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
}

/* Ask the provider to drop what it still has posted for r. */
static void
rndv_cancel(struct rmq_socket *s, struct rmq_rndv_tx *r)
{
	if (r->cancel != NULL)
		r->cancel(s, r);
	else
		(void) fi_cancel(&rmq_peer_ep(s, r->peer)->fid, &r->op.fctx);
}

/* Give back what a rendezvous send held; the provider is done with it. */
static void
rndv_release(struct rmq_socket *s, struct rmq_rndv_tx *r)
{
	if (r->mr != NULL)
		fi_close(&r->mr->fid); /* revokes the peer's access */
	r->mr = NULL;
	free(r->owned);
	r->owned = NULL;
	free(r->wops);
	r->wops = NULL;
	if (r->msg != NULL)
		rmq_msg_free(r->msg);
	r->msg = NULL;
	r->peer->pending--;
	s->inflight--;
}

void
rmq_rndv_complete(struct rmq_socket *s, struct rmq_rndv_tx *r, int status)
{
	if (r->done)
		return;
	r->done   = true;
	r->status = status;
	if (r->cts && !r->posted)
		s->ps->rndv.cts_pending--;
	r->cts = false;
	if (r->tsend_out) {
		/*
		 * The provider still reads the payload: the buffer, its
		 * registration and the peer stay until what was posted
		 * completes (rmq_rndv_posted_done), or the socket closes.
		 */
		rndv_cancel(s, r);
		return;
	}
	rndv_release(s, r);
	if (r->waited)
		return; /* the blocked sender unlinks it */
	rndv_unlink(s, r);
	rmq_peer_reap(s, r->peer);
	free(r);
}

void
rmq_rndv_posted_done(struct rmq_socket *s, struct rmq_rndv_tx *r, int err)
{
	struct rmq_peer *p = r->peer;

	r->tsend_out = false;
	if (!r->done) {
		rmq_rndv_complete(s, r, err);
		return;
	}
	/* It failed while the provider held the payload: let go now. */
	rndv_release(s, r);
	if (!r->waited) {
		rndv_unlink(s, r);
		free(r);
		rmq_peer_reap(s, p);
	}
}

/* The op of r (rndv_send's tsend) completed. */
static void
rndv_op_done(struct rmq_op *op, const struct rmq_cqe *e, void *owner)
{
	rmq_rndv_posted_done(owner,
	                     rmq_container_of(op, struct rmq_rndv_tx, op),
	                     e->err);
}

struct rmq_rndv_tx *
rmq_rndv_find(struct rmq_socket *s, const struct rmq_peer *p, uint32_t cookie,
              int path)
{
	struct rmq_rndv_tx *r;

	for (r = s->ps->rndv.list; r != NULL; r = r->next)
		if (r->cookie == cookie && r->peer == p && r->path == path &&
		    !r->done && !r->cts)
			return r;
	return NULL;
}

void
rmq_rndv_due(struct rmq_socket *s, struct rmq_rndv_tx *r)
{
	r->cts = true;
	s->ps->rndv.cts_pending++;
	rmq_reactor_arm(&s->reactor, s->ps->rndv.hook, true);
}

/* After a CQ pass: post what the CTS and GRANT that came asked for. */
static void
rndv_after(void *owner)
{
	struct rmq_socket  *s = owner;
	struct rmq_rndv_tx *r, *next;

	for (r = s->ps->rndv.list; r != NULL && s->ps->rndv.cts_pending > 0; r = next) {
		next = r->next;
		if (r->cts && !r->posted && !r->done && r->post != NULL)
			r->post(s, r);
	}
	/* What -FI_EAGAIN left goes again after the next pass. */
	rmq_reactor_arm(&s->reactor, s->ps->rndv.hook, s->ps->rndv.cts_pending > 0);
}

/* ---- sending ---- */

/*
 * A posted payload whose peer died or cancelled: cancel it after 1 s,
 * give up after 2 s.  Returns true when it is time to give up.
 */
static bool
tsend_stuck(struct rmq_socket *s, struct rmq_rndv_tx *r, int64_t *since)
{
	int64_t now = rmq_now_ns();

	if (*since == 0) {
		*since = now;
		return false;
	}
	if (now - *since > RMQ_STUCK_GIVEUP_NS)
		return true;
	if (now - *since > RMQ_STUCK_CANCEL_NS)
		rndv_cancel(s, r);
	return false;
}

struct send_wait {
	struct rmq_socket  *s;
	struct rmq_rndv_tx *r;
	int64_t             stuck;
	bool                gave_up;
};

static int
send_over(void *arg)
{
	struct send_wait   *sw = arg;
	struct rmq_rndv_tx *r  = sw->r;

	if (r->done && !r->tsend_out)
		return 1;
	if (r->tsend_out && (r->done || r->peer->state == RMQ_PEER_DEAD) &&
	    tsend_stuck(sw->s, r, &sw->stuck)) {
		/*
		 * shm and tcp;ofi_rxm never complete a send to a peer that is
		 * gone or stopped listening: stop waiting.  The entry stays
		 * with the socket until the provider lets go (or the socket
		 * closes).
		 */
		if (!r->done)
			rmq_rndv_complete(sw->s, r, -RMQ_ECONNRESET);
		r->waited   = false;
		sw->gave_up = true;
		return 1;
	}
	return 0;
}

bool
rmq_rndv_waits(const struct rmq_out *o, int flags)
{
	return o->msg == NULL && !(flags & (RMQ_DONTWAIT | RMQ_XFER_F_OWN));
}

int
rmq_rndv_send(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
              const struct rmq_out *o, uint32_t msgid, int flags,
              const struct rmq_rndv_how *how)
{
	uint8_t             b[RMQ_RTS_SIZE];
	struct rmq_hdr      h;
	struct rmq_rts      rts;
	struct rmq_rndv_tx *r;
	struct send_wait    sw;
	uint64_t            key = 0;
	int                 rc  = 0;

	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -RMQ_ENOMEM;
	rmq_op_init(&r->op, rndv_op_done, 0);
	r->peer   = p;
	r->cookie = ++s->ps->rndv.next_cookie;
	r->path   = how->path;
	r->post   = how->post;
	r->cancel = how->cancel;
	r->waited = rmq_rndv_waits(o, flags);
	if (o->msg != NULL || r->waited) {
		r->src = o->buf; /* the message's own data, or the caller's */
	} else {
		/* Must return now: the payload moves to a buffer of ours. */
		r->owned = malloc(o->len);
		if (r->owned == NULL) {
			free(r);
			return -RMQ_ENOMEM;
		}
		rmq_copy(r->owned, o->buf, o->len);
		r->src = r->owned;
	}
	r->len = o->len;
	memset(&rts, 0, sizeof(rts));
	rts.flags = how->rts_flags;
	/* Only a send that waits here, progressing until FIN, can promise
	 * to answer the reader meanwhile. */
	if (!r->waited)
		rts.flags &= ~how->wait_flags;
	if (how->remote) {
		/* The peer reads it: registered for that only, until FIN. */
		rc = rmq_mr_reg(s, (void *) r->src, o->len, how->access, &r->mr,
		                NULL, &key);
		rts.raddr = s->dom->caps.mr_virt_addr || how->own_va
		                ? (uint64_t) (uintptr_t) r->src
		                : 0;
		rts.rkey  = key;
	} else if (s->dom->caps.mr_local) {
		/* We send or write from it: a descriptor where FI_MR_LOCAL
		 * says. */
		rc = rmq_mr_reg(s, (void *) r->src, o->len, how->access, &r->mr,
		                &r->desc, NULL);
	}
	if (rc != 0)
		goto fail;
	rts.len    = o->len;
	rts.cookie = r->cookie;
	rmq_hdr_fill(&h, p, RMQ_MT_RTS, msgid, 0);
	rmq_hdr_encode(b, &h);
	rmq_rts_encode(b + RMQ_HDR_SIZE, &rts);
	rc = rmq_tx_small(s, p, w, b, sizeof(b));
	if (rc != 0) {
		p->owed += h.credits;
		if (r->mr != NULL)
			fi_close(&r->mr->fid);
		goto fail;
	}
	r->next       = s->ps->rndv.list;
	s->ps->rndv.list  = r;
	p->pending++;
	s->inflight++;
	/* The RTS is out: it cost a credit, whatever its FIN will say. */
	rmq_tx_sent(s, p, how->path, o->len);
	if (o->msg != NULL)
		r->msg = o->msg; /* ours now: freed on FIN */
	if (!r->waited)
		return 0;

	/*
	 * Blocking send: the caller's buffer is in use until FIN (read) or
	 * the payload's completion.  SNDTIMEO bounded the wait for credits
	 * and a peer; once the RTS is out we do not revoke on a timer: the
	 * peer may be reading (on tcp;ofi_rxm a read of a revoked region
	 * reports success and kills the connection) or have posted its
	 * receive.  It ends with the transfer or the peer's death.  A peer
	 * waiting for our FIN may itself wait for its RTS: the wait pulls
	 * queued rendezvous messages (RMQ_WAIT_IDLE).
	 */
	sw = (struct send_wait){s, r, 0, false};
	rmq_waiter_init(w, -1);
	(void) rmq_wait_until(&s->reactor, w, RMQ_WAIT_IDLE, send_over, &sw);
	rc = r->status;
	if (sw.gave_up)
		return rc;
	rndv_unlink(s, r);
	rmq_peer_reap(s, p);
	free(r);
	return rc;
fail:
	free(r->owned);
	free(r);
	return rc;
}

/* ---- receiving ---- */

/* The row an RTS with these flags names: the first whose rts_flag it
 * carries, else the one that reads an RTS that names none. */
static int
rts_row(const struct rmq_socket *s, uint32_t flags)
{
	int i, dflt = -1;

	for (i = 0; i < RMQ_PATHS; i++) {
		if (s->path_ops[i]->rts_flag & flags)
			return i;
		if (s->path_ops[i]->flags & RMQ_ROW_F_RTS_READ)
			dflt = i;
	}
	return dflt;
}

/* An RTS: queue it as a message; the application's receive fetches it. */
static void
rts_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rx *rx)
{
	struct rmq_rxent *e = rmq_rx_new(s, p, rx->h->msgid);
	uint32_t          cookie;

	if (e == NULL)
		return;
	if (rmq_rts_decode(&e->rts, rx->ext) != 0) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "bad RTS from %s dropped", p->name);
		rmq_rxent_free(s, e);
		rmq_tx_consumed(s, p);
		return;
	}
	e->path = rts_row(s, e->rts.flags);
	e->len  = e->rts.len;
	e->rndv = true;
	cookie  = e->rts.cookie;
	if (rmq_rx_accept(s, p, e) == -RMQ_EMSGSIZE)
		(void) rmq_tx_ctl(s, p, RMQ_MT_FIN, cookie, EMSGSIZE);
}

/* A FIN: the receiver is done with one of our rendezvous sends. */
static void
fin_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rx *rx)
{
	const struct rmq_hdr *h = rx->h;
	struct rmq_rndv_tx   *r;

	p->recvd++;
	for (r = s->ps->rndv.list; r != NULL; r = r->next)
		if (r->cookie == h->msgid && r->peer == p && !r->done)
			break;
	if (r == NULL) {
		/* Late FIN after a timeout revoked it: harmless. */
		rmq_log(RMQ_LOG_DEBUG, "FIN for unknown cookie %u", h->msgid);
		return;
	}
	rmq_rndv_complete(s, r,
	                  h->len == 0 ? 0
	                  : h->len < 4096 ? -(int) h->len
	                                  : -RMQ_EPROTO);
}

void
rmq_rndv_on_rx(struct rmq_socket *s, struct rmq_peer *p,
               const struct rmq_rx *rx)
{
	if ((rx->h->type & RMQ_MT_MASK) == RMQ_MT_RTS)
		rts_rx(s, p, rx);
	else
		fin_rx(s, p, rx);
}

static void
read_op_done(struct rmq_op *op, const struct rmq_cqe *e, void *owner)
{
	struct rmq_read_op *ro = rmq_container_of(op, struct rmq_read_op, op);

	RMQ_UNUSED(owner);
	if (e->err != 0 && ro->rd->status == 0)
		ro->rd->status = e->err;
	ro->rd->pending--;
}

/*
 * shm 1.17's fast RMA path reports a failed read (a peer's bad address or
 * key) with no context: it can only be the fetch under way, and nothing
 * will complete its op later.
 */
static void
read_orphan(struct rmq_op *op, const struct rmq_cqe *e, void *owner)
{
	struct rmq_read *rd = rmq_container_of(op, struct rmq_read, orphan);

	RMQ_UNUSED(owner);
	rmq_log(RMQ_LOG_WARN, "rendezvous read failed: %s (no context)",
	        fi_strerror(-e->err));
	rd->status   = e->err;
	rd->pending  = 0;
	rd->orphaned = true;
}

void
rmq_read_init(struct rmq_read *rd)
{
	memset(rd, 0, sizeof(*rd));
	rmq_op_init(&rd->orphan, read_orphan, 0);
}

void
rmq_read_op_init(struct rmq_read_op *op, struct rmq_read *rd)
{
	memset(op, 0, sizeof(*op));
	rmq_op_init(&op->op, read_op_done, 0);
	op->rd = rd;
}

struct ops_wait {
	struct rmq_socket  *s;
	struct rmq_peer    *p;
	struct rmq_read    *rd;
	struct rmq_read_op *ops;
	size_t              nops;
	int64_t             dead_since;
};

static int
ops_done(void *arg)
{
	struct ops_wait *ow = arg;
	size_t           i;

	if (ow->rd->pending == 0)
		return 1;
	if (ow->p->state != RMQ_PEER_DEAD)
		return 0;
	if (ow->dead_since == 0) {
		ow->dead_since = rmq_now_ns();
	} else if (rmq_now_ns() - ow->dead_since > RMQ_DEAD_GRACE_NS) {
		for (i = 0; i < ow->nops; i++)
			fi_cancel(&rmq_peer_ep(ow->s, ow->p)->fid,
			          &ow->ops[i].op.fctx);
		ow->dead_since = rmq_now_ns();
	}
	return 0;
}

void
rmq_rndv_wait_ops(struct rmq_socket *s, struct rmq_peer *p,
                  struct rmq_read *rd, struct rmq_read_op *ops, size_t nops)
{
	struct ops_wait   ow = {s, p, rd, ops, nops, 0};
	struct rmq_waiter w;

	rmq_waiter_init(&w, -1);
	s->reactor.orphan = &rd->orphan;
	(void) rmq_wait_until(&s->reactor, &w, 0, ops_done, &ow);
	s->reactor.orphan = NULL;
}

/*
 * A row that moves the whole message (a tagged receive, a granted buffer)
 * into a buffer shorter than it: a bounce buffer, and the first n bytes.
 */
static int
whole(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rxent *e,
      void *dst, size_t n, rmq_rndv_move_fn move, bool *told)
{
	void *tmp = n < e->len ? malloc(e->len) : dst;
	int   rc;

	*told = false;
	if (tmp == NULL)
		return -RMQ_ENOMEM;
	rc = move(s, p, &e->rts, tmp, told);
	if (tmp != dst) {
		if (rc == 0)
			rmq_copy(dst, tmp, n);
		free(tmp);
	}
	return rc;
}

int
rmq_rndv_fetch(struct rmq_socket *s, struct rmq_rxent *e, void *dst, size_t n,
               rmq_rndv_move_fn move, bool whole_msg)
{
	struct rmq_peer *p        = e->peer;
	bool             need_fin = true, told = false;
	int              rc       = 0;

	if (p->state == RMQ_PEER_DEAD) {
		rc       = -RMQ_ECONNRESET;
		need_fin = false;
	} else if (move == NULL) {
		rc = 0; /* nothing to move: the FIN says so */
	} else if (whole_msg) {
		rc       = whole(s, p, e, dst, n, move, &told);
		need_fin = !told;
	} else {
		struct rmq_rts part = e->rts;

		part.len = n; /* only what fits */
		rc       = move(s, p, &part, dst, &told);
		need_fin = !told;
	}
	if (need_fin && p->state != RMQ_PEER_DEAD)
		(void) rmq_tx_ctl(s, p, RMQ_MT_FIN, e->rts.cookie,
		                  rc < 0 ? (uint32_t) -rc : 0);
	return rc;
}

void
rmq_rndv_cancel_rx(struct rmq_socket *s, struct rmq_rxent *e, int err)
{
	if (e->heap == NULL && e->pull_status == 0 &&
	    e->peer->state != RMQ_PEER_DEAD)
		(void) rmq_tx_ctl(s, e->peer, RMQ_MT_FIN, e->rts.cookie,
		                  (uint32_t) err);
}

/* ---- the socket's and the peer's life ---- */

bool
rmq_rndv_peer_busy(struct rmq_socket *s, const struct rmq_peer *p)
{
	const struct rmq_rndv_tx *r;

	for (r = s->ps->rndv.list; r != NULL; r = r->next)
		if (r->peer == p && !r->done)
			return true;
	return false;
}

/* Rendezvous sends it will never read: revoke and fail them. */
void
rmq_rndv_peer_gone(struct rmq_socket *s, struct rmq_peer *p)
{
	struct rmq_rndv_tx *r, *next;

	for (r = s->ps->rndv.list; r != NULL; r = next) {
		next = r->next;
		if (r->peer == p && !r->done)
			rmq_rndv_complete(s, r, -RMQ_ECONNRESET);
	}
}

int
rmq_rndv_sock_init(struct rmq_socket *s)
{
	/* Once for the family: the same index for every row that asks. */
	s->ps->rndv.hook = rmq_reactor_after(&s->reactor, rndv_after);
	return s->ps->rndv.hook < 0 ? s->ps->rndv.hook : 0;
}

void
rmq_rndv_sock_close(struct rmq_socket *s)
{
	struct rmq_rndv_tx *r, *next;

	for (r = s->ps->rndv.list; r != NULL; r = next) {
		next      = r->next;
		r->waited = false;
		rmq_rndv_complete(s, r, -RMQ_ECLOSED);
	}
}

/* After the endpoint closed: what the provider held is ours again. */
void
rmq_rndv_sock_fini(struct rmq_socket *s)
{
	struct rmq_rndv_tx *r;

	while ((r = s->ps->rndv.list) != NULL) {
		s->ps->rndv.list = r->next;
		if (r->mr != NULL)
			fi_close(&r->mr->fid);
		free(r->owned);
		free(r->wops);
		rmq_msg_free(r->msg);
		free(r);
	}
}
