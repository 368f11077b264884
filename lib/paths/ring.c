/*
 * The ring path: one-sided writes into a per-peer ring in the receiver's
 * registered memory.
 *
 * The receiver allocates a ring of ring.slots slots of ring.slot_size bytes
 * for every peer, registers it FI_REMOTE_WRITE only, and announces it in the
 * HELLO (RMQ_FEAT_RING).  A message takes ceil((16 + len) / slot)
 * consecutive slots and never wraps: when it does not fit before the end,
 * the sender skips to slot 0 and the skipped slots count as used.  The
 * sender fi_writedata's the header and payload from a registered tx slot;
 * the 32-bit immediate names the receiver's peer slot and the ring slot
 * (wire.h).  The receiver learns of the message from that completion only
 * -- never from polling memory: on tcp;ofi_rxm the bytes land only while
 * the target progresses, and the completion is what says they have.
 *
 *   sender:   rfree slots --write k--> rfree - (pad + k)   <--RCREDIT n--
 *   receiver: head --take--> taken --application frees--> freed --n owed-->
 *
 * Flow control is in slots: the sender starts with all of them; the
 * receiver frees a message's slots (and any padding before it) when the
 * application takes it, and returns them in an RCREDIT message once an
 * eighth of the ring is free (a quarter before: batched streams found the
 * ring short of room; docs/INTERNALS.md §17, "the ring") and the sender
 * has used half
 * of it (ring_tell).  A message takes at most a quarter of the ring, so a
 * sender waiting for room always has a credit on its way.
 * Every message also costs one message credit (RCVHWM), as on every path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "caps.h"
#include "conn/peer.h"
#include "ctx.h"
#include "ep.h"
#include "msg.h"
#include "paths/path.h"
#include "paths/ring.h"
#include "paths/tx.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

/* This path's state for one peer. */
struct ring_peer {
	/* Our ring for its writes (ring NULL: none). */
	uint8_t            *ring;
	struct rmq_numa_mem mem;
	struct fid_mr      *mr;
	uint32_t            slots;
	size_t              slot;
	uint32_t            head;  /* slot the next message starts at */
	uint64_t            taken; /* slots filled so far (with padding) */
	uint64_t            freed; /* slots the application let go */
	uint32_t            owed;  /* freed, not yet told */
	/* Its ring, which we write (rslots 0: none). */
	uint64_t            raddr, rkey;
	uint32_t            rslots;
	size_t              rslot;
	uint32_t            rtail; /* next slot we write */
	int64_t             rfree; /* slots we may fill */
	bool                rbatch; /* it takes RBATCH in its ring */
};

static struct ring_peer *
ring_of(const struct rmq_peer *p)
{
	return p->path[RMQ_PATH_RING];
}

static struct ring_peer *
ring_get(struct rmq_peer *p)
{
	if (p->path[RMQ_PATH_RING] == NULL)
		p->path[RMQ_PATH_RING] = calloc(1, sizeof(struct ring_peer));
	return p->path[RMQ_PATH_RING];
}

static uint32_t
slots_for(size_t slot, size_t len)
{
	return (uint32_t) ((RMQ_HDR_SIZE + len + slot - 1) / slot);
}

bool
rmq_ring_rx_area(const struct rmq_peer *p, void **buf, size_t *len,
                 struct rmq_numa_mem *mem)
{
	const struct ring_peer *rp = ring_of(p);

	if (rp == NULL || rp->ring == NULL)
		return false;
	*buf = rp->ring;
	*len = (size_t) rp->slots * rp->slot;
	*mem = rp->mem;
	return true;
}

bool
rmq_ring_tx_area(const struct rmq_peer *p, uint64_t *raddr, uint64_t *rkey,
                 size_t *len)
{
	const struct ring_peer *rp = ring_of(p);

	if (rp == NULL || rp->rslots == 0)
		return false;
	*raddr = rp->raddr;
	*rkey  = rp->rkey;
	*len   = (size_t) rp->rslots * rp->rslot;
	return true;
}

