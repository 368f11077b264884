/*
 * Coalescing (batch.h): several small messages to one peer in one batch.
 *
 * The batch is a tx slot being filled: header (written when it leaves),
 * then items of 8 bytes (length, msgid) and the payload, padded to 8.
 * It lands in the receiver's slab (BATCH) or ring (RBATCH) like a single
 * message of its row, and each item becomes a queued message pointing
 * into it, holding a reference.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "conn/peer.h"
#include "ctx.h"
#include "link_ops.h"
#include "paths/batch.h"
#include "paths/path.h"
#include "paths/tx.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

static struct rmq_bsock *
bsock(struct rmq_socket *s)
{
	return &s->ps->bat;
}

/* The row that would carry a batch opened to p now (the one that takes
 * more), and what that batch may carry after its header; 0: none. */
static size_t
next_cap(const struct rmq_socket *s, const struct rmq_peer *p, int *row)
{
	size_t best = 0, c;
	int    i;

	*row = -1;
	for (i = 0; i < RMQ_PATHS; i++) {
		if (s->path_ops[i]->batch_cap == NULL)
			continue;
		c = s->path_ops[i]->batch_cap(s, p);
		if (c > best || *row < 0) {
			best = c;
			*row = i;
		}
	}
	return best;
}

/* What one batch to p may carry after its header: the open one's, or the
 * one it would open. */
static size_t
batch_cap(const struct rmq_socket *s, const struct rmq_peer *p)
{
	int row;

	return rmq_batch_open(p) ? p->bat->cap : next_cap(s, p, &row);
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
	struct rmq_bsock  *bs  = bsock(s);
	int64_t            now = s->reactor.waiting > 0 ? 0 : rmq_now_ns();
	struct rmq_peer   *p;
	int                i;

	for (i = 0; bs->nopen > 0 && i < s->peers->hi; i++) {
		p = rmq_peer_at(s, i);
		if (p == NULL || p->bat == NULL ||
		    (now != 0 && now - p->last_tx < bs->window_ns))
			continue;
		if (p->bat->tx != NULL)
			(void) rmq_batch_flush(s, p, NULL);
		if (p->bat->held)
			p->link->flush(s, p); /* what the link holds back */
	}
}

int
rmq_batch_sock_init(struct rmq_socket *s)
{
	struct rmq_bsock *bs   = bsock(s);
	int               hook = rmq_reactor_after(&s->reactor, batch_after);

	if (hook < 0)
		return hook;
	bs->hook      = hook;
	bs->nopen     = 0;
	bs->on        = s->ctx->cfg.coalesce != 0;
	bs->window_ns = (int64_t) s->ctx->cfg.coalesce_us * 1000;
	return 0;
}

bool
rmq_batch_idle(const struct rmq_socket *s)
{
	return s->ps->bat.nopen == 0;
}

int64_t
rmq_batch_window(const struct rmq_socket *s)
{
	return s->ps->bat.on ? s->ps->bat.window_ns : 0;
}

/* p's state, made at its handshake; NULL: no memory (nothing coalesced
 * to it, nothing held back for it). */
static struct rmq_bpeer *
bpeer(struct rmq_peer *p)
{
	if (p->bat == NULL)
		p->bat = calloc(1, sizeof(*p->bat));
	return p->bat;
}

/* Every peer may coalesce to us; we to those that say they take it. */
void
rmq_batch_hello_out(struct rmq_socket *s, struct rmq_peer *p,
                    struct rmq_hello *h)
{
	RMQ_UNUSED(s);
	(void) bpeer(p);
	h->features |= RMQ_FEAT_BATCH;
}

int
rmq_batch_hello_in(struct rmq_socket *s, struct rmq_peer *p,
                   const struct rmq_hello *h, char *why, size_t whylen)
{
	struct rmq_bpeer *b = bpeer(p);

	RMQ_UNUSED(s);
	RMQ_UNUSED(why);
	RMQ_UNUSED(whylen);
	if (b != NULL)
		b->can = (h->features & RMQ_FEAT_BATCH) != 0;
	return 0;
}

bool
rmq_batch_takes(struct rmq_socket *s, struct rmq_peer *p, int path,
                size_t len, int64_t *now)
{
	const struct rmq_bsock *bs = bsock(s);
	const struct rmq_bpeer *b  = p->bat;

	if (b == NULL)
		return false;
	if (b->tx != NULL)
		return len <= RMQ_BATCH_ITEM_MAX;
	if (!bs->on || !b->can || !rmq_batch_may(p) ||
	    len > RMQ_BATCH_ITEM_MAX ||
	    s->paths.force >= 0 ||
	    !(s->path_ops[path]->flags & RMQ_ROW_F_COALESCE))
		return false;
	*now = rmq_now_ns();
	return *now - p->last_tx < bs->window_ns;
}

/* One more peer with a batch open or records held (d 1), or one less. */
static void
count_open(struct rmq_socket *s, int d)
{
	struct rmq_bsock *bs = bsock(s);

	if (d > 0 && bs->nopen++ == 0)
		rmq_reactor_arm(&s->reactor, bs->hook, true);
	if (d < 0 && --bs->nopen == 0)
		rmq_reactor_arm(&s->reactor, bs->hook, false);
	rmq_thread_batch(&s->ctx->progress, d);
}

