/*
 * eager: header + payload copied into a registered tx slot, fi_send, into
 * the receiver's multi-recv slabs, where it lands as a DATA message and
 * stays until the application takes it (copy-out, or in place as an
 * rmq_msg holding a reference on the slab).  inject's messages land the
 * same way, and this row receives both (inject.c).  Batches of coalesced
 * messages ride it too (BATCH, batch.c).
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

/* ---- eager ---- */

static int
eager_can_carry(struct rmq_socket *s, const struct rmq_peer *p, size_t len,
                char *why, size_t whylen)
{
	if (len <= p->eager_max && RMQ_HDR_SIZE + len <= s->ps->tx.slot)
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
		rmq_batch_rx(s, p, rx, RMQ_PATH_EAGER);
		return;
	}
	e = rmq_rx_new(s, p, rx->h->msgid);
	if (e == NULL)
		return;
	/* Sent by the row of the inject range (its flag), or by ours. */
	e->path  = (rx->h->type & RMQ_MT_F_INJECT)
	               ? s->paths.range_row[RMQ_RANGE_INJECT]
	               : RMQ_PATH_EAGER;
	e->len   = rx->h->len;
	rmq_rx_keep(s, e, rx->sl, rx->payload);
	(void) rmq_rx_accept(s, p, e);
}

/* What a batch into p's slabs (BATCH) may carry after its header. */
static size_t
eager_batch_cap(const struct rmq_socket *s, const struct rmq_peer *p)
{
	size_t cap = s->ps->tx.slot - RMQ_HDR_SIZE;

	return cap < p->eager_max ? cap : p->eager_max;
}

static int
eager_batch_post(struct rmq_socket *s, struct rmq_peer *p, struct rmq_tx *tx,
                 size_t n)
{
	int rc = rmq_strict_desc(s, tx->desc, "fi_send");

	if (rc != 0)
		return rc;
	return (int) fi_send(rmq_peer_ep(s, p), tx->buf, n, tx->desc,
	                     p->fiaddr, &tx->op.fctx);
}

const struct rmq_path_ops rmq_path_eager = {
	.flags     = RMQ_ROW_F_COALESCE | RMQ_ROW_F_STRETCH,
	.range     = RMQ_RANGE_EAGER,
	.batch_cap  = eager_batch_cap,
	.batch_post = eager_batch_post,
	.batch_mt   = RMQ_MT_BATCH,
	.rx_types  = 1u << RMQ_MT_DATA | 1u << RMQ_MT_BATCH,
	.can_carry = eager_can_carry,
	.send      = eager_send,
	.on_rx     = data_rx,
	.peer_gone = rmq_batch_drop,
	.peer_fini = rmq_batch_peer_fini,
	.hello_out = rmq_batch_hello_out,
	.hello_in  = rmq_batch_hello_in,
	.sock_init = rmq_batch_sock_init,
};