/* ---- handshake and the peer's life ---- */

/* Our ring for p, announced in the HELLO (none if the socket has none). */
static void
ring_hello_out(struct rmq_socket *s, struct rmq_peer *p, struct rmq_hello *h)
{
	const struct rmq_config *cfg = &s->ctx->cfg;
	struct ring_peer        *rp;
	size_t                   bytes;
	uint32_t                 idx = p->id & 0xffff;

	if (!s->paths.ring_ok || idx >= RMQ_RING_PEERS_MAX)
		return; /* no ring: the peer will not use the path */
	rp = ring_of(p);
	if ((rp == NULL || rp->ring == NULL) && s->ps->rings >= cfg->ring_peers) {
		rmq_log(RMQ_LOG_DEBUG, "%s: no ring: %d peers have one "
		        "(ring.peers)", p->name, s->ps->rings);
		return;
	}
	rp = ring_get(p);
	if (rp == NULL)
		goto fail;
	if (rp->ring == NULL) {
		rp->slots = (uint32_t) cfg->ring_slots;
		rp->slot  = cfg->ring_slot_size;
		bytes     = (size_t) rp->slots * rp->slot;
		rp->ring  = rmq_numa_alloc(&s->ctx->numa, &s->dom->place, bytes,
		                           &rp->mem);
		if (rp->ring == NULL)
			goto fail;
		/* Remote write only: the peer can neither read it nor more. */
		if (rmq_mr_reg(s, rp->ring, bytes, FI_REMOTE_WRITE, &rp->mr,
		               NULL, NULL) != 0) {
			rmq_numa_free(rp->ring, &rp->mem);
			rp->ring = NULL;
			goto fail;
		}
		s->ps->rings++;
	}
	h->features      |= RMQ_FEAT_RING | RMQ_FEAT_RBATCH;
	h->ring_addr      = s->dom->caps.mr_virt_addr
	                        ? (uint64_t) (uintptr_t) rp->ring
	                        : 0;
	h->ring_key       = fi_mr_key(rp->mr);
	h->ring_slots     = rp->slots;
	h->ring_slot_size = (uint32_t) rp->slot;
	return;
fail:
	if (rp != NULL)
		rp->slots = 0;
	rmq_log(RMQ_LOG_WARN, "%s: no ring for this peer", p->name);
}

static int
ring_hello_in(struct rmq_socket *s, struct rmq_peer *p,
              const struct rmq_hello *h, char *why, size_t whylen)
{
	struct ring_peer *rp;

	RMQ_UNUSED(s);
	if (!(h->features & RMQ_FEAT_RING))
		return 0;
	rp = ring_get(p);
	if (rp == NULL) {
		snprintf(why, whylen, "out of memory");
		return -RMQ_ENOMEM;
	}
	rp->raddr  = h->ring_addr;
	rp->rkey   = h->ring_key;
	rp->rslots = h->ring_slots;
	rp->rslot  = h->ring_slot_size;
	rp->rfree  = h->ring_slots;
	rp->rbatch = (h->features & RMQ_FEAT_RBATCH) != 0;
	return 0;
}

static void
ring_peer_fini(struct rmq_socket *s, struct rmq_peer *p)
{
	struct ring_peer *rp = ring_of(p);

	if (rp == NULL)
		return;
	if (rp->mr != NULL)
		fi_close(&rp->mr->fid);
	if (rp->ring != NULL)
		s->ps->rings--;
	rmq_numa_free(rp->ring, &rp->mem);
	free(rp);
	p->path[RMQ_PATH_RING] = NULL;
}

/* ---- sending ---- */

