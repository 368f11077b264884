/*
 * rndv_write: the RTS says "write" (RMQ_RTS_F_WRITE): the receiver
 * registers its buffer FI_REMOTE_WRITE and answers GRANT {length, address,
 * key, grant id}; the sender posts fi_write chunks (at most rma_chunk
 * each; the rest on later progress passes after -FI_EAGAIN), the last an
 * fi_writedata whose immediate (10 | grant id) tells the receiver it is
 * all there.  Where writes are not ordered, the last waits for the
 * others.  ABORT tells the receiver when a write fails.  For providers
 * whose read is emulated or missing.
 */
#include <stdio.h>
#include <stdlib.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>

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

/* ---- sender ---- */

static void write_post(struct rmq_socket *s, struct rmq_rndv_tx *r);

/* One of our chunks completed. */
static void
write_done(struct rmq_op *op, const struct rmq_cqe *e, void *owner)
{
	struct rmq_socket  *s  = owner;
	struct rmq_write_op *wo = rmq_container_of(op, struct rmq_write_op, op);
	struct rmq_rndv_tx *r  = wo->r;

	r->wpending--;
	if (e->err != 0 && r->wstatus == 0)
		r->wstatus = e->err;
	if (r->wpending > 0)
		return;
	if (r->wstatus != 0 && !r->posted) {
		/* Stop posting the rest. */
		r->posted = true;
		s->ps->rndv.cts_pending--;
		if (r->peer->state == RMQ_PEER_LIVE)
			(void) rmq_tx_ctl(s, r->peer, RMQ_MT_ABORT, r->grant_id,
			                  (uint32_t) EIO);
	}
	if (r->posted)
		rmq_rndv_posted_done(s, r, r->wstatus);
}

static void
write_cancel(struct rmq_socket *s, struct rmq_rndv_tx *r)
{
	size_t i;

	for (i = 0; i < r->wnext && r->wops != NULL; i++)
		(void) fi_cancel(&rmq_peer_ep(s, r->peer)->fid,
		                 &r->wops[i].op.fctx);
}

/*
 * Post the chunks into the granted buffer; the last one is an
 * fi_writedata whose immediate tells the receiver it is all there.  Where
 * writes are not ordered, the last waits until the others completed.
 * -FI_EAGAIN: the rest on the next progress pass, so the sender keeps
 * progressing meanwhile.
 */
static void
write_post(struct rmq_socket *s, struct rmq_rndv_tx *r)
{
	size_t  chunk = s->dom->caps.rma_chunk, off, n, i;
	bool    last;
	ssize_t rc = 0;

	if (r->wops == NULL) {
		r->nw   = r->len == 0 ? 1 : r->len / chunk + (r->len % chunk != 0);
		r->wops = calloc(r->nw, sizeof(*r->wops));
		if (r->wops == NULL) {
			rc = -RMQ_ENOMEM;
			goto fail;
		}
		for (i = 0; i < r->nw; i++) {
			rmq_op_init(&r->wops[i].op, write_done, 0);
			r->wops[i].r = r;
		}
	}
	rc = rmq_strict_desc(s, r->desc, "fi_write");
	if (rc != 0)
		goto fail;
	while (r->wnext < r->nw) {
		i    = r->wnext;
		off  = i * chunk;
		n    = r->len - off < chunk ? r->len - off : chunk;
		last = i == r->nw - 1;
		if (last && !s->dom->caps.ordered && r->wpending > 0)
			return; /* after the others land */
		if (last)
			rc = fi_writedata(rmq_peer_ep(s, r->peer),
			                  (const uint8_t *) r->src + off,
			                  n, r->desc,
			                  RMQ_IMM_WRITE_MAKE(r->grant_id),
			                  r->peer->fiaddr, r->raddr + off, r->rkey,
			                  &r->wops[i].op.fctx);
		else
			rc = fi_write(rmq_peer_ep(s, r->peer),
			              (const uint8_t *) r->src + off, n,
			              r->desc, r->peer->fiaddr, r->raddr + off,
			              r->rkey, &r->wops[i].op.fctx);
		if (rc == -FI_EAGAIN) {
			s->stats.eagain++;
			return;
		}
		if (rc != 0) {
			rmq_log(RMQ_LOG_ERROR, "fi_write to %s: %s",
			        r->peer->name, fi_strerror((int) -rc));
			goto fail;
		}
		r->wnext++;
		r->wpending++;
		r->tsend_out = true;
	}
	r->posted = true;
	s->ps->rndv.cts_pending--;
	return;
fail:
	r->posted = true;
	s->ps->rndv.cts_pending--;
	if (r->wstatus == 0)
		r->wstatus = (int) rc;
	/* Tell the receiver, which waits for our last write. */
	(void) rmq_tx_ctl(s, r->peer, RMQ_MT_ABORT, r->grant_id,
	                  (uint32_t) RMQ_EPROTO);
	if (r->wpending == 0) {
		r->tsend_out = false;
		rmq_rndv_complete(s, r, r->wstatus);
	}
}

