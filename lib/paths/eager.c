/*
 * inject and eager: two-sided sends into the receiver's multi-recv slabs.
 *
 *   inject  header + payload on the stack, fi_inject: no completion.  Where
 *           the provider carries 8 bytes of remote CQ data (not strict),
 *           a payload too big to sit beside its header goes
 *           fi_injectdata with the header as the data.
 *   eager   header + payload copied into a registered tx slot, fi_send.
 *
 * Both land as a DATA message in one of the receiver's slabs, where it
 * stays until the application takes it (copy-out, or in place as an
 * rmq_msg holding a reference on the slab).
 */
#include <stdio.h>
#include <string.h>

#include <rdma/fi_endpoint.h>

#include "conn/peer.h"
#include "ep.h"
#include "msg.h"
#include "paths/batch.h"
#include "paths/path.h"
#include "paths/tx.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

/* ---- inject ---- */

/* What one inject can carry here, header inline or as CQ data. */
static size_t
inject_cap(const struct rmq_socket *s)
{
	const struct rmq_caps *c   = &s->dom->caps;
	size_t                 cap = c->inject_size >= RMQ_HDR_SIZE
	                                 ? c->inject_size - RMQ_HDR_SIZE
	                                 : 0;

	if (cap > RMQ_INJECT_BUF - RMQ_HDR_SIZE)
		cap = RMQ_INJECT_BUF - RMQ_HDR_SIZE;
	if (c->inject_data)
		cap = c->inject_data_max; /* header as data */
	return cap;
}

static int
inject_can_carry(struct rmq_socket *s, const struct rmq_peer *p, size_t len,
                 char *why, size_t whylen)
{
	size_t cap = inject_cap(s);

	if (len <= cap && len <= p->eager_max)
		return 0;
	snprintf(why, whylen, "path inject carries at most %zu bytes here, "
	         "not %zu", cap < p->eager_max ? cap : p->eager_max, len);
	return -RMQ_EMSGSIZE;
}

/* Does a len-byte payload fit one inject beside its header? */
static bool
header_inline(const struct rmq_socket *s, size_t len)
{
	return RMQ_HDR_SIZE + len <= s->dom->caps.inject_size &&
	       RMQ_HDR_SIZE + len <= RMQ_INJECT_BUF;
}

/* Header (taking p's owed credits into h) and payload into ib. */
static size_t
inject_fill(uint8_t *ib, struct rmq_hdr *h, struct rmq_peer *p,
            uint32_t msgid, const void *buf, size_t len)
{
	rmq_hdr_fill(h, p, RMQ_MT_DATA | RMQ_MT_F_INJECT, msgid,
	             (uint32_t) len);
	rmq_hdr_encode(ib, h);
	if (len > 0)
		memcpy(ib + RMQ_HDR_SIZE, buf, len);
	return RMQ_HDR_SIZE + len;
}

static int
inject_send(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_out *o,
            uint32_t msgid, int flags, struct rmq_waiter *w)
{
	uint8_t        ib[RMQ_INJECT_BUF];
	struct rmq_hdr h;
	uint64_t       data;
	int            rc;

	RMQ_UNUSED(flags);
	if (!header_inline(s, o->len)) {
		/* Too big beside the header: the header rides as CQ data
		 * (caps.c), no credits piggy-backed. */
		data = ((uint64_t) p->rid << 32) | msgid;
		rc   = rmq_tx_inject(s, p, w, o->buf, o->len, &data);
	} else {
		rc = rmq_tx_inject(s, p, w, ib,
		                   inject_fill(ib, &h, p, msgid, o->buf, o->len),
		                   NULL);
		if (rc != 0)
			p->owed += h.credits;
	}
	if (rc != 0)
		return rc;
	rmq_tx_sent(s, p, RMQ_PATH_INJECT, o->len);
	rmq_msg_free(o->msg); /* copied out */
	return 0;
}

/*
 * The common provider send in one call: a message small enough to go by
 * fi_inject with its header inline, alone (no batch open to p, and none
 * to open: a reply, or coalescing off), to a live peer with credit.  The
 * same header and post as inject_send, without the path choice, the
 * waiter and the retry loop around them.  1: not taken, nothing sent --
 * the general path (xfer.c) decides, waits and retries.
 */
