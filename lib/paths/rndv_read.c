/*
 * rndv_read: the sender registers the payload FI_REMOTE_READ and sends an
 * RTS {length, address, key, cookie}; the receiver fi_read's it straight
 * into the buffer given to rmq_recv, in chunks of at most rma_chunk, then
 * sends FIN {cookie, status}; the sender deregisters on FIN (or on the
 * peer's death).  This row also receives the family's RTS and FIN
 * (rndv.c), whichever row the RTS names.
 */
#include <stdlib.h>

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

static int
read_send(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_out *o,
          uint32_t msgid, int flags, struct rmq_waiter *w)
{
	static const struct rmq_rndv_how how = {
		.path   = RMQ_PATH_RNDV_READ,
		.access = FI_REMOTE_READ,
		.remote = true,
	};

	return rmq_rndv_send(s, p, w, o, msgid, flags, &how);
}

struct chunk_post {
	struct rmq_socket  *s;
	struct rmq_peer    *p;
	void               *dst;
	size_t              len;
	void               *desc;
	uint64_t            raddr, rkey;
	struct rmq_read_op *op;
};

static ssize_t
chunk_once(void *arg)
{
	struct chunk_post *c = arg;

	return fi_read(rmq_peer_ep(c->s, c->p), c->dst, c->len, c->desc, c->p->fiaddr,
	               c->raddr, c->rkey, &c->op->op.fctx);
}

/* n = rts->len bytes into dst, in chunks of at most rma_chunk. */
int
rmq_rndv_read_move(struct rmq_socket *s, struct rmq_peer *p,
                   const struct rmq_rts *rts, void *dst, bool *told)
{
	struct rmq_read     rd;
	struct rmq_read_op *ops;
	struct rmq_waiter   w;
	struct chunk_post   c = {.s = s, .p = p, .rkey = rts->rkey};
	/* An RTS that names the sender's own address does so even where keys
	 * take offsets. */
	uint64_t            base =
            rmq_rts_own_va(rts) && !s->dom->caps.mr_virt_addr
	                ? 0
	                : rts->raddr;
	size_t              n = rts->len, chunk = s->dom->caps.rma_chunk;
	size_t              off, i;
	int                 rc = 0;

	*told = false;
	if (n == 0)
		return 0;
	rmq_read_init(&rd);
	rd.nchunks = n / chunk + (n % chunk != 0); /* chunk may be SIZE_MAX */
	ops        = calloc(rd.nchunks, sizeof(*ops));
	if (ops == NULL)
		return -RMQ_ENOMEM;
	if (s->dom->caps.mr_local) {
		rc = rmq_mr_reg(s, dst, n, FI_READ, &rd.mr, &c.desc, NULL);
		if (rc != 0)
			goto out;
	}
	rc = rmq_strict_desc(s, c.desc, "fi_read");
	if (rc != 0)
		goto out;
	rmq_waiter_init(&w, -1);
	s->reactor.orphan = &rd.orphan;
	for (i = 0, off = 0; i < rd.nchunks && !rd.orphaned;
	     i++, off += chunk) {
		rmq_read_op_init(&ops[i], &rd);
		c.dst   = (uint8_t *) dst + off;
		c.len   = n - off < chunk ? n - off : chunk;
		c.raddr = base + off;
		c.op    = &ops[i];
		rc      = rmq_post_retry(s, p, &w, chunk_once, &c, "fi_read");
		if (rc != 0)
			break;
		if (!rd.orphaned)
			rd.pending++;
	}
	if (rc != 0)
		rd.status = rc == -RMQ_EAGAIN ? -RMQ_ECONNRESET : rc;
	rmq_rndv_wait_ops(s, p, &rd, ops, rd.nchunks);
	rc = rd.status;
	if (rc == 0 && p->state == RMQ_PEER_DEAD)
		rc = -RMQ_ECONNRESET;
out:
	s->reactor.orphan = NULL;
	if (rd.mr != NULL)
		fi_close(&rd.mr->fid);
	free(ops);
	return rc;
}

static int
read_fetch(struct rmq_socket *s, struct rmq_rxent *e, void *dst, size_t n)
{
	return rmq_rndv_fetch(s, e, dst, n, rmq_rndv_read_move, false);
}

int
rmq_rndv_read_deliver(struct rmq_socket *s, struct rmq_peer *p, void *heap,
                      size_t len, bool more)
{
	struct rmq_rxent *e = rmq_rxent_new(s);

	if (e == NULL) {
		free(heap);
		if (p->q.cont)
			rmq_rx_abort(s, p); /* counts it */
		else
			s->stats.dropped++;
		p->q.cont = more; /* the rest of it goes too */
		p->q.skip = more;
		return -RMQ_ENOMEM;
	}
	e->peer     = p;
	e->more     = more;
	e->path     = RMQ_PATH_RNDV_READ; /* it came by fi_read */
	e->len      = len;
	e->heap     = heap;
	e->data     = heap;
	e->nocredit = true;
	return rmq_rx_accept(s, p, e); /* RMQ_MAXMSGSIZE as for any */
}

static bool
read_usable(const struct rmq_caps *c, const char **why)
{
	return rmq_caps_need(c->rma_read, "it has no FI_RMA read", why);
}

const struct rmq_path_ops rmq_path_rndv_read = {
	.flags      = RMQ_ROW_F_RTS_READ,
	.rank       = 0, /* one read into the destination: first choice */
	.usable     = read_usable,
	.rx_types   = (1u << RMQ_MT_RTS) | (1u << RMQ_MT_FIN),
	.send       = read_send,
	.on_rx      = rmq_rndv_on_rx,
	.fetch      = read_fetch,
	.cancel     = rmq_rndv_cancel_rx,
	.peer_gone  = rmq_rndv_peer_gone,
	.peer_busy  = rmq_rndv_peer_busy,
	.sock_init  = rmq_rndv_sock_init,
	.sock_close = rmq_rndv_sock_close,
	.sock_fini  = rmq_rndv_sock_fini,
};
