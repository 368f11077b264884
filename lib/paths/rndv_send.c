/*
 * rndv_send: the RTS says "send" (RMQ_RTS_F_SEND): the receiver posts a
 * tagged receive for the whole payload into its buffer and answers CTS;
 * the sender posts one fi_tsend (tag = conn << 32 | cookie), so the
 * provider's own bulk protocol moves it (CMA/SAR on shm, rxm's rendezvous
 * on tcp); no FIN unless it fails.
 */
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include "caps.h"
#include "conn/peer.h"
#include "ctx.h"
#include "ep.h"
#include "paths/path.h"
#include "paths/rndv.h"
#include "paths/tx.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

/* After the CTS: the payload, one fi_tsend. */
static void
tsend_post(struct rmq_socket *s, struct rmq_rndv_tx *r)
{
	uint64_t tag = ((uint64_t) r->peer->rid << 32) | r->cookie;
	ssize_t  rc;

	rc = rmq_strict_desc(s, r->desc, "fi_tsend");
	if (rc == 0)
		rc = fi_tsend(rmq_peer_ep(s, r->peer), r->src, r->len, r->desc, r->peer->fiaddr,
		              tag, &r->op.fctx);
	if (rc == -FI_EAGAIN) {
		s->stats.eagain++;
		return; /* again after the next CQ pass */
	}
	s->ps->rndv.cts_pending--;
	r->posted = true;
	if (rc == 0) {
		r->tsend_out = true;
	} else {
		rmq_log(RMQ_LOG_ERROR, "fi_tsend to %s: %s", r->peer->name,
		        fi_strerror((int) -rc));
		rmq_rndv_complete(s, r, (int) rc);
	}
}

static int
send_send(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_out *o,
          uint32_t msgid, int flags, struct rmq_waiter *w)
{
	/* Two-sided: only FI_MR_LOCAL providers need a descriptor. */
	static const struct rmq_rndv_how how = {
		.path      = RMQ_PATH_RNDV_SEND,
		.rts_flags = RMQ_RTS_F_SEND,
		.access    = FI_SEND,
		.post      = tsend_post,
	};

	return rmq_rndv_send(s, p, w, o, msgid, flags, &how);
}

/* CTS: the receiver posted its tagged receive. */
static void
cts_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rx *rx)
{
	struct rmq_rndv_tx *r;

	p->recvd++;
	r = rmq_rndv_find(s, p, rx->h->msgid, RMQ_PATH_RNDV_SEND);
	if (r == NULL) {
		rmq_log(RMQ_LOG_DEBUG, "CTS for unknown cookie %u",
		        rx->h->msgid);
		return;
	}
	rmq_rndv_due(s, r); /* posted after this CQ pass */
}

struct trecv_post {
	struct rmq_socket  *s;
	struct rmq_peer    *p;
	void               *dst;
	size_t              len;
	void               *desc;
	uint64_t            tag;
	struct rmq_read_op *op;
};

static ssize_t
trecv_once(void *arg)
{
	struct trecv_post *t = arg;

	return fi_trecv(rmq_peer_ep(t->s, t->p), t->dst, t->len, t->desc, FI_ADDR_UNSPEC,
	                t->tag, 0, &t->op->op.fctx);
}

/*
 * Post a tagged receive for exactly rts->len bytes into dst, tell the
 * sender CTS, wait for the payload.  *told: the sender was told (else it
 * still waits for a FIN).
 */
static int
trecv_move(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rts *rts,
           void *dst, bool *told)
{
	struct rmq_read    rd;
	struct rmq_read_op op;
	struct rmq_waiter  w;
	struct trecv_post  t = {s, p, dst, rts->len, NULL,
	                        ((uint64_t) p->id << 32) | rts->cookie, &op};
	int                rc = 0;

	*told = false;
	rmq_read_init(&rd);
	rmq_read_op_init(&op, &rd); /* completes like a read chunk */
	if (s->dom->caps.mr_local) {
		rc = rmq_mr_reg(s, dst, rts->len, FI_RECV, &rd.mr, &t.desc,
		                NULL);
		if (rc != 0)
			return rc;
	}
	rmq_waiter_init(&w, -1);
	rc = rmq_strict_desc(s, t.desc, "fi_trecv");
	if (rc == 0)
		rc = rmq_post_retry(s, p, &w, trecv_once, &t, "fi_trecv");
	if (rc != 0)
		goto out;
	rd.pending = 1;
	rc = rmq_tx_ctl(s, p, RMQ_MT_CTS, rts->cookie, 0);
	if (rc == 0)
		*told = true;
	else
		fi_cancel(&rmq_peer_ep(s, p)->fid, &op.op.fctx);
	rmq_rndv_wait_ops(s, p, &rd, &op, 1);
	if (rc == 0)
		rc = rd.status;
	if (rc == 0 && p->state == RMQ_PEER_DEAD && rd.status != 0)
		rc = -RMQ_ECONNRESET;
out:
	if (rd.mr != NULL)
		fi_close(&rd.mr->fid);
	return rc;
}

static int
send_fetch(struct rmq_socket *s, struct rmq_rxent *e, void *dst, size_t n)
{
	return rmq_rndv_fetch(s, e, dst, n, trecv_move, true);
}

static bool
send_usable(const struct rmq_caps *c, const char **why)
{
	return rmq_caps_need(c->tagged, "it has no FI_TAGGED", why);
}

const struct rmq_path_ops rmq_path_rndv_send = {
	.rank       = 2, /* the provider's own bulk protocol */
	.rts_flag   = RMQ_RTS_F_SEND,
	.usable     = send_usable,
	.rx_types   = 1u << RMQ_MT_CTS,
	.send       = send_send,
	.on_rx      = cts_rx,
	.fetch      = send_fetch,
	.cancel     = rmq_rndv_cancel_rx,
	.peer_gone  = rmq_rndv_peer_gone,
	.peer_busy  = rmq_rndv_peer_busy,
	.sock_init  = rmq_rndv_sock_init,
	.sock_close = rmq_rndv_sock_close,
	.sock_fini  = rmq_rndv_sock_fini,
};
