/*
 * What every path shares (tx.h): tx slots, posting with retry, control
 * messages and credits, and taking in a received message under our
 * RMQ_MAXMSGSIZE.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "conn/peer.h"
#include "ctx.h"
#include "ep.h"
#include "link_ops.h"
#include "paths/path.h"
#include "paths/tx.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

#define RMQ_NTX 32

/* ---- tx slots ---- */

/* A slot goes back on the free list; its owner holds one less. */
static void
tx_free(struct rmq_socket *s, struct rmq_tx *tx)
{
	if (tx->owner != NULL)
		tx->owner->ntx--;
	tx->owner     = NULL;
	tx->peer      = NULL;
	tx->landed    = NULL;
	tx->next_free = s->ps->tx.free;
	s->ps->tx.free   = tx;
}

/* A slot's send or write completed: the slot is free, the peer lets go. */
static void
tx_done(struct rmq_op *op, const struct rmq_cqe *e, void *owner)
{
	struct rmq_socket *s  = owner;
	struct rmq_tx     *tx = rmq_container_of(op, struct rmq_tx, op);
	struct rmq_peer   *p  = tx->peer;

	if (tx->landed != NULL)
		*tx->landed = 1; /* the caller's payload is its own again */
	tx_free(s, tx);
	s->inflight--;
	if (p == NULL)
		return;
	p->pending--;
	if (e->err != 0)
		rmq_peer_fail(s, p, e->err, "send failed");
	else
		rmq_peer_reap(s, p);
}

size_t
rmq_tx_slot_size(size_t min_multi, const struct rmq_path_table *t)
{
	size_t slot = min_multi;

	/* Ring messages are written from tx slots too. */
	if (t->ring_ok && slot < RMQ_HDR_SIZE + t->ring_cap)
		slot = RMQ_HDR_SIZE + t->ring_cap;
	if (slot < RMQ_RTS_SIZE)
		slot = RMQ_RTS_SIZE;
	return (slot + 63) & ~(size_t) 63;
}

/* Slots the pool may grow to, in blocks of RMQ_NTX: more only while
 * peers hold them all (most likely peers that stopped taking). */
#define RMQ_TX_MAX (RMQ_NTX * 8)

/* One more block of RMQ_NTX slots on the free list. */
static int
tx_grow(struct rmq_socket *s)
{
	struct rmq_txpool  *t = &s->ps->tx;
	struct rmq_txblock *b;
	size_t              len = t->slot * RMQ_NTX;
	int                 i, rc;

	if (t->n + RMQ_NTX > RMQ_TX_MAX)
		return -RMQ_ENOMEM;
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return -RMQ_ENOMEM;
	b->n   = RMQ_NTX;
	b->mem = rmq_numa_alloc(&s->ctx->numa, &s->dom->place, len, &b->numa);
	b->txs = calloc((size_t) b->n, sizeof(*b->txs));
	if (b->mem == NULL || b->txs == NULL) {
		rc = -RMQ_ENOMEM;
		goto fail;
	}
	if (s->dom->caps.mr_local) {
		rc = rmq_mr_reg(s, b->mem, len, FI_SEND, &b->mr, &b->desc,
		                NULL);
		if (rc != 0)
			goto fail;
	}
	for (i = 0; i < b->n; i++) {
		rmq_op_init(&b->txs[i].op, tx_done, 0);
		b->txs[i].buf  = b->mem + (size_t) i * t->slot;
		b->txs[i].desc = b->desc;
		tx_free(s, &b->txs[i]);
	}
	if (t->blocks == NULL)
		t->desc = b->desc;
	b->next   = t->blocks;
	t->blocks = b;
	t->n     += b->n;
	return 0;
fail:
	if (b->mem != NULL)
		rmq_numa_free(b->mem, &b->numa);
	free(b->txs);
	free(b);
	return rc;
}

int
rmq_tx_init(struct rmq_socket *s)
{
	s->ps->tx.slot = rmq_tx_slot_size(s->min_multi, &s->paths);
	return tx_grow(s);
}

size_t
rmq_tx_payload_max(const struct rmq_socket *s)
{
	return s->ps->tx.slot - RMQ_HDR_SIZE;
}

