/*
 * Coalescing (batch.h): several small messages to one peer in one BATCH.
 *
 * The batch is a tx slot being filled: header (written when it leaves),
 * then items of 8 bytes (length, msgid) and the payload, padded to 8.
 * It lands in the receiver's slab like an eager message, and each item
 * becomes a queued message pointing into the slab, holding a reference.
 */
#include <string.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "conn/peer.h"
#include "ctx.h"
#include "ep.h"
#include "paths/batch.h"
#include "paths/path.h"
#include "paths/ring.h"
#include "paths/tx.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

/* What a batch into p's slabs (BATCH) may carry after its header. */
static size_t
eager_cap(const struct rmq_socket *s, const struct rmq_peer *p)
{
	size_t cap = s->tx->slot - RMQ_HDR_SIZE;

	return cap < p->eager_max ? cap : p->eager_max;
}

/*
 * What a batch into p's ring (RBATCH) may carry now; 0: none.  Only where
 * the table has a ring range (tcp: the domain orders writes with sends)
 * and p takes RBATCH.  A ring message is one RMA write, which
 * tcp;ofi_rxm does not cut at its buffer size as it does two-sided sends
 * (8 KiB here: FI_OFI_RXM_BUFFER_SIZE), so a batch may hold a quarter of
 * the ring (68 KiB by default) -- as much of it as is free.
 */
static size_t
ring_cap(const struct rmq_socket *s, const struct rmq_peer *p)
{
	if (!s->paths.ring || s->paths.ring_max <= s->paths.eager_max)
		return 0;
	return rmq_ring_batch_cap(s, p);
}

/* What the batch p would open now may carry after its header; *ring:
 * whether it goes into p's ring (when that holds more). */
static size_t
next_cap(const struct rmq_socket *s, const struct rmq_peer *p, bool *ring)
{
	size_t r = ring_cap(s, p), e = eager_cap(s, p);

	*ring = r > e;
	return *ring ? r : e;
}

/* What one batch to p may carry after its header: the open one's, or the
 * one it would open. */
static size_t
batch_cap(const struct rmq_socket *s, const struct rmq_peer *p)
{
	bool ring;

	return p->bat != NULL ? p->bat_cap : next_cap(s, p, &ring);
}

/*
 * After a progress pass (one try each): in a wait, every open batch goes;
 * in a pass from within a call (a PUB takes in its subscribers' news at
 * every send) or from the flusher, only those opened a window ago or
 * more -- else a batch would never hold more than one message.
 */
static void
batch_after(void *owner)
{
	struct rmq_socket *s   = owner;
	int64_t            now = s->reactor.waiting > 0 ? 0 : rmq_now_ns();
	struct rmq_peer   *p;
	int                i;

	for (i = 0; s->nbat > 0 && i < s->peers->hi; i++) {
		p = rmq_peer_at(s, i);
		if (p != NULL && p->bat != NULL &&
		    (now == 0 || now - p->last_tx >= s->coalesce_ns))
			(void) rmq_batch_flush(s, p, NULL);
		if (p != NULL && p->lheld &&
		    (now == 0 || now - p->last_tx >= s->coalesce_ns))
			s->local_flush(s, p); /* paths/local.c */
	}
}

int
rmq_batch_sock_init(struct rmq_socket *s)
{
	int hook = rmq_reactor_after(&s->reactor, batch_after);

	if (hook < 0)
		return hook;
	s->bat_hook = hook;
	s->nbat     = 0;
	return 0;
}

bool
rmq_batch_takes(struct rmq_socket *s, struct rmq_peer *p, int path,
                size_t len, int64_t *now)
{
	if (p->bat != NULL)
		return len <= RMQ_BATCH_ITEM_MAX;
	if (!s->coalesce || !p->can_batch || p->heard ||
	    len > RMQ_BATCH_ITEM_MAX || s->paths.force >= 0 ||
	    (path != RMQ_PATH_INJECT && path != RMQ_PATH_EAGER &&
	     path != RMQ_PATH_RING))
		return false;
	*now = rmq_now_ns();
	return *now - p->last_tx < s->coalesce_ns;
}