static int
ring_can_carry(struct rmq_socket *s, const struct rmq_peer *p, size_t len,
               char *why, size_t whylen)
{
	const struct ring_peer *rp = ring_of(p);

	if (rp == NULL || rp->rslots == 0) {
		snprintf(why, whylen, "path ring cannot carry %zu bytes to %s: "
		         "it has no ring", len, p->name);
		return -RMQ_ENOTSUP;
	}
	if (slots_for(rp->rslot, len) <= rp->rslots / 4 &&
	    RMQ_HDR_SIZE + len <= s->ps->tx.slot)
		return 0;
	snprintf(why, whylen, "path ring cannot carry %zu bytes to %s: a "
	         "message takes at most a quarter of its ring (ring.slots, "
	         "ring.slot_size)", len, p->name);
	return -RMQ_EMSGSIZE;
}

/* Where a message of len bytes goes in p's ring now: its first slot in
 * *start, and the slots it takes there, padding to the end included. */
static uint32_t
ring_place(const struct ring_peer *rp, size_t len, uint32_t *start)
{
	uint32_t k = slots_for(rp->rslot, len);

	if (rp->rtail + k > rp->rslots) {
		*start = 0;
		return rp->rslots - rp->rtail + k;
	}
	*start = rp->rtail;
	return k;
}

/* The message placed at start, taking need slots, is on its way. */
static void
ring_took(struct ring_peer *rp, uint32_t start, uint32_t need, size_t len)
{
	rp->rfree -= need;
	rp->rtail = (start + slots_for(rp->rslot, len)) % rp->rslots;
}

/*
 * A receiver that does not read leaves its ring full while its message
 * credits (RCVHWM) still allow more: by size, the next row takes them,
 * so the ring never makes the effective high-water mark smaller.
 */
static bool
ring_has_room(struct rmq_socket *s, const struct rmq_peer *p, size_t len)
{
	const struct ring_peer *rp = ring_of(p);

	uint32_t                start;

	RMQ_UNUSED(s);
	return rp != NULL && rp->rslots != 0 &&
	       rp->rfree >= (int64_t) ring_place(rp, len, &start);
}

struct room {
	struct rmq_peer  *p;
	struct ring_peer *rp;
	int64_t           need;
};

static int
has_room(void *arg)
{
	struct room *r = arg;

	if (r->rp->rfree >= r->need)
		return 1;
	return r->p->state == RMQ_PEER_DEAD ? -RMQ_ECONNRESET : 0;
}

static int
ring_send(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_out *o,
          uint32_t msgid, int flags, struct rmq_waiter *w)
{
	struct ring_peer *rp = ring_of(p);
	struct rmq_tx_rma rma;
	struct rmq_hdr    h;
	struct rmq_tx    *tx;
	struct room       room;
	uint32_t          start, need;
	int               rc;

	if (rp == NULL || rp->rslots == 0)
		return -RMQ_ENOTSUP;
	if (slots_for(rp->rslot, o->len) > rp->rslots / 4 ||
	    RMQ_HDR_SIZE + o->len > s->ps->tx.slot)
		return -RMQ_EMSGSIZE;
	need = ring_place(rp, o->len, &start);
	/* Room in its ring: blocks, or -RMQ_EAGAIN when the waiter says. */
	room = (struct room){p, rp, (int64_t) need};
	if (rp->rfree < room.need) {
		rc = rmq_wait_until(&s->reactor, w, RMQ_WAIT_IDLE, has_room,
		                    &room);
		if (rc != 0)
			return rc;
	}
	rc = rmq_tx_get(s, p, w, &tx);
	if (rc != 0)
		return rc;
	rmq_hdr_fill(&h, p, RMQ_MT_RING, msgid, (uint32_t) o->len);
	rmq_hdr_encode(tx->buf, &h);
	rma.addr = rp->raddr + (uint64_t) start * rp->rslot;
	rma.key  = rp->rkey;
	rma.imm  = RMQ_IMM_RING_MAKE(p->rid & 0xffff, start);
	rc = rmq_tx_post_payload(s, p, w, tx, o->buf, o->len, flags, &rma);
	if (rc != 0) {
		p->owed += h.credits;
		return rc;
	}
	ring_took(rp, start, need, o->len);
	rmq_tx_sent(s, p, RMQ_PATH_RING, o->len);
	rmq_msg_free(o->msg); /* copied out, or sent */
	return 0;
}