bool
rmq_tx_free_any(const struct rmq_socket *s)
{
	return s->ps->tx.free != NULL;
}

void
rmq_tx_fini(struct rmq_socket *s)
{
	struct rmq_txpool  *t = &s->ps->tx;
	struct rmq_txblock *b;

	while ((b = t->blocks) != NULL) {
		t->blocks = b->next;
		if (b->mr != NULL)
			fi_close(&b->mr->fid);
		rmq_numa_free(b->mem, &b->numa);
		free(b->txs);
		free(b);
	}
	t->desc = NULL;
	t->n    = 0;
	t->free = NULL;
}

struct tx_wait {
	struct rmq_socket *s;
	struct rmq_peer   *p;
};

/* A slot p may take, or a dead peer ends the wait. */
static int
tx_avail_or_dead(void *arg)
{
	struct tx_wait *t = arg;

	if (t->p->state == RMQ_PEER_DEAD)
		return -RMQ_ECONNRESET;
	return t->s->ps->tx.free != NULL && t->p->ntx < RMQ_TX_PEER_MAX;
}

int
rmq_tx_get(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
           struct rmq_tx **txp)
{
	struct tx_wait t = {s, p};
	int            rc;

	/* Every slot in flight while p may take more: others hold them
	 * (peers that stopped taking, likely), so the pool grows. */
	if (s->ps->tx.free == NULL && p->ntx < RMQ_TX_PEER_MAX)
		(void) tx_grow(s);
	if (s->ps->tx.free == NULL || p->ntx >= RMQ_TX_PEER_MAX) {
		rc = rmq_wait_until(&s->reactor, w, 0, tx_avail_or_dead, &t);
		if (rc != 0)
			return rc;
	}
	*txp          = s->ps->tx.free;
	s->ps->tx.free   = (*txp)->next_free;
	(*txp)->owner = p;
	p->ntx++;
	return 0;
}

void
rmq_tx_put(struct rmq_socket *s, struct rmq_tx *tx)
{
	tx_free(s, tx);
}

/* ---- posting ---- */

struct post_try {
	struct rmq_socket *s;
	struct rmq_peer   *p;
	ssize_t (*post)(void *arg);
	void              *arg;
	const char        *what;
};

/* The provider cannot reach the peer (sockets: a connect to a dead
 * process fails with -FI_ENOENT): for the caller, the peer is gone. */
static bool
unreachable(int rc)
{
	switch (rc) {
	case -FI_ENOENT:
	case -FI_ECONNREFUSED:
	case -FI_ECONNRESET:
	case -FI_ECONNABORTED:
	case -FI_ENOTCONN:
	case -FI_EHOSTUNREACH:
	case -FI_ENETUNREACH:
	case -EPIPE:
		return true;
	default:
		return false;
	}
}

/* One post: 1 done, 0 -FI_EAGAIN (counted), < 0 its error (logged). */
static int
post_once(struct post_try *t)
{
	ssize_t rc = t->post(t->arg);

	if (rc == -FI_EAGAIN) {
		t->s->stats.eagain++;
		return 0;
	}
	if (rc != 0) {
		rmq_log(RMQ_LOG_DEBUG, "%s to %s: %s", t->what, t->p->name,
		        fi_strerror((int) -rc));
		return unreachable((int) rc) ? -RMQ_ECONNRESET : (int) rc;
	}
	return 1;
}

/* The posts after the first: a peer that died meanwhile ends them. */
static int
post_again(void *arg)
{
	struct post_try *t = arg;

	if (t->p->state == RMQ_PEER_DEAD)
		return -RMQ_ECONNRESET;
	return post_once(t);
}

int
rmq_post_retry(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
               ssize_t (*post)(void *arg), void *arg, const char *what)
{
	struct post_try t = {s, p, post, arg, what};
	int             rc;

	/* The usual case: it goes at once. */
	rc = post_once(&t);
	if (rc > 0)
		return 0;
	if (rc < 0) {
		/* Look at the control channels before the caller hears it:
		 * a dead peer's EOF is there, and a caller that retries at
		 * once must not spin on the same dead peer. */
		(void) rmq_reactor_progress_timed(&s->reactor);
		return rc;
	}
	/* Both sides must progress (tcp;ofi_rxm's first send), or wait. */
	if (rmq_reactor_progress(&s->reactor) == 0 &&
	    rmq_reactor_idle(&s->reactor, w) != 0)
		return -RMQ_EAGAIN;
	return rmq_wait_until(&s->reactor, w, 0, post_again, &t);
}