static void
batch_opened(struct rmq_socket *s, struct rmq_peer *p, struct rmq_tx *tx)
{
	p->bat_cap  = (uint32_t) next_cap(s, p, &p->bat_ring);
	p->bat      = tx;
	p->bat_n    = 0;
	p->bat_used = 0;
	if (s->nbat++ == 0)
		rmq_reactor_arm(&s->reactor, s->bat_hook, true);
	rmq_thread_batch(&s->ctx->progress, 1);
}

/* p has local records not yet published (link/local.c): the after-pass
 * hook and the flusher see it as an open batch. */
void
rmq_batch_hold(struct rmq_socket *s, struct rmq_peer *p, bool held)
{
	if (p->lheld == held)
		return;
	p->lheld = held;
	if (held && s->nbat++ == 0)
		rmq_reactor_arm(&s->reactor, s->bat_hook, true);
	if (!held && --s->nbat == 0)
		rmq_reactor_arm(&s->reactor, s->bat_hook, false);
	rmq_thread_batch(&s->ctx->progress, held ? 1 : -1);
}

static void
batch_closed(struct rmq_socket *s, struct rmq_peer *p)
{
	p->bat = NULL;
	if (--s->nbat == 0)
		rmq_reactor_arm(&s->reactor, s->bat_hook, false);
	rmq_thread_batch(&s->ctx->progress, -1);
}

/* One post of p's batch: 0, -FI_EAGAIN (still open), or -error. */
static int
flush_once(struct rmq_socket *s, struct rmq_peer *p)
{
	struct rmq_tx *tx = p->bat;
	struct rmq_hdr h;
	ssize_t        rc;

	if (p->state == RMQ_PEER_DEAD)
		return -RMQ_ECONNRESET;
	rmq_hdr_fill(&h, p, p->bat_ring ? RMQ_MT_RBATCH : RMQ_MT_BATCH,
	             p->bat_n, p->bat_used);
	rmq_hdr_encode(tx->buf, &h);
	if (p->bat_ring) {
		rc = rmq_ring_batch_post(s, p, tx, RMQ_HDR_SIZE + p->bat_used);
	} else {
		rc = rmq_strict_desc(s, tx->desc, "fi_send");
		if (rc == 0)
			rc = fi_send(rmq_peer_ep(s, p), tx->buf,
			             RMQ_HDR_SIZE + p->bat_used, tx->desc,
			             p->fiaddr, &tx->op.fctx);
	}
	if (rc != 0) {
		p->owed += h.credits;
		if (rc == 1) /* no room in p's ring yet */
			return -FI_EAGAIN;
		if (rc == -FI_EAGAIN) {
			s->stats.eagain++;
			return -FI_EAGAIN;
		}
		rmq_log(RMQ_LOG_ERROR, "%s (batch) to %s: %s",
		        p->bat_ring ? "fi_writedata" : "fi_send", p->name,
		        fi_strerror((int) -rc));
		return (int) rc;
	}
	tx->peer = p;
	p->pending++;
	s->inflight++;
	p->last_tx = rmq_now_ns();
	batch_closed(s, p);
	return 0;
}

struct flush_wait {
	struct rmq_socket *s;
	struct rmq_peer   *p;
};

static int
flushed(void *arg)
{
	struct flush_wait *f = arg;
	int                rc;

	if (f->p->bat == NULL)
		return 1; /* a progress pass sent it */
	rc = flush_once(f->s, f->p);
	return rc == 0 ? 1 : rc == -FI_EAGAIN ? 0 : rc;
}

int
rmq_batch_flush(struct rmq_socket *s, struct rmq_peer *p,
                struct rmq_waiter *w)
{
	struct flush_wait f = {s, p};
	int               rc;