/*
 * What one RBATCH to p may carry after its header now: the room its ring
 * has (at most a quarter of it) and one tx slot; 0: none (no ring range
 * in the table, its ring full, no ring of its to write, or it did not
 * say RMQ_FEAT_RBATCH).  Only where the table has a ring range (tcp: the
 * domain orders writes with sends).  A ring message is one RMA write,
 * which tcp;ofi_rxm does not cut at its buffer size as it does two-sided
 * sends (FI_OFI_RXM_BUFFER_SIZE), so a batch may hold a quarter of the
 * ring -- as much of it as is free.
 */
static size_t
ring_batch_cap(const struct rmq_socket *s, const struct rmq_peer *p)
{
	const struct ring_peer *rp = ring_of(p);
	int64_t                 free, before_end, k, wrap;
	size_t                  cap;

	if (!s->paths.ring || s->paths.ring_max <= s->paths.eager_max)
		return 0;
	if (rp == NULL || !rp->rbatch || rp->rslots < 4 || rp->rfree <= 0)
		return 0;
	/*
	 * The slots its ring has free now, at most a quarter of it: at its
	 * tail up to the end, or from slot 0 after padding to the end --
	 * whichever is more.  Nothing else is written to p's ring while its
	 * batch is open, so a batch this size never waits for room, and a
	 * receiver that does not read makes batches go to its slabs under
	 * its RCVHWM instead (as a ring message goes to the next row).
	 */
	free       = rp->rfree;
	before_end = (int64_t) (rp->rslots - rp->rtail);
	k          = free < before_end ? free : before_end;
	wrap       = free - before_end;
	if (wrap > k)
		k = wrap;
	if (k > (int64_t) (rp->rslots / 4))
		k = rp->rslots / 4;
	if (k <= 0)
		return 0;
	cap = (size_t) k * rp->rslot - RMQ_HDR_SIZE;
	if (cap > s->ps->tx.slot - RMQ_HDR_SIZE)
		cap = s->ps->tx.slot - RMQ_HDR_SIZE;
	return cap;
}

/* Write tx->buf[0..n) (an RBATCH header and its items) into p's ring at
 * its tail, once: 0 (in flight), 1 (no room in its ring yet: its credit
 * is on its way), -FI_EAGAIN (the provider's), or -error. */
static int
ring_batch_post(struct rmq_socket *s, struct rmq_peer *p, struct rmq_tx *tx,
                size_t n)
{
	struct ring_peer *rp = ring_of(p);
	uint32_t          start, need;
	ssize_t           rc;

	if (rp == NULL || rp->rslots == 0 || n < RMQ_HDR_SIZE)
		return -RMQ_ENOTSUP;
	if (slots_for(rp->rslot, n - RMQ_HDR_SIZE) > rp->rslots / 4)
		return -RMQ_EMSGSIZE;
	need = ring_place(rp, n - RMQ_HDR_SIZE, &start);
	if (rp->rfree < (int64_t) need)
		return 1; /* its credit is on its way */
	rc = rmq_strict_desc(s, tx->desc, "fi_writedata");
	if (rc != 0)
		return (int) rc;
	rc = fi_writedata(rmq_peer_ep(s, p), tx->buf, n, tx->desc,
	                  RMQ_IMM_RING_MAKE(p->rid & 0xffff, start), p->fiaddr,
	                  rp->raddr + (uint64_t) start * rp->rslot, rp->rkey,
	                  &tx->op.fctx);
	if (rc != 0)
		return (int) rc;
	ring_took(rp, start, need, n - RMQ_HDR_SIZE);
	return 0;
}

