/*
 * Messages of several frames (frames.h).
 *
 * On the wire a frame is a message of its own, carried by whatever path
 * its size picks, with RMQ_MSGID_MORE in its msgid but the last (wire.h).
 * Sending: the first frame goes through the pattern, which chooses the
 * peers as for any message; rmq_pat_send notes each peer it went to (and
 * the msgid it carried), and the frames after it go to those peers, in
 * order, without the pattern.  They take no credit and wait for what they
 * need (RMQ_XFER_F_CONT): once a message has begun it must end, or its
 * receivers would hold its first frames for ever.  A peer that died
 * between frames gets no more of it; its receiver drops what it had.
 *
 * Receiving: a peer's message is taken only once its last frame is in
 * (rxq.h); its first frame comes from the pattern (which fair-queues and
 * filters messages), the rest from the same peer, one per receive, before
 * anything else.  RMQ_RCVMORE says whether more follow.
 */
#include <stdlib.h>

#include "conn/peer.h"
#include "frames.h"
#include "msg.h"
#include "pattern_ops.h"
#include "rxq.h"
#include "socket.h"
#include "xfer.h"

/* The frames after the first, to the peers the first went to. */
static int
send_rest(struct rmq_socket *s, const struct rmq_out *o, int flags)
{
	struct rmq_out   out = *o;
	struct rmq_peer *p;
	int              i, n = s->ntx, sent = 0, rc = 0, fl;

	/* To one peer, a message goes as it is; else each takes a copy,
	 * and the message is ours. */
	if (o->msg != NULL) {
		out.buf = rmq_msg_data(o->msg);
		out.len = rmq_msg_size(o->msg);
		if (n != 1)
			out.msg = NULL;
	}
	fl = (flags & RMQ_SNDMORE) | RMQ_XFER_F_CONT |
	     (n > 1 ? RMQ_XFER_F_OWN : 0);
	if (s->pat->send_more != NULL &&
	    s->pat->send_more(s->pstate, s, &out, flags) == 0)
		sent++; /* it copies */
	for (i = 0; i < n; i++) {
		p = rmq_peer_lookup(s, s->tx_to[i].peer);
		if (p == NULL || !rmq_peer_usable(p)) {
			rc = -RMQ_ECONNRESET; /* it drops what it had */
			continue;
		}
		rc = rmq_xfer_send(s, p, &out, s->tx_to[i].msgid, fl);
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
	if (n != 1)
		return 0;
	if (rc != 0 && sent > 0 && o->msg != NULL)
		rmq_msg_free(o->msg); /* its other copy went */
	return sent > 0 ? 0 : rc;
}

int
rmq_frames_send(struct rmq_socket *s, const struct rmq_out *o, int flags)
{
	bool more = (flags & RMQ_SNDMORE) != 0;
	int  rc;

	if (s->tx_open)
		return send_rest(s, o, flags);
	s->ntx     = 0;
	s->tx_note = more;
	rc         = s->pat->send(s->pstate, s, o, flags);
	s->tx_note = false;
	if (rc == 0)
		s->tx_open = more;
	return rc;
}

int
rmq_frames_recv(struct rmq_socket *s, int flags, struct rmq_rxent **e)
{
	struct rmq_peer *p = s->rx_cur;
	int              rc;

	if (p != NULL) {
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
		if ((*e)->more) {
			s->rx_cur = (*e)->peer;
			rmq_peer_hold(s->rx_cur);
		}
	}
	s->rx_more = (*e)->more;
	return 0;
}

void
rmq_frames_done(struct rmq_socket *s)
{
	struct rmq_peer *p = s->rx_cur;

	if (p == NULL || s->rx_more)
		return;
	s->rx_cur = NULL;
	rmq_peer_release(s, p);
}

bool
rmq_frames_rx_open(const struct rmq_socket *s)
{
	return s->rx_cur != NULL;
}

void
rmq_frames_fini(struct rmq_socket *s)
{
	if (s->rx_cur != NULL)
		rmq_peer_release(s, s->rx_cur);
	s->rx_cur = NULL;
	free(s->tx_to);
	s->tx_to  = NULL;
	s->ntx    = 0;
	s->tx_cap = 0;
}