/* After a post of tx to p (rc its result): in flight until its
 * completion, or free again. */
static int
tx_posted(struct rmq_socket *s, struct rmq_peer *p, struct rmq_tx *tx, int rc)
{
	if (rc != 0) {
		rmq_tx_put(s, tx);
		return rc;
	}
	tx->peer = p;
	p->pending++;
	s->inflight++;
	return 0;
}

struct tx_post {
	struct rmq_socket       *s;
	struct rmq_peer         *p;
	struct rmq_tx           *tx;
	size_t                   n;
	const struct rmq_tx_rma *rma;
};

static ssize_t
tx_post_once(void *arg)
{
	struct tx_post *t = arg;
	struct rmq_socket *s = t->s;

	if (t->rma == NULL)
		return fi_send(rmq_peer_ep(s, t->p), t->tx->buf, t->n, t->tx->desc, t->p->fiaddr,
		               &t->tx->op.fctx);
	return fi_writedata(rmq_peer_ep(s, t->p), t->tx->buf, t->n, t->tx->desc, t->rma->imm,
	                    t->p->fiaddr, t->rma->addr, t->rma->key,
	                    &t->tx->op.fctx);
}

int
rmq_tx_post(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
            struct rmq_tx *tx, size_t n, const struct rmq_tx_rma *rma)
{
	struct tx_post t = {s, p, tx, n, rma};
	const char    *what = rma != NULL ? "fi_writedata" : "fi_send";
	int            rc;

	if (p->link->put != NULL && rma == NULL) {
		/* A link that carries two-sided messages itself, in order
		 * with the rest (link_ops.h): the slot is free at once. */
		rc = p->link->put(s, p, w, tx->buf, n, NULL, 0);
		rmq_tx_put(s, tx);
		return rc;
	}

	rc = rmq_strict_desc(s, tx->desc, what);
	if (rc == 0)
		rc = rmq_post_retry(s, p, w, tx_post_once, &t, what);
	return tx_posted(s, p, tx, rc);
}

/*
 * May a send of len bytes to p go in place?  A provider whose row and
 * fi_info allow it (caps.in_place), a payload within thresholds.in_place
 * and RMQ_IN_PLACE_MAX, a caller that may wait (no RMQ_DONTWAIT), no other
 * slot of ours in flight to p (its ntx is 1: this message's, taken
 * already), and a message from p since our last one to it (a reply or a
 * request: the caller will wait for p anyway).  Then the provider
 * completes it without p's help (the kernel's socket buffers hold it),
 * while a stream keeps copying: waiting for each of its sends cost it a
 * third of its rate at 8-16 KiB on tcp.  Called once per eager or ring
 * message (it notes that one was sent).
 */
static bool
tx_in_place(const struct rmq_socket *s, struct rmq_peer *p, size_t len,
            int flags)
{
	bool answer = p->recvd != p->recvd_tx;

	p->recvd_tx = p->recvd;
	return answer && s->in_place_min >= 0 &&
	       len >= (uint64_t) s->in_place_min && len <= RMQ_IN_PLACE_MAX &&
	       s->dom->caps.in_place &&
	       !(flags & RMQ_DONTWAIT) && p->ntx == 1 && /* this one's slot */
	       p->link->put == NULL; /* the endpoint's sends */
}

struct tx_place {
	struct rmq_socket       *s;
	struct rmq_peer         *p;
	struct rmq_tx           *tx;
	struct iovec             iov[2];
	void                    *desc[2];
	const struct rmq_tx_rma *rma;
};