	if (p->bat == NULL)
		return 0;
	rc = flush_once(s, p);
	if (rc != -FI_EAGAIN || w == NULL)
		return rc;
	/* Both sides must progress first (tcp;ofi_rxm), or wait. */
	return rmq_wait_until(&s->reactor, w, 0, flushed, &f);
}

int
rmq_batch_add(struct rmq_socket *s, struct rmq_peer *p, int path,
              const struct rmq_out *o, uint32_t msgid, int64_t now,
              struct rmq_waiter *w)
{
	size_t         item = rmq_batch_item_size(o->len);
	struct rmq_tx *tx;
	uint8_t       *b;
	int            rc;

	if (p->bat != NULL && p->bat_used + item > batch_cap(s, p)) {
		rc = rmq_batch_flush(s, p, w);
		if (rc != 0)
			return rc;
	}
	if (item > batch_cap(s, p))
		return 1; /* cannot be coalesced to this peer at all */
	if (p->bat == NULL) {
		/* Every slot in flight: a message that would go by inject
		 * goes alone (it needs no slot, and slots held by sends to a
		 * peer that died may come back late); others wait for one, as
		 * they would alone -- and batched, they save a syscall each
		 * on tcp.  Unless the caller may not wait. */
		if (s->tx->free == NULL && path == RMQ_PATH_INJECT)
			return 1;
		rc = rmq_tx_get(s, p, w, &tx);
		if (rc == -RMQ_EAGAIN)
			return 1;
		if (rc != 0)
			return rc;
		batch_opened(s, p, tx);
	}
	b = p->bat->buf + RMQ_HDR_SIZE + p->bat_used;
	rmq_put32(b, (uint32_t) o->len);
	rmq_put32(b + 4, msgid);
	if (o->len > 0)
		rmq_copy(b + RMQ_BATCH_ITEM_HDR, o->buf, o->len);
	if (item > RMQ_BATCH_ITEM_HDR + o->len)
		memset(b + RMQ_BATCH_ITEM_HDR + o->len, 0,
		       item - RMQ_BATCH_ITEM_HDR - o->len);
	p->bat_used += (uint32_t) item;
	p->bat_n++;
	if (now != 0)
		p->last_tx = now;
	rmq_tx_sent(s, p, p->bat_ring ? RMQ_PATH_RING : RMQ_PATH_EAGER,
	            o->len);
	s->stats.coalesced++;
	rmq_msg_free(o->msg); /* copied in */
	/* Full (no room for another empty message): it goes now. */
	if (p->bat_used + RMQ_BATCH_ITEM_HDR > batch_cap(s, p))
		(void) rmq_batch_flush(s, p, NULL);
	return 0;
}

void
rmq_batch_sent_alone(struct rmq_peer *p, int64_t now)
{
	/* now 0: rmq_batch_takes did not look (a reply, or the first send
	 * after news from p), and reading the clock for it would cost
	 * every ping-pong message a clock read: "long ago" instead, so the
	 * next send
	 * looks and goes alone, and a stream packs from its third. */
	p->last_tx = now;
	p->heard   = false;
}

void
rmq_batch_drop(struct rmq_socket *s, struct rmq_peer *p)
{
	if (p->bat == NULL)
		return;
	rmq_tx_put(s, p->bat);
	batch_closed(s, p);
}

void
rmq_batch_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rx *rx)
{
	size_t   len = rx->h->len;
	uint32_t i, count = rx->h->msgid;

	/* Check every item before queuing any. */
	if (rmq_batch_check(rx->payload, len, count, &i) != 0) {
		/* As any malformed message: dropped whole, counted. */
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "dropped a malformed batch from %s: %u "
		        "messages said, %u found in %zu bytes", p->name, count,
		        i, len);
		return;
	}
	rmq_rx_batch(s, p, rx->payload, count, RMQ_PATH_EAGER, rx->sl);
}