static int
write_send(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_out *o,
           uint32_t msgid, int flags, struct rmq_waiter *w)
{
	/* We write from it: a descriptor where FI_MR_LOCAL says. */
	static const struct rmq_rndv_how how = {
		.path      = RMQ_PATH_RNDV_WRITE,
		.rts_flags = RMQ_RTS_F_WRITE,
		.access    = FI_WRITE,
		.post      = write_post,
		.cancel    = write_cancel,
	};

	return rmq_rndv_send(s, p, w, o, msgid, flags, &how);
}

/* GRANT: the receiver granted its buffer; post the writes. */
static void
grant_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rx *rx)
{
	struct rmq_rndv_tx *r;
	struct rmq_rts      g;

	r = rmq_rndv_find(s, p, rx->h->msgid, RMQ_PATH_RNDV_WRITE);
	if (r == NULL) {
		rmq_log(RMQ_LOG_DEBUG, "GRANT for unknown cookie %u",
		        rx->h->msgid);
		return;
	}
	if (rmq_rts_decode(&g, rx->ext) != 0 || g.len != r->len || g.flags != 0) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "bad GRANT from %s", p->name);
		/* It waits for our writes: tell it there will be none. */
		(void) rmq_tx_ctl(s, p, RMQ_MT_ABORT, g.cookie, EPROTO);
		rmq_rndv_complete(s, r, -RMQ_EPROTO);
		return;
	}
	r->raddr    = g.raddr;
	r->rkey     = g.rkey;
	r->grant_id = g.cookie;
	rmq_rndv_due(s, r); /* posted after this CQ pass */
}

/* ---- receiver ---- */

/* ABORT: the sender could not write into our grant. */
static void
abort_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_hdr *h)
{
	struct rmq_grant *g;

	for (g = s->ps->rndv.grants; g != NULL; g = g->next)
		if (g->id == h->msgid && g->peer == p && !g->done) {
			g->done   = true;
			g->status = h->len > 0 && h->len < 4096 ? -(int) h->len
			                                       : -RMQ_EPROTO;
			return;
		}
}

static void
write_on_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rx *rx)
{
	if ((rx->h->type & RMQ_MT_MASK) == RMQ_MT_GRANT) {
		p->recvd++;
		grant_rx(s, p, rx);
	} else {
		abort_rx(s, p, rx->h);
	}
}

/* The immediate of the sender's last write: our grant is filled. */
static void
write_imm(struct rmq_socket *s, uint32_t imm)
{
	uint32_t          id = RMQ_IMM_WRITE_ID(imm);
	struct rmq_grant *g;

	for (g = s->ps->rndv.grants; g != NULL; g = g->next)
		if (g->id == id && !g->done)
			break;
	if (g == NULL) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "write for unknown grant %u dropped", id);
		return;
	}
	g->done = true;
}

struct grant_wait {
	struct rmq_grant *g;
	struct rmq_peer  *p;
};