static ssize_t
tx_place_once(void *arg)
{
	struct tx_place  *t = arg;
	struct fi_rma_iov ri;
	struct fi_msg_rma mr;
	struct fi_msg     m;

	if (t->rma == NULL) {
		m = (struct fi_msg){.msg_iov = t->iov, .desc = t->desc,
		                    .iov_count = 2, .addr = t->p->fiaddr,
		                    .context = &t->tx->op.fctx};
		return fi_sendmsg(rmq_peer_ep(t->s, t->p), &m, FI_COMPLETION);
	}
	ri = (struct fi_rma_iov){.addr = t->rma->addr,
	                         .len  = t->iov[0].iov_len + t->iov[1].iov_len,
	                         .key  = t->rma->key};
	mr = (struct fi_msg_rma){.msg_iov = t->iov, .desc = t->desc,
	                         .iov_count = 2, .addr = t->p->fiaddr,
	                         .rma_iov = &ri, .rma_iov_count = 1,
	                         .context = &t->tx->op.fctx,
	                         .data = t->rma->imm};
	return fi_writemsg(rmq_peer_ep(t->s, t->p), &mr,
	                   FI_COMPLETION | FI_REMOTE_CQ_DATA);
}

static int
tx_landed(void *arg)
{
	return *(int *) arg;
}

/*
 * The header tx->buf[0..RMQ_HDR_SIZE) and the caller's payload, not
 * copied, in one fi_sendmsg or fi_writemsg of two iovecs; returns once
 * the provider completed it, so that the caller may reuse its buffer at
 * once (a send that failed there fails its peer, as a copied one's
 * would).  The slot goes back on the completion.
 */
static int
tx_post_in_place(struct rmq_socket *s, struct rmq_peer *p,
                 struct rmq_waiter *w, struct rmq_tx *tx, const void *payload,
                 size_t len, const struct rmq_tx_rma *rma)
{
	struct tx_place   t = {.s = s, .p = p, .tx = tx, .rma = rma,
	                       .iov = {{tx->buf, RMQ_HDR_SIZE},
	                               {(void *) payload, len}},
	                       .desc = {tx->desc, NULL}};
	struct rmq_waiter lw;
	int               landed = 0, rc;

	rc = rmq_post_retry(s, p, w, tx_place_once, &t,
	                    rma != NULL ? "fi_writemsg" : "fi_sendmsg");
	rc = tx_posted(s, p, tx, rc);
	if (rc != 0)
		return rc;
	tx->landed = &landed;
	/*
	 * Posted: the message is on its way, whatever the caller's timeout
	 * says, and the provider reads the payload until its completion --
	 * so we wait for that, without a deadline.  Nothing else of ours was
	 * in flight to p, and the kernel's socket buffers take a message of
	 * the sizes that go in place without p reading: on tcp the send
	 * completes within its fi_writemsg, or at the next CQ read.
	 */
	rmq_waiter_init(&lw, -1);
	(void) rmq_wait_until(&s->reactor, &lw, 0, tx_landed, &landed);
	if (!landed) {
		/* Only a shut-down context ends the wait before it: the
		 * slot must not point at our stack any more. */
		tx->landed = NULL;
	}
	s->stats.sent_in_place++;
	return 0;
}

int
rmq_tx_post_payload(struct rmq_socket *s, struct rmq_peer *p,
                    struct rmq_waiter *w, struct rmq_tx *tx,
                    const void *payload, size_t len, int flags,
                    const struct rmq_tx_rma *rma)
{
	if (tx_in_place(s, p, len, flags))
		return tx_post_in_place(s, p, w, tx, payload, len, rma);
	rmq_copy(tx->buf + RMQ_HDR_SIZE, payload, len);
	return rmq_tx_post(s, p, w, tx, RMQ_HDR_SIZE + len, rma);
}

/* ---- headers, control messages, credits ---- */

static uint16_t
take_owed(struct rmq_peer *p)
{
	uint16_t g = p->owed > 0xffff ? 0xffff : (uint16_t) p->owed;

	p->owed -= g;
	return g;
}

void
rmq_hdr_fill(struct rmq_hdr *h, struct rmq_peer *p, int type, uint32_t msgid,
             uint32_t len)
{
	h->version = RMQ_WIRE_VERSION;
	h->type    = (uint8_t) type;
	h->credits = take_owed(p);
	h->conn    = p->rid;
	h->msgid   = msgid;
	h->len     = len;
}

