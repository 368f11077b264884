/*
 * Choosing, dispatching and delivering (xfer.h).
 *
 * Sending: the peer's link (link_ops.h) tries its short way first, else
 * names the row for the message's size from its table; credits from the
 * peer and the socket's bound on sends in flight are waited for here,
 * then the row sends.  Receiving: each fabric message goes to the row that owns its
 * type (rx_types), each remote CQ data to the row of its kind; delivery
 * copies a queued message out, or has its row fetch it.
 */
#include <stdlib.h>
#include <string.h>

#include "conn/peer.h"
#include "ctx.h"
#include "msg.h"
#include "link_ops.h"
#include "paths/batch.h"
#include "paths/path.h"
#include "paths/tx.h"
#include "progress.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"
#include "xfer.h"

void
rmq_xfer_init(struct rmq_socket *s)
{
	const struct rmq_path_ops *row;
	int                        i, t;

	memset(s->rx_owner, -1, sizeof(s->rx_owner));
	memset(s->imm_owner, -1, sizeof(s->imm_owner));
	for (i = 0; i < RMQ_PATHS; i++) {
		row = s->path_ops[i];
		for (t = 0; t < RMQ_MT_SLOTS; t++)
			if (row->rx_types & (1u << t))
				s->rx_owner[t] = (int8_t) i;
		if (row->imm_kind != 0 && row->imm_kind < 4)
			s->imm_owner[row->imm_kind] = (int8_t) i;
	}
}

/* ---- sending ---- */

struct credit_wait {
	struct rmq_socket *s;
	struct rmq_peer   *p;
};

/* Credits from the peer, and our own bound on sends in flight. */
static int
may_send(void *arg)
{
	struct credit_wait *c = arg;

	if (c->p->credits > 0 && c->s->inflight < c->s->sndhwm)
		return 1;
	return c->p->state == RMQ_PEER_DEAD ? -RMQ_ECONNRESET : 0;
}

static int
xfer_send(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_out *o,
          uint32_t msgid, int flags)
{
	struct rmq_out     out  = *o;
	struct rmq_waiter  w;
	struct credit_wait c    = {s, p};
	bool               cont = (flags & RMQ_XFER_F_CONT) != 0;
	int64_t            now  = 0;
	bool               batch;
	int                path, rc;

	if (o->msg != NULL) {
		out.buf = rmq_msg_data(o->msg);
		out.len = rmq_msg_size(o->msg);
	}
	/* Too large for the peer: refused, unless a message has begun (its
	 * receiver drops the whole of it, counted: rmq_rx_accept). */
	if ((uint64_t) out.len > p->maxmsg && !cont) {
		rmq_log(RMQ_LOG_INFO,
		        "%zu-byte message is larger than %s accepts (%llu)",
		        out.len, p->name, (unsigned long long) p->maxmsg);
		return -RMQ_EMSGSIZE;
	}
	path = p->link == &rmq_link_fabric ? rmq_fabric_choose(s, p, out.len)
	                                   : p->link->choose(s, p, out.len);
	if (path < 0)
		return path;
	/* A frame after its message's first waits as long as it must, and
	 * takes no credit (RMQ_XFER_F_CONT): it has none to wait for. */
	if (cont)
		flags &= ~RMQ_DONTWAIT;
	rmq_waiter_init(&w, cont                     ? -1
	                    : (flags & RMQ_DONTWAIT) ? 0
	                                             : s->sndtimeo);
	batch = rmq_batch_takes(s, p, path, out.len, &now);
	if (rmq_batch_open(p) && (!batch || (!cont && may_send(&c) != 1))) {
		/* Order: what is queued goes first; and the credits we
		 * would wait for come back only once it has arrived. */
		rc = rmq_batch_flush(s, p, &w);
		if (rc != 0)
			return rc;
	}
	if (!cont && may_send(&c) != 1) {
		if (rmq_batch_held(p)) /* credits come back for what it sees */
			p->link->flush(s, p);
		rc = rmq_wait_until(&s->reactor, &w, RMQ_WAIT_IDLE, may_send,
		                    &c);
		if (rc != 0)
			return rc;
	}
	if (!rmq_peer_usable(p))
		return -RMQ_ECONNRESET;
	if (batch) {
		rc = rmq_batch_add(s, p, path, &out, msgid, now, &w);
		if (rc <= 0)
			goto out; /* 1: no room to coalesce, it goes alone */
	}
	rc = s->path_ops[path]->send(s, p, &out, msgid, flags, &w);
	if (rc == 0 && rmq_batch_window(s) != 0 &&
	    !(s->path_ops[path]->flags & RMQ_ROW_F_OWN_HOLD))
		rmq_batch_sent_alone(p, now);
out:
	if (rc == 0 && cont)
		p->credits++; /* the row counted it as a message */
	return rc;
}