static int
grant_filled(void *arg)
{
	struct grant_wait *gw = arg;

	if (gw->g->done)
		return 1;
	if (gw->p->state == RMQ_PEER_DEAD) {
		gw->g->status = -RMQ_ECONNRESET;
		return 1;
	}
	return 0;
}

/*
 * Register dst for remote writes, GRANT it to the sender, and wait for the
 * immediate of its last write.  *told: the sender was told (else it waits
 * for a FIN).
 */
static int
grant_move(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rts *rts,
           void *dst, bool *told)
{
	uint8_t           b[RMQ_RTS_SIZE];
	struct rmq_grant  g = {0}, **pp;
	struct grant_wait gw = {&g, p};
	struct rmq_hdr    h;
	struct rmq_rts    ext = {0};
	struct rmq_waiter w;
	struct fid_mr    *mr = NULL;
	uint64_t          key = 0;
	uint8_t           one;
	int               rc;

	*told = false;
	/* A zero-byte grant still needs memory to name. */
	rc = rmq_mr_reg(s, rts->len ? dst : &one, rts->len ? rts->len : 1,
	                FI_REMOTE_WRITE, &mr, NULL, &key);
	if (rc != 0)
		return rc;
	do
		g.id = ++s->ps->rndv.next_grant & 0x3fffffffu;
	while (g.id == 0);
	g.peer         = p;
	g.next         = s->ps->rndv.grants;
	s->ps->rndv.grants = &g;

	ext.len    = rts->len;
	ext.raddr  = s->dom->caps.mr_virt_addr ? (uint64_t) (uintptr_t) dst : 0;
	ext.rkey   = key;
	ext.cookie = g.id;
	rmq_hdr_fill(&h, p, RMQ_MT_GRANT, rts->cookie, 0);
	rmq_hdr_encode(b, &h);
	rmq_rts_encode(b + RMQ_HDR_SIZE, &ext);
	rmq_waiter_init(&w, 1000);
	rc = rmq_tx_small(s, p, &w, b, sizeof(b));
	if (rc != 0) {
		p->owed += h.credits;
		goto out;
	}
	p->sent++; /* like CTS: counted in BYE */
	*told = true;
	rmq_waiter_init(&w, -1);
	(void) rmq_wait_until(&s->reactor, &w, 0, grant_filled, &gw);
	rc = g.status;
	if (rc == 0)
		RMQ_MEM_WRITTEN(dst, rts->len);
out:
	for (pp = &s->ps->rndv.grants; *pp != NULL; pp = &(*pp)->next)
		if (*pp == &g) {
			*pp = g.next;
			break;
		}
	fi_close(&mr->fid); /* revokes the peer's access */
	return rc;
}

static int
write_fetch(struct rmq_socket *s, struct rmq_rxent *e, void *dst, size_t n)
{
	/*
	 * Nothing to write: the FIN says so.  (shm 1.17 never reports the
	 * immediate of a zero-byte writedata at the target.)
	 */
	if (e->len == 0)
		return rmq_rndv_fetch(s, e, dst, n, NULL, false);
	return rmq_rndv_fetch(s, e, dst, n, grant_move, true);
}

const struct rmq_path_ops rmq_path_rndv_write = {
	.rank       = 1, /* writes where reads are missing */
	.rts_flag   = RMQ_RTS_F_WRITE,
	.usable     = rmq_caps_writedata,
	.rx_types   = (1u << RMQ_MT_GRANT) | (1u << RMQ_MT_ABORT),
	.imm_kind   = RMQ_IMM_WRITE,
	.send       = write_send,
	.on_rx      = write_on_rx,
	.on_imm     = write_imm,
	.fetch      = write_fetch,
	.cancel     = rmq_rndv_cancel_rx,
	.peer_gone  = rmq_rndv_peer_gone,
	.peer_busy  = rmq_rndv_peer_busy,
	.sock_init  = rmq_rndv_sock_init,
	.sock_close = rmq_rndv_sock_close,
	.sock_fini  = rmq_rndv_sock_fini,
};