/* RCREDIT: the receiver freed slots of its ring for us. */
static void
ring_credit_rx(struct rmq_socket *s, struct rmq_peer *p,
               const struct rmq_rx *rx)
{
	struct ring_peer *rp = ring_of(p);
	uint32_t          n  = rx->h->len;

	if (rp == NULL || n > rp->rslots ||
	    rp->rfree + n > (int64_t) rp->rslots) {
		s->stats.proto_errors++;
		rmq_peer_fail(s, p, -RMQ_EPROTO, "ring credit overflow");
		return;
	}
	rp->rfree += n;
}

/* ---- receiving ---- */

/*
 * Tell p the slots freed so far once an eighth of the ring is owed and,
 * as far as we know, p has used half of it: before, every eighth went at
 * once, and a ping-pong of 16 KiB messages on tcp paid an RCREDIT (a
 * system call at each end, and a completion) every second message.  What
 * p has left is what it had, less the slots of every message landed here
 * since, plus what we told: messages still on their way make it less, and
 * each of them, when it lands, asks again (ring_imm), so a sender short
 * of room always has a credit coming (a message takes at most a quarter).
 */
static void
ring_tell(struct rmq_socket *s, struct rmq_peer *p, struct ring_peer *rp)
{
	uint64_t told = rp->freed - rp->owed;
	uint32_t n;

	if (p->state != RMQ_PEER_LIVE || s->ep == NULL ||
	    rp->owed < rp->slots / 8 ||
	    rp->slots - (rp->taken - told) >= rp->slots / 2)
		return;
	n        = rp->owed;
	rp->owed = 0;
	if (rmq_tx_ctl(s, p, RMQ_MT_RCREDIT, 0, n) != 0 &&
	    p->state == RMQ_PEER_LIVE)
		rp->owed += n; /* try again with the next one */
}

/* Slots of p up to end are free again (in order). */
static void
ring_free_to(struct rmq_socket *s, struct rmq_peer *p, uint64_t end)
{
	struct ring_peer *rp = p != NULL ? ring_of(p) : NULL;

	if (rp == NULL || end <= rp->freed)
		return;
	rp->owed += (uint32_t) (end - rp->freed);
	rp->freed = end;
	ring_tell(s, p, rp);
}

static void
ring_release(struct rmq_socket *s, struct rmq_rxent *e)
{
	ring_free_to(s, e->peer, e->tag);
}

static void
ring_bad(struct rmq_socket *s, struct rmq_peer *p, const char *why)
{
	s->stats.proto_errors++;
	rmq_log(RMQ_LOG_WARN, "bad ring message from %s: %s", p->name, why);
	rmq_peer_fail(s, p, -RMQ_EPROTO, why);
}

/*
 * p's slots through end hold no message of their own (dropped on
 * arrival, or a batch's items queued before): they go back with the
 * newest ring message of p still queued, when it is released -- releases
 * free everything up to their tag, in order -- or now if none is.
 */
static void
ring_settle(struct rmq_socket *s, struct rmq_peer *p, uint64_t end)
{
	if (!rmq_rxq_hold_to(&p->q, RMQ_PATH_RING, end))
		ring_free_to(s, p, end);
	else /* less room at p now: credits held back may be due */
		ring_tell(s, p, ring_of(p));
}