struct inject_post {
	struct rmq_socket *s;
	struct rmq_peer   *p;
	const void        *b;
	size_t             n;
	const uint64_t    *data;
};

static ssize_t
inject_once(void *arg)
{
	struct inject_post *t = arg;

	if (t->data != NULL)
		return fi_injectdata(rmq_peer_ep(t->s, t->p), t->b, t->n, *t->data,
		                     t->p->fiaddr);
	return fi_inject(rmq_peer_ep(t->s, t->p), t->b, t->n, t->p->fiaddr);
}

int
rmq_tx_inject(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
              const void *b, size_t n, const uint64_t *data)
{
	struct inject_post t = {s, p, b, n, data};
	uint8_t            hb[RMQ_HDR_SIZE];
	struct rmq_hdr     h;
	int                rc;

	if (p->link->put != NULL && data == NULL)
		return p->link->put(s, p, w, b, n, NULL, 0);
	if (p->link->put != NULL) {
		/* The header as CQ data: a whole one before it instead. */
		rmq_hdr_fill(&h, p, RMQ_MT_DATA, (uint32_t) *data,
		             (uint32_t) n);
		rmq_hdr_encode(hb, &h);
		rc = p->link->put(s, p, w, hb, sizeof(hb), b, n);
		if (rc != 0)
			p->owed += h.credits;
		return rc;
	}
	return rmq_post_retry(s, p, w, inject_once, &t,
	                      data != NULL ? "fi_injectdata" : "fi_inject");
}

int
rmq_tx_small(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
             const uint8_t *b, size_t n)
{
	struct rmq_tx *tx;
	int            rc;

	if (s->dom->caps.inject && n <= s->dom->caps.inject_size)
		return rmq_tx_inject(s, p, w, b, n, NULL);
	rc = rmq_tx_get(s, p, w, &tx);
	if (rc != 0)
		return rc;
	memcpy(tx->buf, b, n);
	return rmq_tx_post(s, p, w, tx, n, NULL);
}

int
rmq_tx_ctl(struct rmq_socket *s, struct rmq_peer *p, int type, uint32_t msgid,
           uint32_t status)
{
	uint8_t           b[RMQ_HDR_SIZE];
	struct rmq_hdr    h;
	struct rmq_waiter w;
	int               rc;

	if (p->state == RMQ_PEER_DEAD)
		return -RMQ_ECONNRESET;
	rmq_hdr_fill(&h, p, type, msgid, status);
	rmq_hdr_encode(b, &h);
	rmq_waiter_init(&w, 1000);
	rmq_peer_hold(p);
	rc = rmq_tx_small(s, p, &w, b, sizeof(b));
	if (rc != 0)
		p->owed += h.credits;
	else if (type == RMQ_MT_FIN || type == RMQ_MT_CTS)
		p->sent++; /* counted in BYE: close waits for it */
	rmq_peer_release(s, p); /* may free p if it died meanwhile */
	return rc;
}

void
rmq_tx_sent(struct rmq_socket *s, struct rmq_peer *p, int path, size_t len)
{
	p->credits--;
	p->sent++;
	s->pstats[path].sent_msgs++;
	s->pstats[path].sent_bytes += len;
}

/* A message we drop still frees its credit. */
void
rmq_tx_consumed(struct rmq_socket *s, struct rmq_peer *p)
{
	p->owed++;
	if (p->state == RMQ_PEER_LIVE &&
	    p->owed >= (uint32_t) (s->rcvhwm + 1) / 2)
		(void) rmq_tx_ctl(s, p, RMQ_MT_CREDIT, 0, 0);
}

void
rmq_rx_keep(struct rmq_socket *s, struct rmq_rxent *e, struct rmq_slab *sl,
            uint8_t *data)
{
	e->data = data;
	if (!s->dom->caps.multi_recv &&
	    (e->heap = malloc(e->len > 0 ? e->len : 1)) != NULL) {
		rmq_copy(e->heap, data, e->len);
		e->data = e->heap;
		return;
	}
	/* (Out of memory: it holds the buffer, as a slab's message does.) */
	e->slab = sl;
	atomic_fetch_add(&sl->refs, 1);
}