int
rmq_xfer_send(struct rmq_socket *s, struct rmq_peer *p,
              const struct rmq_out *o, uint32_t msgid, int flags)
{
	int rc;

	if (flags & RMQ_SNDMORE)
		msgid |= RMQ_MSGID_MORE; /* the frames after it: wire.h */
	/* The common case first: a small copy that can go at once. */
	if (o->msg == NULL) {
		rc = p->link == &rmq_link_fabric
		         ? rmq_fabric_send_now(s, p, o->buf, o->len, msgid)
		         : p->link->send_now(s, p, o->buf, o->len, msgid);
		if (rc == 0 && (flags & RMQ_XFER_F_CONT))
			p->credits++; /* a message's later frame: none taken */
		if (rc <= 0) {
			/* A stream that always goes this way never waits, so
			 * it would seldom look at its sources: a PUSH fed by
			 * live pullers went 545,901 sends without noticing
			 * that another had been SIGKILLed.  Every 256th looks,
			 * if a millisecond passed (p is not used after). */
			if ((++s->nshort & 255) == 0)
				(void) rmq_reactor_poll_due(&s->reactor);
			return rc;
		}
	}
	rmq_peer_hold(p);
	rc = xfer_send(s, p, o, msgid, flags);
	rmq_peer_release(s, p);
	return rc;
}

int
rmq_xfer_warm(struct rmq_socket *s, struct rmq_peer *p, int timeout_ms)
{
	uint8_t           b[RMQ_HDR_SIZE];
	struct rmq_hdr    h;
	struct rmq_waiter w;
	int               rc;

	if (!rmq_peer_usable(p))
		return -RMQ_ECONNRESET;
	rmq_hdr_fill(&h, p, RMQ_MT_CREDIT, 0, 0);
	rmq_hdr_encode(b, &h);
	rmq_waiter_init(&w, timeout_ms);
	rmq_peer_hold(p);
	rc = rmq_tx_small(s, p, &w, b, sizeof(b));
	if (rc != 0)
		p->owed += h.credits;
	rmq_peer_release(s, p);
	return rc;
}

void
rmq_xfer_on_live(struct rmq_socket *s, struct rmq_peer *p)
{
	(void) rmq_xfer_warm(s, p, 0);
}

/* ---- receiving ---- */

void
rmq_xfer_rx(struct rmq_socket *s, struct rmq_slab *sl, uint8_t *buf,
            size_t len, const uint64_t *data)
{
	struct rmq_hdr   h;
	struct rmq_rx    rx = {.h = &h, .ext = buf + RMQ_HDR_SIZE,
	                       .payload = buf + RMQ_HDR_SIZE, .sl = sl};
	struct rmq_peer *p;
	int              rc = 0, owner;

	if (data != NULL) {
		/* Header in the CQ data (inject beyond inline): rebuild it. */
		memset(&h, 0, sizeof(h));
		h.version  = RMQ_WIRE_VERSION;
		h.type     = RMQ_MT_DATA | RMQ_MT_F_INJECT;
		h.conn     = (uint32_t) (*data >> 32);
		h.msgid    = (uint32_t) *data;
		h.len      = (uint32_t) len;
		rx.payload = buf;
		if (len > s->dom->caps.inject_size || len > UINT32_MAX)
			rc = -RMQ_EPROTO; /* no inject is that big */
	} else {
		rc = rmq_hdr_decode(&h, buf, len);
	}
	if (rc != 0) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "dropped a malformed %zu-byte message: %s",
		        len, rmq_strerror(rc));
		return;
	}
	p = rmq_peer_lookup(s, h.conn);
	if (p == NULL || p->state == RMQ_PEER_DEAD) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_DEBUG, "message from unknown peer %#x dropped",
		        h.conn);
		return;
	}
	p->credits += h.credits;
	owner = s->rx_owner[(h.type & RMQ_MT_MASK) % RMQ_MT_SLOTS];
	if (owner >= 0) /* CREDIT: the credits were all it carried */
		s->path_ops[owner]->on_rx(s, p, &rx);
}

void
rmq_xfer_imm(void *owner, uint64_t data)
{
	struct rmq_socket *s = owner;
	int                row;

	if (data >> 32 != 0) {
		/* Strict or not: we never send more than 4 bytes. */
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "remote CQ data wider than 32 bits");
		return;
	}
	row = s->imm_owner[RMQ_IMM_KIND(data)];
	if (row < 0) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "unknown remote CQ data %#llx",
		        (unsigned long long) data);
		return;
	}
	s->path_ops[row]->on_imm(s, (uint32_t) data);
}

