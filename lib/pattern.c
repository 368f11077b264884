/*
 * What the core offers a pattern (pattern.h): peers round-robin, messages
 * fair-queued and filtered, waiting, and the pattern's own blocks.
 */
#include <stdlib.h>

#include "conn/ctrl.h"
#include "conn/dial.h"
#include "conn/peer.h"
#include "link_ops.h"
#include "pattern.h"
#include "progress.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"
#include "xfer.h"

struct pat_wait {
	struct rmq_socket *s;
	int (*cond)(struct rmq_socket *, void *);
	void              *arg;
};

static int
pat_cond(void *a)
{
	struct pat_wait *pw = a;

	return pw->cond(pw->s, pw->arg);
}

int
rmq_pat_wait(struct rmq_socket *s, int flags, int timeout_ms,
             int (*cond)(struct rmq_socket *, void *), void *arg)
{
	struct pat_wait   pw = {s, cond, arg};
	struct rmq_waiter w;
	int               rc;

	/* Most calls find it so at once: no waiter for them. */
	rc = cond(s, arg);
	if (rc != 0)
		return rc > 0 ? 0 : rc;
	rmq_waiter_init(&w, (flags & RMQ_DONTWAIT) ? 0 : timeout_ms);
	return rmq_wait_until(&s->reactor, &w, 0, pat_cond, &pw);
}

/* No usable peer: can one still come?  0 to keep waiting, else why not.
 * A peer's death is reported once. */
static int
no_peer(struct rmq_socket *s)
{
	if (s->peers->lost) {
		s->peers->lost = false;
		return -RMQ_ECONNRESET;
	}
	if (!rmq_ctrl_listening(s) && !rmq_dial_pending(s))
		return -RMQ_ENOTCONN; /* nobody may come */
	return 0;
}

struct peer_wait {
	struct rmq_socket *s;
	struct rmq_peer  **pp;
};

static int
have_peer(void *arg)
{
	struct peer_wait *pw = arg;

	*pw->pp = rmq_peer_next(pw->s, &pw->s->rr, RMQ_PICK_USABLE);
	return *pw->pp != NULL ? 1 : no_peer(pw->s);
}

int
rmq_pat_next_peer(struct rmq_socket *s, int flags, int timeout_ms,
                  struct rmq_peer **pp)
{
	struct peer_wait  pw = {s, pp};
	struct rmq_waiter w;
	int               rc;

	/* Most sends find one at once: no waiter for them. */
	rc = have_peer(&pw);
	if (rc != 0)
		return rc > 0 ? 0 : rc;
	rmq_waiter_init(&w, (flags & RMQ_DONTWAIT) ? 0 : timeout_ms);
	return rmq_wait_until(&s->reactor, &w, 0, have_peer, &pw);
}

struct writable_wait {
	struct rmq_socket *s;
	struct rmq_peer  **pp;
};

static int
have_writable(void *arg)
{
	struct writable_wait *ww = arg;
	struct rmq_socket    *s  = ww->s;

	if (s->inflight < s->sndhwm) {
		*ww->pp = rmq_peer_next(s, &s->rr, RMQ_PICK_WRITABLE);
		if (*ww->pp != NULL)
			return 1;
	}
	if (s->peers->nlive > 0)
		return 0; /* one will have room */
	return no_peer(s);
}

int
rmq_pat_pick_writable(struct rmq_socket *s, struct rmq_peer **pp)
{
	struct writable_wait ww = {s, pp};

	*pp = NULL;
	return have_writable(&ww);
}

int
rmq_pat_next_writable(struct rmq_socket *s, int flags, int timeout_ms,
                      struct rmq_peer **pp)
{
	struct writable_wait ww = {s, pp};
	struct rmq_waiter    w;
	int                  rc;

	/* Most sends find one at once: no waiter for them. */
	rc = rmq_pat_pick_writable(s, pp);
	if (rc != 0)
		return rc > 0 ? 0 : rc;
	rmq_waiter_init(&w, (flags & RMQ_DONTWAIT) ? 0 : timeout_ms);
	return rmq_wait_until(&s->reactor, &w, RMQ_WAIT_IDLE, have_writable,
	                      &ww);
}

