/*
 * seg: the message in eager-sized pieces, each a two-sided send from a tx
 * slot (SEG: the header, the message's total length, a piece), reassembled
 * in a heap buffer at the receiver.  For providers without RMA, and as
 * the last resort for any size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn/peer.h"
#include "ctx.h"
#include "msg.h"
#include "paths/path.h"
#include "paths/tx.h"
#include "progress.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

/* This path's state for one peer: the message being reassembled. */
struct seg_peer {
	struct rmq_rxent *e;    /* NULL: none under way */
	size_t            have;
	uint64_t          skip; /* bytes of a dropped message to eat */
};

static int
seg_send(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_out *o,
         uint32_t msgid, int flags, struct rmq_waiter *w)
{
	const uint8_t *src   = o->buf;
	size_t         len   = o->len, piece = p->eager_max, off = 0, n;
	struct rmq_hdr h;
	struct rmq_tx *tx;
	bool           first = true;
	int            rc;

	RMQ_UNUSED(flags);
	/* Its slabs take eager_max + 16 bytes; our slots tx.slot. */
	if (piece + RMQ_HDR_SIZE > s->ps->tx.slot)
		piece = s->ps->tx.slot - RMQ_HDR_SIZE;
	piece = piece > RMQ_SEG_EXT_SIZE ? piece - RMQ_SEG_EXT_SIZE : 1;
	do {
		n  = len - off < piece ? len - off : piece;
		rc = rmq_tx_get(s, p, w, &tx);
		if (rc == -RMQ_EAGAIN && !first) {
			/* Started: the rest must follow, whatever the timeout. */
			rmq_waiter_init(w, -1);
			continue;
		}
		if (rc != 0)
			return rc;
		rmq_hdr_fill(&h, p, RMQ_MT_SEG, msgid, (uint32_t) n);
		rmq_hdr_encode(tx->buf, &h);
		rmq_seg_encode(tx->buf + RMQ_HDR_SIZE, (uint64_t) len);
		if (n > 0)
			rmq_copy(tx->buf + RMQ_SEG_HDR_SIZE, src + off, n);
		if (!first)
			rmq_waiter_init(w, -1);
		rc = rmq_tx_post(s, p, w, tx, RMQ_SEG_HDR_SIZE + n, NULL);
		if (rc != 0) {
			p->owed += h.credits;
			if (!first)
				rmq_peer_fail(s, p, rc, "segmented send failed");
			return rc;
		}
		if (!first)
			p->sent++; /* the first is counted as the message */
		first = false;
		off += n;
	} while (off < len);
	rmq_tx_sent(s, p, RMQ_PATH_SEG, len);
	rmq_msg_free(o->msg); /* copied out */
	return 0;
}

static struct seg_peer *
seg_of(struct rmq_peer *p)
{
	if (p->path[RMQ_PATH_SEG] == NULL)
		p->path[RMQ_PATH_SEG] = calloc(1, sizeof(struct seg_peer));
	return p->path[RMQ_PATH_SEG];
}

static void
seg_bad(struct rmq_socket *s, struct rmq_peer *p, const char *why)
{
	s->stats.proto_errors++;
	rmq_log(RMQ_LOG_WARN, "bad segment from %s: %s", p->name, why);
	rmq_peer_fail(s, p, -RMQ_EPROTO, why);
}

/* A piece; the message is queued when its last piece is in. */
static void
seg_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rx *rx)
{
	const struct rmq_hdr *h     = rx->h;
	uint64_t              total = rmq_seg_decode(rx->ext);
	const uint8_t        *data  = rx->ext + RMQ_SEG_EXT_SIZE;
	struct seg_peer      *sp;
	struct rmq_rxent     *e;

	p->recvd++;
	sp = seg_of(p);
	if (sp == NULL) {
		seg_bad(s, p, "out of memory");
		return;
	}
	if (sp->skip > 0) {
		/* The rest of a message we dropped. */
		if (h->len > sp->skip) {
			seg_bad(s, p, "longer than its message");
			return;
		}
		sp->skip -= h->len;
		return;
	}
	if (sp->e == NULL) {
		if (h->len > total) {
			seg_bad(s, p, "piece longer than its message");
			return;
		}
		/* Too large alone (the whole message is checked once in,
		 * rmq_rx_accept), or no memory: eaten, its message dropped. */
		if ((s->maxmsg >= 0 && total > (uint64_t) s->maxmsg) ||
		    total > SIZE_MAX / 2) {
			rmq_log(RMQ_LOG_WARN,
			        "dropped a %llu-byte message from %s: larger "
			        "than RMQ_MAXMSGSIZE %lld",
			        (unsigned long long) total, p->name,
			        (long long) s->maxmsg);
			sp->skip = total - h->len;
			rmq_rx_lost(s, p, h->msgid);
			return;
		}
		e = rmq_rxent_new(s);
		if (e != NULL && (e->heap = malloc(total ? total : 1)) == NULL) {
			rmq_rxent_free(s, e);
			e = NULL;
		}
		if (e == NULL) {
			sp->skip = total - h->len;
			rmq_rx_lost(s, p, h->msgid);
			return;
		}
		rmq_rx_msgid(e, h->msgid);
		e->peer  = p;
		e->path  = RMQ_PATH_SEG;
		e->len   = total;
		sp->e    = e;
		sp->have = 0;
	}
	e = sp->e;
	if (total != e->len || h->len > e->len - sp->have) {
		seg_bad(s, p, "pieces do not add up");
		return;
	}
	if (h->len > 0)
		rmq_copy((uint8_t *) e->heap + sp->have, data, h->len);
	sp->have += h->len;
	if (sp->have == e->len) {
		sp->e = NULL;
		(void) rmq_rx_accept(s, p, e); /* RMQ_MAXMSGSIZE, frames */
	}
}

static void
seg_peer_fini(struct rmq_socket *s, struct rmq_peer *p)
{
	struct seg_peer *sp = p->path[RMQ_PATH_SEG];

	if (sp == NULL)
		return;
	if (sp->e != NULL)
		rmq_rxent_free(s, sp->e);
	free(sp);
	p->path[RMQ_PATH_SEG] = NULL;
}

const struct rmq_path_ops rmq_path_seg = {
	.rank      = 3, /* two-sided pieces: any provider, the last resort */
	.rx_types  = 1u << RMQ_MT_SEG,
	.send      = seg_send,
	.on_rx     = seg_rx,
	.peer_fini = seg_peer_fini,
};