int
rmq_inject_send_now(struct rmq_socket *s, struct rmq_peer *p,
                    const void *buf, size_t len, uint32_t msgid)
{
	uint8_t        ib[RMQ_INJECT_BUF];
	struct rmq_hdr h;

	if (!s->paths.inject || len > s->paths.inject_max ||
	    s->paths.force >= 0 || !header_inline(s, len) ||
	    len > p->eager_max || (uint64_t) len > p->maxmsg ||
	    p->state != RMQ_PEER_LIVE || p->credits == 0 ||
	    s->inflight >= s->sndhwm || p->bat != NULL ||
	    (s->coalesce && p->can_batch && !p->heard))
		return 1;
	if (fi_inject(rmq_peer_ep(s, p), ib,
	              inject_fill(ib, &h, p, msgid, buf, len), p->fiaddr) != 0) {
		p->owed += h.credits; /* the general path tries again */
		return 1;
	}
	rmq_tx_sent(s, p, RMQ_PATH_INJECT, len);
	if (s->coalesce)
		rmq_batch_sent_alone(p, 0);
	return 0;
}

/* ---- eager ---- */

static int
eager_can_carry(struct rmq_socket *s, const struct rmq_peer *p, size_t len,
                char *why, size_t whylen)
{
	if (len <= p->eager_max && RMQ_HDR_SIZE + len <= s->tx->slot)
		return 0;
	snprintf(why, whylen, "path eager carries at most %zu bytes to %s "
	         "(thresholds.eager_max), not %zu", p->eager_max, p->name, len);
	return -RMQ_EMSGSIZE;
}

static int
eager_send(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_out *o,
           uint32_t msgid, int flags, struct rmq_waiter *w)
{
	struct rmq_hdr h;
	struct rmq_tx *tx;
	int            rc;

	rc = rmq_tx_get(s, p, w, &tx);
	if (rc != 0)
		return rc;
	rmq_hdr_fill(&h, p, RMQ_MT_DATA, msgid, (uint32_t) o->len);
	rmq_hdr_encode(tx->buf, &h);
	rc = rmq_tx_post_payload(s, p, w, tx, o->buf, o->len, flags, NULL);
	if (rc != 0) {
		p->owed += h.credits;
		return rc;
	}
	rmq_tx_sent(s, p, RMQ_PATH_EAGER, o->len);
	rmq_msg_free(o->msg); /* copied out, or sent */
	return 0;
}

/* DATA (inject or eager): the payload stays in its slab until taken.
 * BATCH: so do each of its messages. */
static void
data_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rx *rx)
{
	struct rmq_rxent *e;

	if ((rx->h->type & RMQ_MT_MASK) == RMQ_MT_BATCH) {
		rmq_batch_rx(s, p, rx);
		return;
	}
	e = rmq_rx_new(s, p, rx->h->msgid);
	if (e == NULL)
		return;
	e->path  = (rx->h->type & RMQ_MT_F_INJECT) ? RMQ_PATH_INJECT
	                                           : RMQ_PATH_EAGER;
	e->len   = rx->h->len;
	rmq_rx_keep(s, e, rx->sl, rx->payload);
	(void) rmq_rx_accept(s, p, e);
}

const struct rmq_path_ops rmq_path_inject = {
	.id        = RMQ_PATH_INJECT,
	.name      = "inject",
	.can_carry = inject_can_carry,
	.send      = inject_send,
};

/* Every peer may coalesce to us; we to those that say they take it. */
static void
batch_hello_out(struct rmq_socket *s, struct rmq_peer *p, struct rmq_hello *h)
{
	RMQ_UNUSED(s);
	RMQ_UNUSED(p);
	h->features |= RMQ_FEAT_BATCH;
}

static int
batch_hello_in(struct rmq_socket *s, struct rmq_peer *p,
               const struct rmq_hello *h, char *why, size_t whylen)
{
	RMQ_UNUSED(s);
	RMQ_UNUSED(why);
	RMQ_UNUSED(whylen);
	p->can_batch = (h->features & RMQ_FEAT_BATCH) != 0;
	return 0;
}

const struct rmq_path_ops rmq_path_eager = {
	.id        = RMQ_PATH_EAGER,
	.name      = "eager",
	.rx_types  = 1u << RMQ_MT_DATA | 1u << RMQ_MT_BATCH,
	.can_carry = eager_can_carry,
	.send      = eager_send,
	.on_rx     = data_rx,
	.peer_gone = rmq_batch_drop,
	.peer_fini = rmq_batch_drop,
	.hello_out = batch_hello_out,
	.hello_in  = batch_hello_in,
	.sock_init = rmq_batch_sock_init,
};