void
rmq_pat_progress(struct rmq_socket *s)
{
	(void) rmq_reactor_progress_timed(&s->reactor);
}

int
rmq_pat_sends_room(const struct rmq_socket *s, int n)
{
	return s->inflight == 0 || s->inflight + n <= s->sndhwm;
}

bool
rmq_pat_peer_writable(struct rmq_socket *s, const struct rmq_peer *p)
{
	return rmq_peer_has_credit(p) && s->inflight < s->sndhwm;
}

bool
rmq_pat_peer_host(const struct rmq_peer *p)
{
	return (p->link->flags & RMQ_LINK_F_HOST) != 0;
}

/* Room to note one more peer a message's first frame goes to (before it
 * goes: a first frame whose peer could not be noted would leave its
 * receiver waiting for the rest).  0 or -RMQ_ENOMEM. */
static int
note_room(struct rmq_socket *s)
{
	struct rmq_frame_to *n;
	int                  cap;

	if (s->ntx < s->tx_cap)
		return 0;
	cap = s->tx_cap < 4 ? 4 : 2 * s->tx_cap;
	n   = realloc(s->tx_to, (size_t) cap * sizeof(*n));
	if (n == NULL)
		return -RMQ_ENOMEM;
	s->tx_to  = n;
	s->tx_cap = cap;
	return 0;
}

int
rmq_pat_send_later(struct rmq_socket *s, struct rmq_peer *p, uint32_t msgid)
{
	int rc = note_room(s);

	if (rc == 0)
		s->tx_to[s->ntx++] = (struct rmq_frame_to){p->id, msgid, true};
	return rc;
}

int
rmq_pat_send(struct rmq_socket *s, struct rmq_peer *p,
             const struct rmq_out *o, uint32_t msgid, int flags)
{
	uint32_t id = p->id;
	int      rc;

	/* The first frame of several: the rest follow it there
	 * (frames.c). */
	if (s->tx_note && (rc = note_room(s)) != 0)
		return rc;
	rc = rmq_xfer_send(s, p, o, msgid, flags);
	if (rc == 0 && s->tx_note)
		s->tx_to[s->ntx++] = (struct rmq_frame_to){id, msgid, false};
	return rc;
}

struct send_try {
	const struct rmq_out *o;
	int                   flags;
	rmq_pat_send_fn       to;
};

/*
 * One round over the peers with room, none waited for: 1 when one took
 * the message, 0 when each one's queue is full now (or none has a credit),
 * or why no peer may come.
 */
static int
send_round(struct rmq_socket *s, void *arg)
{
	const struct send_try *t = arg;
	struct rmq_peer       *p;
	int                    i, n = rmq_pat_npeers(s), rc;

	for (i = 0; i < (n > 0 ? n : 1); i++) {
		rc = rmq_pat_pick_writable(s, &p);
		if (rc <= 0)
			return rc;
		rc = t->to(s, p, t->o, 0, t->flags | RMQ_DONTWAIT);
		/* Full (it stopped reading, or died and we do not know yet),
		 * or died before the message was its own: the next one. */
		if (rc != -RMQ_EAGAIN && rc != -RMQ_ECONNRESET)
			return rc == 0 ? 1 : rc;
	}
	return 0;
}