static void
batch_opened(struct rmq_socket *s, struct rmq_peer *p, struct rmq_tx *tx)
{
	struct rmq_bpeer *b = p->bat;

	b->cap  = (uint32_t) next_cap(s, p, &b->row);
	b->tx   = tx;
	b->n    = 0;
	b->used = 0;
	count_open(s, 1);
}

bool
rmq_batch_hold(struct rmq_socket *s, struct rmq_peer *p, bool held)
{
	struct rmq_bpeer *b = held ? bpeer(p) : p->bat;

	if (b == NULL)
		return !held;
	if (b->held != held) {
		b->held = held;
		count_open(s, held ? 1 : -1);
	}
	return true;
}

static void
batch_closed(struct rmq_socket *s, struct rmq_peer *p)
{
	p->bat->tx = NULL;
	count_open(s, -1);
}

/* One post of p's batch: 0, -FI_EAGAIN (still open), or -error. */
static int
flush_once(struct rmq_socket *s, struct rmq_peer *p)
{
	struct rmq_bpeer          *b   = p->bat;
	const struct rmq_path_ops *row = s->path_ops[b->row];
	struct rmq_tx             *tx  = b->tx;
	struct rmq_hdr             h;
	int                        rc;

	if (p->state == RMQ_PEER_DEAD)
		return -RMQ_ECONNRESET;
	rmq_hdr_fill(&h, p, row->batch_mt, b->n, b->used);
	rmq_hdr_encode(tx->buf, &h);
	rc = row->batch_post(s, p, tx, RMQ_HDR_SIZE + b->used);
	if (rc != 0) {
		p->owed += h.credits;
		if (rc == 1) /* no room in p's ring yet */
			return -FI_EAGAIN;
		if (rc == -FI_EAGAIN) {
			s->stats.eagain++;
			return -FI_EAGAIN;
		}
		rmq_log(RMQ_LOG_ERROR, "a batch (%s) to %s: %s",
		        rmq_path_name(b->row), p->name, fi_strerror(-rc));
		return rc;
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

	if (!rmq_batch_open(f->p))
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

	if (!rmq_batch_open(p))
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
	struct rmq_bpeer *b    = p->bat;
	size_t            item = rmq_batch_item_size(o->len);
	struct rmq_tx    *tx;
	uint8_t          *at;
	int               rc;

	if (b->tx != NULL && b->used + item > batch_cap(s, p)) {
		rc = rmq_batch_flush(s, p, w);
		if (rc != 0)
			return rc;
	}
	if (item > batch_cap(s, p))
		return 1; /* cannot be coalesced to this peer at all */
	if (b->tx == NULL) {
		/* Every slot in flight: a message whose row needs none goes
		 * alone (slots held by sends to a peer that died may come
		 * back late); others wait for one, as they would alone --
		 * and batched, they save a syscall each on tcp.  Unless the
		 * caller may not wait. */
		if (!rmq_tx_free_any(s) &&
		    (s->path_ops[path]->flags & RMQ_ROW_F_NO_SLOT))
			return 1;
		rc = rmq_tx_get(s, p, w, &tx);
		if (rc == -RMQ_EAGAIN)
			return 1;
		if (rc != 0)
			return rc;
		batch_opened(s, p, tx);
	}
	at = b->tx->buf + RMQ_HDR_SIZE + b->used;
	rmq_put32(at, (uint32_t) o->len);
	rmq_put32(at + 4, msgid);
	if (o->len > 0)
		rmq_copy(at + RMQ_BATCH_ITEM_HDR, o->buf, o->len);
	if (item > RMQ_BATCH_ITEM_HDR + o->len)
		memset(at + RMQ_BATCH_ITEM_HDR + o->len, 0,
		       item - RMQ_BATCH_ITEM_HDR - o->len);
	b->used += (uint32_t) item;
	b->n++;
	if (now != 0)
		p->last_tx = now;
	rmq_tx_sent(s, p, b->row, o->len);
	s->stats.coalesced++;
	rmq_msg_free(o->msg); /* copied in */
	/* Full (no room for another empty message): it goes now. */
	if (b->used + RMQ_BATCH_ITEM_HDR > batch_cap(s, p))
		(void) rmq_batch_flush(s, p, NULL);
	return 0;
}

void
rmq_batch_sent_alone(struct rmq_peer *p, int64_t now)
{
	/* now 0: rmq_batch_takes did not look (a reply, or the first send
	 * after news from p), and reading the clock for it would cost
	 * every ping-pong message a clock read: "long ago" instead, so the
	 * next send looks and goes alone, and a stream packs from its
	 * third. */
	p->last_tx = now;
	p->heard   = false;
}

void
rmq_batch_drop(struct rmq_socket *s, struct rmq_peer *p)
{
	if (!rmq_batch_open(p))
		return;
	rmq_tx_put(s, p->bat->tx);
	batch_closed(s, p);
}

void
rmq_batch_peer_fini(struct rmq_socket *s, struct rmq_peer *p)
{
	rmq_batch_drop(s, p);
	if (p->bat != NULL)
		(void) rmq_batch_hold(s, p, false);
	free(p->bat);
	p->bat = NULL;
}

void
rmq_batch_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rx *rx,
             int path)
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
	rmq_rx_batch(s, p, rx->payload, count, path, rx->sl);
}
