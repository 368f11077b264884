/*
 * inject: header + payload on the stack, fi_inject: no completion.  Where
 * the provider carries 8 bytes of remote CQ data (not strict), a payload
 * too big to sit beside its header goes fi_injectdata with the header as
 * the data.  It lands as a DATA message in one of the receiver's slabs,
 * which the eager row takes in (eager.c).  Its short way (send_now) is the
 * fabric link's (link/fabric.c).
 */
#include <stdio.h>
#include <string.h>

#include <rdma/fi_endpoint.h>

#include "caps.h"
#include "conn/peer.h"
#include "ep.h"
#include "msg.h"
#include "paths/batch.h"
#include "paths/path.h"
#include "paths/tx.h"
#include "socket.h"
#include "util.h"

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
static int
inject_send_now(struct rmq_socket *s, struct rmq_peer *p, const void *buf,
                size_t len, uint32_t msgid)
{
	uint8_t        ib[RMQ_INJECT_BUF];
	struct rmq_hdr h;

	if (!s->paths.inject || len > s->paths.inject_max ||
	    s->paths.force >= 0 || !header_inline(s, len) ||
	    len > p->eager_max || (uint64_t) len > p->maxmsg ||
	    p->state != RMQ_PEER_LIVE || p->credits == 0 ||
	    s->inflight >= s->sndhwm || !rmq_batch_alone(p, s->ps->bat.on))
		return 1;
	if (fi_inject(rmq_peer_ep(s, p), ib,
	              inject_fill(ib, &h, p, msgid, buf, len), p->fiaddr) != 0) {
		p->owed += h.credits; /* the general path tries again */
		return 1;
	}
	rmq_tx_sent(s, p, RMQ_PATH_INJECT, len);
	if (s->ps->bat.on)
		rmq_batch_sent_alone(p, 0);
	return 0;
}

static bool
inject_usable(const struct rmq_caps *c, const char **why)
{
	return rmq_caps_need(c->inject,
	                     "its inject size cannot hold librmq's header", why);
}

const struct rmq_path_ops rmq_path_inject = {
	.flags     = RMQ_ROW_F_COALESCE | RMQ_ROW_F_NO_SLOT,
	.range     = RMQ_RANGE_INJECT,
	.usable    = inject_usable,
	.can_carry = inject_can_carry,
	.send      = inject_send,
	.send_now  = inject_send_now,
};
