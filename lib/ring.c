/*
 * The ring path: one-sided writes into a per-peer ring in the receiver's
 * registered memory.
 *
 * The receiver allocates a ring of ring.slots slots of ring.slot_size bytes
 * for every peer, registers it FI_REMOTE_WRITE only, and announces it in the
 * HELLO.  A message takes ceil((16 + len) / slot) consecutive slots and never
 * wraps: when it does not fit before the end, the sender skips to slot 0
 * and the skipped slots count as used.  The sender fi_writedata's the
 * header and payload from a registered tx slot; the 32-bit immediate names
 * the receiver's peer slot and the ring slot (wire.h).  The receiver learns
 * of the message from that completion only -- never from polling memory:
 * on tcp;ofi_rxm the bytes land only while the target progresses, and the
 * completion is what says they have.
 *
 * Flow control is in slots: the sender starts with all of them; the
 * receiver frees a message's slots (and any padding before it) when the
 * application takes it, and returns them in an RCREDIT message once a
 * quarter of the ring is free.  A message takes at most a quarter of the
 * ring, so a sender waiting for room always has a credit on its way.
 * Every message also costs one message credit (RCVHWM), as on every path.
 */
#include <stdlib.h>
#include <string.h>

#include "rmq_int.h"

int
rmq_ring_rx_init(struct rmq_socket *s, struct rmq_peer *p)
{
	const struct rmq_config *cfg = &s->ctx->cfg;
	size_t                   bytes;
	uint32_t                 idx = p->id & 0xffff;
	int                      rc;

	if (!s->paths.ring_ok || idx >= RMQ_RING_PEERS_MAX)
		return 0; /* no ring: the peer will not use the path */
	p->ring_slots = (uint32_t) cfg->ring_slots;
	p->ring_slot  = cfg->ring_slot_size;
	bytes         = (size_t) p->ring_slots * p->ring_slot;
	p->ring       = rmq_numa_alloc(&s->ctx->numa, &s->dom->place, bytes,
	                               &p->ring_mem);
	if (p->ring == NULL)
		return -RMQ_ENOMEM;
	/* Remote write only: the peer can neither read it nor more. */
	rc = rmq_mr_reg(s, p->ring, bytes, FI_REMOTE_WRITE, &p->ring_mr, NULL,
	                NULL);
	if (rc != 0) {
		rmq_numa_free(p->ring, &p->ring_mem);
		p->ring       = NULL;
		p->ring_slots = 0;
	}
	return rc;
}

void
rmq_ring_rx_free(struct rmq_peer *p)
{
	if (p->ring_mr != NULL)
		fi_close(&p->ring_mr->fid);
	p->ring_mr = NULL;
	rmq_numa_free(p->ring, &p->ring_mem);
	p->ring       = NULL;
	p->ring_slots = 0;
}

static uint32_t
slots_for(size_t slot, size_t len)
{
	return (uint32_t) ((RMQ_HDR_SIZE + len + slot - 1) / slot);
}

void
rmq_ring_release(struct rmq_socket *s, struct rmq_peer *p, uint64_t end)
{
	if (end <= p->ring_freed)
		return;
	p->ring_owed += (uint32_t) (end - p->ring_freed);
	p->ring_freed = end;
	if (p->state == RMQ_PEER_LIVE && s->ep != NULL &&
	    p->ring_owed >= p->ring_slots / 4) {
		uint32_t n = p->ring_owed;

		p->ring_owed = 0;
		if (rmq_xfer_ctl(s, p, RMQ_MT_RCREDIT, 0, n) != 0 &&
		    p->state == RMQ_PEER_LIVE)
			p->ring_owed += n; /* try again with the next one */
	}
}

static int
post_writedata(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
               struct rmq_tx *tx, size_t n, uint64_t raddr, uint32_t imm)
{
	ssize_t rc;

	rc = rmq_strict_desc(s, s->tx_desc, "fi_writedata");
	if (rc != 0)
		return (int) rc;
	do
		rc = fi_writedata(s->ep, tx->buf, n, s->tx_desc, imm, p->fiaddr,
		                  raddr, p->rring_key, &tx->op.fctx);
	while (rmq_post_again(s, p, w, &rc, "fi_writedata"));
	return (int) rc;
}

int
rmq_ring_send(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
              const void *src, size_t len, uint32_t msgid)
{
	uint32_t       k, start, pad, slots = p->rring_slots;
	struct rmq_hdr h;
	struct rmq_tx *tx;
	uint64_t       raddr;
	int            rc;

	if (slots == 0)
		return -RMQ_ENOTSUP;
	k = slots_for(p->rring_slot, len);
	if (k > slots / 4 || RMQ_HDR_SIZE + len > s->tx_slot)
		return -RMQ_EMSGSIZE;
	start = p->rring_tail;
	pad   = 0;
	if (start + k > slots) {
		pad   = slots - start;
		start = 0;
	}
	/* Room in its ring: blocks, or -RMQ_EAGAIN when the waiter says. */
	while (p->rring_free < (int64_t) (pad + k)) {
		if (p->state == RMQ_PEER_DEAD)
			return -RMQ_ECONNRESET;
		if (rmq_progress(s) > 0)
			continue;
		rmq_xfer_pull_pending(s);
		if (rmq_wait_idle(s, w) != 0)
			return -RMQ_EAGAIN;
	}
	rc = rmq_tx_get(s, p, w, &tx);
	if (rc != 0)
		return rc;
	rmq_hdr_fill(&h, p, RMQ_MT_RING, msgid, (uint32_t) len);
	rmq_hdr_encode(tx->buf, &h);
	if (len > 0)
		memcpy(tx->buf + RMQ_HDR_SIZE, src, len);
	raddr = p->rring_addr + (uint64_t) start * p->rring_slot;
	rc    = post_writedata(s, p, w, tx, RMQ_HDR_SIZE + len, raddr,
	                       RMQ_IMM_RING_MAKE(p->rid & 0xffff, start));
	if (rc != 0) {
		p->owed += h.credits;
		rmq_tx_put(s, tx);
		return rc;
	}
	tx->peer = p;
	p->pending++;
	s->inflight++;
	p->rring_free -= pad + k;
	p->rring_tail = (start + k) % slots;
	return 0;
}