/* A ring message landed: check it against what we granted, queue it. */
static void
ring_imm(struct rmq_socket *s, uint32_t imm)
{
	uint32_t          idx = RMQ_IMM_RING_PEER(imm);
	uint32_t          start = RMQ_IMM_RING_SLOT(imm);
	struct rmq_peer  *p   = rmq_peer_at(s, (int) idx);
	struct ring_peer *rp  = p != NULL ? ring_of(p) : NULL;
	struct rmq_rxent *e;
	struct rmq_hdr    h;
	uint32_t          k, pad = 0, found;
	uint8_t          *at;
	bool              batch;

	if (rp == NULL || rp->ring == NULL || p->state == RMQ_PEER_DEAD) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_DEBUG, "ring write for unknown peer %u", idx);
		return;
	}
	if (start >= rp->slots) {
		ring_bad(s, p, "slot out of range");
		return;
	}
	if (start != rp->head) {
		if (start != 0) {
			ring_bad(s, p, "slot out of order");
			return;
		}
		pad = rp->slots - rp->head; /* it skipped to 0 */
	}
	at = rp->ring + (size_t) start * rp->slot;
	RMQ_MEM_WRITTEN(at, RMQ_HDR_SIZE);
	if (rmq_hdr_decode(&h, at, RMQ_HDR_SIZE) != 0 ||
	    ((h.type & RMQ_MT_MASK) != RMQ_MT_RING &&
	     (h.type & RMQ_MT_MASK) != RMQ_MT_RBATCH) ||
	    h.conn != p->id) {
		ring_bad(s, p, "bad header");
		return;
	}
	batch = (h.type & RMQ_MT_MASK) == RMQ_MT_RBATCH;
	k = slots_for(rp->slot, h.len);
	if (h.len > (size_t) (rp->slots - start) * rp->slot - RMQ_HDR_SIZE ||
	    k > rp->slots / 4 ||
	    rp->taken + pad + k - (rp->freed - rp->owed) > rp->slots) {
		ring_bad(s, p, "longer than its slots, or beyond its credit");
		return;
	}
	RMQ_MEM_WRITTEN(at + RMQ_HDR_SIZE, h.len);
	if (batch && rmq_batch_check(at + RMQ_HDR_SIZE, h.len, h.msgid,
	                             &found) != 0) {
		ring_bad(s, p, "malformed batch");
		return;
	}
	rp->head = (start + k) % rp->slots;
	rp->taken += pad + k;
	p->credits += h.credits;
	if (batch) {
		rmq_rx_batch(s, p, at + RMQ_HDR_SIZE, h.msgid, RMQ_PATH_RING,
		             NULL);
	} else if ((e = rmq_rx_new(s, p, h.msgid)) != NULL) {
		e->path = RMQ_PATH_RING;
		e->len  = h.len;
		e->data = at + RMQ_HDR_SIZE;
		(void) rmq_rx_accept(s, p, e);
	}
	/* Its slots (and any padding before them) go back with the newest
	 * of p's ring messages still queued -- this one, or the batch's
	 * last, unless dropped on arrival (RMQ_MAXMSGSIZE, no memory) --
	 * when that is released, or now. */
	ring_settle(s, p, rp->taken);
}

/* Mixed with other paths by size it also needs c->ordered (select.c). */
static bool
ring_usable(const struct rmq_caps *c, const char **why)
{
	return rmq_caps_writedata(c, why) &&
	       rmq_caps_need(!(c->prov->flags & RMQ_PROV_UNORDERED_RMA) ||
	                         c->ordered,
	                     "its writes may land out of order, and the ring "
	                     "takes them in order",
	                     why);
}

static bool
ring_describe(const struct rmq_caps *c, const struct rmq_config *cfg,
              char *buf, size_t len)
{
	RMQ_UNUSED(c);
	buf[0] = '\0';
	if (cfg->ring_slots >= 4)
		return true;
	snprintf(buf, len, "ring.slots is %d (below 4)", cfg->ring_slots);
	return false;
}

const struct rmq_path_ops rmq_path_ring = {
	.flags     = RMQ_ROW_F_COALESCE,
	.range     = RMQ_RANGE_RING,
	.usable    = ring_usable,
	.describe  = ring_describe,
	.batch_cap  = ring_batch_cap,
	.batch_post = ring_batch_post,
	.batch_mt   = RMQ_MT_RBATCH,
	.rx_types  = 1u << RMQ_MT_RCREDIT,
	.imm_kind  = RMQ_IMM_RING,
	.can_carry = ring_can_carry,
	.has_room  = ring_has_room,
	.send      = ring_send,
	.on_rx     = ring_credit_rx,
	.on_imm    = ring_imm,
	.release   = ring_release,
	.peer_fini = ring_peer_fini,
	.hello_out = ring_hello_out,
	.hello_in  = ring_hello_in,
};