int
rmq_pat_send_one(struct rmq_socket *s, const struct rmq_out *o, int flags,
                 rmq_pat_send_fn to)
{
	struct send_try  t = {o, flags, to != NULL ? to : rmq_pat_send};
	struct rmq_peer *p;
	int              rc;

	/*
	 * Several peers: the send waits for room at any of them, never for
	 * one in particular -- a peer whose queue is full (or that has yet
	 * to take a zero-copy rendezvous) must not hold up the others.  So
	 * every try is one that does not wait, and a large payload is copied
	 * as with RMQ_DONTWAIT (rmq_msg_send hands its message over).  A
	 * blocking try at one chosen puller once waited there for 10 s while
	 * the other read (check_pipeline's stalled puller, 8 KiB).
	 */
	if (rmq_pat_npeers(s) > 1)
		return rmq_pat_wait(s, flags, rmq_pat_sndtimeo(s), send_round,
		                    &t);
	/*
	 * One peer (or none yet): waiting for it is waiting for room, and a
	 * large send stays zero-copy, done when it returns (as a single-
	 * threaded program with several sockets needs: check_pipeline's
	 * test_ring_peers lost messages at close when it copied).  A peer
	 * that died before the message was its own (its rendezvous
	 * unfinished, or before it went out): the message goes to another.
	 */
	for (;;) {
		rc = rmq_pat_next_writable(s, flags, rmq_pat_sndtimeo(s), &p);
		if (rc != 0)
			return rc;
		rc = t.to(s, p, o, 0, flags);
		if (rc != -RMQ_ECONNRESET)
			return rc;
	}
}

/* A message the filter refused, judged by its first frame e: all of its
 * frames go (counted once). */
static void
discard_message(struct rmq_socket *s, struct rmq_peer *p,
                struct rmq_rxent *e)
{
	bool more = e->more;

	/* Its other frames are in: a message is taken only whole. */
	rmq_peer_hold(p);
	rmq_xfer_discard(s, e);
	while (more && (e = rmq_rxq_pop(s, &p->q)) != NULL) {
		more = e->more;
		s->stats.dropped--; /* one message, counted once */
		rmq_xfer_discard(s, e);
	}
	rmq_peer_release(s, p); /* may free p */
}

void
rmq_pat_drop(struct rmq_socket *s, struct rmq_rxent *e)
{
	discard_message(s, e->peer, e);
}

int
rmq_pat_take(struct rmq_socket *s, struct rmq_rxent **e)
{
	struct rmq_peer *p;

	while (s->rx->nmsgs > 0) {
		p = rmq_peer_next(s, &s->rr_rx, RMQ_PICK_QUEUED);
		if (p == NULL)
			return 0;
		*e = rmq_rxq_pop(s, &p->q);
		if (s->pat->rx_filter == NULL ||
		    s->pat->rx_filter(s->pstate, s, *e))
			return 1;
		discard_message(s, p, *e);
	}
	return 0;
}

struct msg_wait {
	struct rmq_socket *s;
	struct rmq_rxent **e;
};

static int
have_msg(void *arg)
{
	struct msg_wait   *mw = arg;
	struct rmq_socket *s  = mw->s;

	if (s->rx->nmsgs > 0 && rmq_pat_take(s, mw->e))
		return 1;
	if (s->peers->nlive > 0 || rmq_peer_any_alive(s))
		return 0; /* one may still send */
	return no_peer(s);
}

int
rmq_pat_recv_any(struct rmq_socket *s, int flags, struct rmq_rxent **e)
{
	struct msg_wait   mw = {s, e};
	struct rmq_waiter w;
	int               rc;

	/* A message already queued: no waiter for it. */
	rc = have_msg(&mw);
	if (rc != 0)
		return rc > 0 ? 0 : rc;
	rmq_waiter_init(&w, (flags & RMQ_DONTWAIT) ? 0 : s->rcvtimeo);
	return rmq_wait_until(&s->reactor, &w, 0, have_msg, &mw);
}

bool
rmq_pat_readable(struct rmq_socket *s)
{
	struct rmq_peer  *p;
	struct rmq_rxent *e;
	size_t            n;
	bool              first;
	int               i;

	if (s->pat->rx_filter == NULL)
		return s->rx->nmsgs > 0;
	/* What take would not drop, behind what it would: each whole
	 * message judged by its first frame. */
	for (i = 0; s->rx->nmsgs > 0 && i < s->peers->cap; i++) {
		p = rmq_peer_at(s, i);
		if (p == NULL)
			continue;
		for (n = p->q.msgs, first = true, e = p->q.head;
		     n > 0 && e != NULL; e = e->next) {
			if (first && s->pat->rx_filter(s->pstate, s, e))
				return true;
			first = !e->more;
			n -= first;
		}
	}
	return false;
}