/*
 * The message whose frame could not be taken (too large in all, or no
 * memory) goes whole: its frames queued so far, counted once, their
 * credit back; and, where more of it is coming (more), those too.
 */
static void
rx_cut(struct rmq_socket *s, struct rmq_peer *p, bool more)
{
	size_t n = rmq_rxq_trim_open(s, &p->q);

	s->stats.dropped++;
	while (n-- > 0)
		rmq_tx_consumed(s, p);
	p->q.skip = more;
}

void
rmq_rx_abort(struct rmq_socket *s, struct rmq_peer *p)
{
	if (!p->q.cont && p->q.open == 0)
		return; /* none was coming */
	rx_cut(s, p, false);
	p->q.cont = false;
}

void
rmq_rx_lost(struct rmq_socket *s, struct rmq_peer *p, uint32_t msgid)
{
	struct rmq_rxq *q    = &p->q;
	bool            more = (msgid & RMQ_MSGID_MORE) != 0;

	if (q->skip) {
		q->skip = more; /* its message went already */
	} else {
		rx_cut(s, p, more);
		if (!q->cont)
			rmq_tx_consumed(s, p); /* a message's first: its credit */
	}
	q->cont = more;
}

struct rmq_rxent *
rmq_rx_new(struct rmq_socket *s, struct rmq_peer *p, uint32_t msgid)
{
	struct rmq_rxent *e;

	p->recvd++;
	p->heard = true; /* no coalescing to it until we send alone again */
	e = rmq_rxent_new(s);
	if (e == NULL) {
		rmq_rx_lost(s, p, msgid);
		return NULL;
	}
	e->peer = p;
	rmq_rx_msgid(e, msgid);
	return e;
}

void
rmq_rx_msgid(struct rmq_rxent *e, uint32_t msgid)
{
	e->msgid = msgid & ~RMQ_MSGID_MORE;
	e->more  = (msgid & RMQ_MSGID_MORE) != 0;
}

int
rmq_rx_accept(struct rmq_socket *s, struct rmq_peer *p, struct rmq_rxent *e)
{
	struct rmq_rxq *q    = &p->q;
	bool            cont = q->cont;
	uint64_t        total;

	/* A frame after one that said more continues its message: it took
	 * no credit (the message's first did, for all of them). */
	q->cont = e->more;
	if (cont)
		e->nocredit = true;
	total = (cont ? q->open_len : 0) + e->len;
	if (q->skip || (s->maxmsg >= 0 && total > (uint64_t) s->maxmsg)) {
		if (!q->skip) {
			rmq_log(RMQ_LOG_WARN,
			        "dropped a %llu-byte message from %s: larger "
			        "than RMQ_MAXMSGSIZE %lld",
			        (unsigned long long) total, p->name,
			        (long long) s->maxmsg);
			rx_cut(s, p, e->more);
		} else if (!e->more) {
			q->skip = false; /* its last frame: the next is new */
		}
		if (!e->nocredit)
			rmq_tx_consumed(s, p);
		rmq_rxent_free(s, e);
		return -RMQ_EMSGSIZE;
	}
	q->open_len = e->more ? total : 0;
	rmq_rxq_push(s, q, e);
	return 0;
}

void
rmq_rx_batch(struct rmq_socket *s, struct rmq_peer *p, uint8_t *b,
             uint32_t count, int path, struct rmq_slab *sl)
{
	struct rmq_rxent *e;
	size_t            off, n;
	uint32_t          i;

	for (i = 0, off = 0; i < count; i++, off += rmq_batch_item_size(n)) {
		n = rmq_get32(b + off);
		e = rmq_rx_new(s, p, rmq_get32(b + off + 4));
		if (e == NULL)
			continue;
		e->path = path;
		e->len  = n;
		e->data = b + off + RMQ_BATCH_ITEM_HDR;
		if (sl != NULL)
			rmq_rx_keep(s, e, sl, e->data);
		(void) rmq_rx_accept(s, p, e);
	}
}