static void
ring_bad(struct rmq_socket *s, struct rmq_peer *p, const char *why)
{
	s->stats.proto_errors++;
	rmq_log(RMQ_LOG_WARN, "bad ring message from %s: %s", p->name, why);
	rmq_peer_fail(s, p, -RMQ_EPROTO, why);
}

/* A ring message landed: check it against what we granted, queue it. */
static void
ring_rx(struct rmq_socket *s, uint32_t idx, uint32_t start)
{
	struct rmq_peer  *p;
	struct rmq_rxent *e;
	struct rmq_hdr    h;
	uint32_t          k, pad = 0;
	uint8_t          *at;

	p = idx < (uint32_t) s->peers_cap ? s->peers[idx] : NULL;
	if (p == NULL || p->ring == NULL || p->state == RMQ_PEER_DEAD) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_DEBUG, "ring write for unknown peer %u", idx);
		return;
	}
	if (start >= p->ring_slots) {
		ring_bad(s, p, "slot out of range");
		return;
	}
	if (start != p->ring_head) {
		if (start != 0) {
			ring_bad(s, p, "slot out of order");
			return;
		}
		pad = p->ring_slots - p->ring_head; /* it skipped to 0 */
	}
	at = p->ring + (size_t) start * p->ring_slot;
	if (rmq_hdr_decode(&h, at, RMQ_HDR_SIZE) != 0 ||
	    (h.type & RMQ_MT_MASK) != RMQ_MT_RING || h.conn != p->id) {
		ring_bad(s, p, "bad header");
		return;
	}
	k = slots_for(p->ring_slot, h.len);
	if (h.len > (size_t) (p->ring_slots - start) * p->ring_slot -
	                RMQ_HDR_SIZE ||
	    k > p->ring_slots / 4 ||
	    p->ring_taken + pad + k - (p->ring_freed - p->ring_owed) >
	        p->ring_slots) {
		ring_bad(s, p, "longer than its slots, or beyond its credit");
		return;
	}
	p->ring_head = (start + k) % p->ring_slots;
	p->ring_taken += pad + k;
	p->credits += h.credits;
	p->recvd++;
	e = rmq_rxent_new(s);
	if (e == NULL) {
		s->stats.dropped++;
		rmq_ring_release(s, p, p->ring_taken);
		rmq_consumed(s, p);
		return;
	}
	e->peer     = p;
	e->msgid    = h.msgid;
	e->path     = RMQ_PATH_RING;
	e->len      = h.len;
	e->data     = at + RMQ_HDR_SIZE;
	e->ring_end = p->ring_taken;
	if (s->maxmsg >= 0 && e->len > (uint64_t) s->maxmsg) {
		rmq_log(RMQ_LOG_WARN,
		        "dropped a %zu-byte message from %s: larger than "
		        "RMQ_MAXMSGSIZE %lld",
		        e->len, p->name, (long long) s->maxmsg);
		s->stats.dropped++;
		rmq_rxent_free(s, e);
		rmq_consumed(s, p);
		return;
	}
	rmq_rxq_push(s, p, e);
}

static void
write_rx(struct rmq_socket *s, uint32_t id)
{
	struct rmq_grant *g;

	for (g = s->grants; g != NULL; g = g->next)
		if (g->id == id && !g->done)
			break;
	if (g == NULL) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "write for unknown grant %u dropped", id);
		return;
	}
	g->done = true;
}

void
rmq_xfer_imm(struct rmq_socket *s, uint64_t data)
{
	if (data >> 32 != 0) {
		/* Strict or not: we never send more than 4 bytes. */
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "remote CQ data wider than 32 bits");
		return;
	}
	switch (RMQ_IMM_KIND(data)) {
	case RMQ_IMM_RING:
		ring_rx(s, RMQ_IMM_RING_PEER(data), RMQ_IMM_RING_SLOT(data));
		break;
	case RMQ_IMM_WRITE:
		write_rx(s, RMQ_IMM_WRITE_ID(data));
		break;
	default:
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "unknown remote CQ data %#llx",
		        (unsigned long long) data);
		break;
	}
}

int
rmq_strict_desc(struct rmq_socket *s, const void *desc, const char *op)
{
	if (!s->dom->caps.strict || desc != NULL)
		return 0;
	rmq_log(RMQ_LOG_ERROR,
	        "strict mode: %s posted without a memory descriptor "
	        "(FI_MR_LOCAL)",
	        op);
	return -RMQ_EPROTO;
}