bool
rmq_pat_writable(struct rmq_socket *s)
{
	int cursor = 0;

	if (s->inflight >= s->sndhwm)
		return false;
	return rmq_peer_next(s, &cursor, RMQ_PICK_WRITABLE) != NULL;
}

int
rmq_pat_sndtimeo(const struct rmq_socket *s)
{
	return s->sndtimeo;
}

int
rmq_pat_rcvtimeo(const struct rmq_socket *s)
{
	return s->rcvtimeo;
}

struct rmq_peer *
rmq_pat_msg_peer(const struct rmq_rxent *e)
{
	return e->peer;
}

uint32_t
rmq_pat_peer_id(const struct rmq_peer *p)
{
	return p->id;
}

uint32_t
rmq_pat_msg_id(const struct rmq_rxent *e)
{
	return e->msgid;
}

const uint8_t *
rmq_pat_msg_data(const struct rmq_socket *s, const struct rmq_rxent *e,
                 size_t *len)
{
	*len = e->len;
	if (rmq_xfer_to_fetch(s, e))
		return NULL;
	return e->heap != NULL ? e->heap : e->data;
}

int
rmq_pat_ctrl_send(struct rmq_socket *s, struct rmq_peer *p, const void *body,
                  size_t len)
{
	return rmq_ctrl_send_pat(s, p, body, len);
}

int
rmq_pat_npeers(const struct rmq_socket *s)
{
	return s->peers->nlive;
}

void
rmq_pat_count_drop(struct rmq_socket *s)
{
	s->stats.dropped++;
}

void
rmq_pat_count_drops(struct rmq_socket *s, uint64_t n)
{
	s->stats.dropped += n;
}

void *
rmq_pat_peer_state(const struct rmq_peer *p)
{
	return p->pat;
}

struct rmq_peer *
rmq_pat_peer(struct rmq_socket *s, uint32_t id)
{
	struct rmq_peer *p = rmq_peer_lookup(s, id);

	return rmq_peer_usable(p) ? p : NULL;
}

bool
rmq_pat_peer_present(struct rmq_socket *s, uint32_t id)
{
	struct rmq_peer *p = rmq_peer_lookup(s, id);

	return p != NULL &&
	       (p->state == RMQ_PEER_NEW || p->state == RMQ_PEER_LIVE);
}

/* ---- ops a pattern may use as they are ---- */

int
rmq_pat_op_no_send(void *st, struct rmq_socket *s, const struct rmq_out *o,
                   int flags)
{
	RMQ_UNUSED(st);
	RMQ_UNUSED(s);
	RMQ_UNUSED(o);
	RMQ_UNUSED(flags);
	return -RMQ_ENOTSUP;
}

int
rmq_pat_op_no_recv(void *st, struct rmq_socket *s, struct rmq_rxent **e,
                   int flags)
{
	RMQ_UNUSED(st);
	RMQ_UNUSED(s);
	RMQ_UNUSED(e);
	RMQ_UNUSED(flags);
	return -RMQ_ENOTSUP;
}

int
rmq_pat_op_recv_any(void *st, struct rmq_socket *s, struct rmq_rxent **e,
                    int flags)
{
	RMQ_UNUSED(st);
	return rmq_pat_recv_any(s, flags, e);
}

int
rmq_pat_op_events_in(void *st, struct rmq_socket *s)
{
	RMQ_UNUSED(st);
	return rmq_pat_readable(s) ? RMQ_EV_IN : 0;
}

int
rmq_pat_op_events_out(void *st, struct rmq_socket *s)
{
	RMQ_UNUSED(st);
	return rmq_pat_writable(s) ? RMQ_EV_OUT : 0;
}