/* ---- delivering ---- */

bool
rmq_xfer_to_fetch(const struct rmq_socket *s, const struct rmq_rxent *e)
{
	return e->rndv && e->heap == NULL && s->path_ops[e->path]->fetch != NULL;
}

ssize_t
rmq_xfer_deliver(struct rmq_socket *s, struct rmq_rxent *e, void *buf,
                 size_t cap, rmq_msg **msgp)
{
	const struct rmq_path_ops *row = s->path_ops[e->path];
	struct rmq_peer           *p   = e->peer;
	size_t                     len = e->len, n = len < cap ? len : cap;
	rmq_msg                   *m   = NULL;
	ssize_t                    rc  = (ssize_t) len;
	int                        st;

	rmq_peer_hold(p);
	if (e->pull_status != 0) {
		rc = e->pull_status; /* a background pull failed: lost */
	} else if (rmq_xfer_to_fetch(s, e)) {
		if (msgp != NULL) {
			m = rmq_msg_new_heap(len);
			if (m == NULL) {
				rc = -RMQ_ENOMEM;
				if (row->cancel != NULL)
					row->cancel(s, e, ENOMEM);
				goto done;
			}
			buf = rmq_msg_data(m);
			n   = len;
		}
		st = row->fetch(s, e, buf, n);
		if (st != 0) {
			rc = st;
			rmq_msg_free(m);
			m = NULL;
		}
	} else if (msgp != NULL) {
		if (e->heap != NULL) {
			m = rmq_msg_new_heap(0);
			if (m != NULL) {
				m->base = m->data = e->heap;
				m->size = len;
				e->heap = NULL;
			}
		} else if (e->slab == NULL) {
			/* ring: its slots go back to the sender now, so copy */
			m = rmq_msg_new_heap(len);
			if (m != NULL && len > 0)
				rmq_copy(rmq_msg_data(m), e->data, len);
		} else {
			m = rmq_msg_new_slab(e->slab, e->data, len);
			if (m != NULL)
				e->slab = NULL; /* the reference moves */
		}
		if (m == NULL)
			rc = -RMQ_ENOMEM;
	} else if (n > 0) {
		rmq_copy(buf, e->heap != NULL ? e->heap : e->data, n);
	}
done:
	if (rc >= 0) {
		if (!e->made) {
			s->pstats[e->path].recv_msgs++;
			s->pstats[e->path].recv_bytes += len;
		}
		if (msgp != NULL)
			*msgp = m;
	} else {
		s->stats.dropped++;
	}
	if (!e->nocredit)
		rmq_tx_consumed(s, p);
	rmq_rxent_free(s, e);
	rmq_peer_release(s, p);
	return rc;
}

void
rmq_xfer_discard(struct rmq_socket *s, struct rmq_rxent *e)
{
	const struct rmq_path_ops *row = s->path_ops[e->path];
	struct rmq_peer           *p   = e->peer;

	if (rmq_xfer_to_fetch(s, e) && row->cancel != NULL)
		row->cancel(s, e, ECANCELED);
	s->stats.dropped++;
	rmq_peer_hold(p);
	if (!e->nocredit)
		rmq_tx_consumed(s, p);
	rmq_rxent_free(s, e);
	rmq_peer_release(s, p);
}

void
rmq_xfer_pull_pending(void *owner)
{
	struct rmq_socket *s = owner;
	struct rmq_peer   *p;
	struct rmq_rxent  *e;
	int                i, rc;

	if (s->rx->fetch_more) {
		s->rx->fetch_more   = false; /* all are pulled below */
		s->reactor.idle_any = s->bl_n > 0;
	}
	if (s->rx->nqueued == 0)
		return; /* the usual case, on every idle round of a send */
	for (i = 0; i < s->peers->cap; i++) {
		p = rmq_peer_at(s, i);
		if (p == NULL || p->state == RMQ_PEER_DEAD)
			continue;
		for (e = p->q.head; e != NULL; e = e->next) {
			if (!rmq_xfer_to_fetch(s, e) || e->pulling ||
			    e->pull_status != 0)
				continue;
			e->heap = malloc(e->len ? e->len : 1);
			if (e->heap == NULL)
				goto again;
			e->pulling = true;
			rc = s->path_ops[e->path]->fetch(s, e, e->heap, e->len);
			e->pulling = false;
			if (rc != 0) {
				/* Delivered later as an error. */
				free(e->heap);
				e->heap        = NULL;
				e->pull_status = rc;
				goto again;
			}
		}
	}
	return;
again: /* the rest on a later round */
	s->rx->fetch_more   = true;
	s->reactor.idle_any = true;
}
