/*
 * Messages of several frames (frames.h).
 *
 * On the wire a frame is a message of its own, carried by whatever path
 * its size picks, with RMQ_MSGID_MORE in its msgid but the last (wire.h).
 * Sending: the first frame goes through the pattern, which chooses the
 * peers as for any message; rmq_pat_send notes each peer it went to (and
 * the msgid it carried), and the frames after it go to those peers, in
 * order, through the pattern's send_more or without the pattern.  They
 * take no credit and wait for what they need (RMQ_XFER_F_CONT): once a
 * message has begun it must end, or its receivers would hold its first
 * frames for ever.  A peer that died between frames gets no more of it;
 * its receiver drops what it had.
 *
 * Receiving: a peer's message is taken only once its last frame is in
 * (rxq.h); its first frame comes from the pattern (which fair-queues and
 * filters messages, and may put frames of its own before it: a ROUTER's
 * routing id), the rest from the same peer, one per receive, before
 * anything else.  RMQ_RCVMORE says whether more follow.
 */
#include <stdlib.h>
#include <string.h>

#include "conn/peer.h"
#include "frames.h"
#include "msg.h"
#include "path_ops.h"
#include "pattern.h"
#include "pattern_ops.h"
#include "rxq.h"
#include "socket.h"
#include "xfer.h"

int
rmq_pat_send_rest(struct rmq_socket *s, const struct rmq_out *o, int flags)
{
	struct rmq_frame_to *t;
	struct rmq_out       out = *o;
	struct rmq_peer     *p;
	int                  i, n = s->ntx, sent = 0, rc = 0, fl;

	/* To one peer, a message goes as it is; else each takes a copy,
	 * and the message is ours. */
	if (o->msg != NULL) {
		out.buf = rmq_msg_data(o->msg);
		out.len = rmq_msg_size(o->msg);
		if (n != 1)
			out.msg = NULL;
	}
	for (i = 0; i < n; i++) {
		t = &s->tx_to[i];
		p = rmq_peer_lookup(s, t->peer);
		if (p == NULL || !rmq_peer_usable(p)) {
			rc = -RMQ_ECONNRESET; /* it drops what it had */
			continue;
		}
		/* The first frame it gets takes the message's credit. */
		fl = (flags & RMQ_SNDMORE) |
		     (n > 1 || s->pat->own_sends ? RMQ_XFER_F_OWN : 0) |
		     (t->first ? 0 : RMQ_XFER_F_CONT);
		rc = rmq_xfer_send(s, p, &out, t->msgid, fl);
		if (rc == 0)
			t->first = false;
		sent += rc == 0;
	}
	if (!(flags & RMQ_SNDMORE)) {
		s->tx_open = false;
		s->ntx     = 0;
	}
	if (o->msg != NULL && n != 1)
		rmq_msg_free(o->msg); /* copied to each */
	/* To one peer, what became of it (a message of one frame would
	 * tell as much); to several, or none, sent to each that is there:
	 * the first frame went to them alone. */
	return n == 1 ? rc : 0;
}

int
rmq_frames_send(struct rmq_socket *s, const struct rmq_out *o, int flags)
{
	bool more = (flags & RMQ_SNDMORE) != 0;
	int  rc;

	if (s->tx_open) {
		rc = s->pat->send_more != NULL
		         ? s->pat->send_more(s->pstate, s, o, flags)
		         : rmq_pat_send_rest(s, o, flags);
		if (!more) {
			s->tx_open = false;
			s->ntx     = 0;
		}
		return rc;
	}
	s->ntx     = 0;
	s->tx_note = more;
	rc         = s->pat->send(s->pstate, s, o, flags);
	s->tx_note = false;
	if (rc == 0)
		s->tx_open = more;
	return rc;
}

struct rmq_rxent *
rmq_pat_rx_made(struct rmq_socket *s, struct rmq_peer *p, const void *data,
                size_t len)
{
	struct rmq_rxent *e = rmq_rxent_new(s);

	if (e == NULL)
		return NULL;
	/* Not copied: it stays while p does, and p is held until the
	 * frame is handed out (a copy was a malloc per request). */
	e->peer     = p;
	e->path     = 0; /* no path carried it: no row is asked (made) */
	e->len      = len;
	e->data     = (uint8_t *) (uintptr_t) data;
	e->nocredit = true;
	e->more     = true;
	e->made     = true;
	return e;
}

void
rmq_pat_rx_unmake(struct rmq_socket *s, struct rmq_rxent *e)
{
	if (e != NULL)
		rmq_rxent_free(s, e);
}

void
rmq_pat_rx_then(struct rmq_socket *s, struct rmq_rxent *e)
{
	/* Out of its queue, it may point into its peer's memory: the peer
	 * stays until it is handed out. */
	rmq_peer_hold(e->peer);
	s->rx_pre[s->rx_npre++] = e;
}

/* The peer whose message is being taken: held until its last frame. */
static void
pin(struct rmq_socket *s, const struct rmq_rxent *e)
{
	if (!e->more || s->rx_ipre < s->rx_npre)
		return;
	s->rx_cur = e->peer;
	rmq_peer_hold(s->rx_cur);
}

int
rmq_frames_recv(struct rmq_socket *s, int flags, struct rmq_rxent **e)
{
	struct rmq_peer *p = s->rx_cur;
	int              rc;

	if (s->rx_ipre < s->rx_npre) {
		/* What the pattern put after the frame it gave. */
		*e          = s->rx_pre[s->rx_ipre++];
		s->rx_unhold = (*e)->peer; /* once it is handed out */
		if (s->rx_ipre == s->rx_npre)
			s->rx_ipre = s->rx_npre = 0;
		pin(s, *e);
	} else if (p != NULL) {
		/* The rest of the message being taken: all of it is in. */
		*e = rmq_rxq_pop(s, &p->q);
		if (*e == NULL) {
			s->rx_cur = NULL;
			rmq_peer_release(s, p);
			return -RMQ_EPROTO;
		}
	} else {
		rc = s->pat->recv(s->pstate, s, e, flags);
		if (rc != 0)
			return rc;
		pin(s, *e);
	}
	s->rx_more = (*e)->more;
	return 0;
}

void
rmq_frames_done(struct rmq_socket *s)
{
	struct rmq_peer *p = s->rx_cur;

	if (s->rx_unhold != NULL) {
		rmq_peer_release(s, s->rx_unhold);
		s->rx_unhold = NULL;
	}
	if (p == NULL || s->rx_more)
		return;
	s->rx_cur = NULL;
	rmq_peer_release(s, p);
}

bool
rmq_frames_rx_open(const struct rmq_socket *s)
{
	return s->rx_cur != NULL || s->rx_ipre < s->rx_npre;
}

void
rmq_frames_fini(struct rmq_socket *s)
{
	struct rmq_rxent *e;
	struct rmq_peer  *p;

	while (s->rx_ipre < s->rx_npre) {
		e = s->rx_pre[s->rx_ipre++];
		p = e->peer;
		rmq_rxent_free(s, e);
		rmq_peer_release(s, p);
	}
	s->rx_ipre = s->rx_npre = 0;
	rmq_frames_done(s);
	if (s->rx_cur != NULL)
		rmq_peer_release(s, s->rx_cur);
	s->rx_cur = NULL;
	free(s->tx_to);
	s->tx_to  = NULL;
	s->ntx    = 0;
	s->tx_cap = 0;
}
