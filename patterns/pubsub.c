/*
 * PUB/SUB (rmq_pubsub(7)).
 *
 * Subscriptions travel upstream on each publisher's control channel as
 * pattern frames, and the publisher filters: only matching messages cross
 * the fabric.  Frames (RMQ_CK_PAT bodies, little-endian):
 *
 *   u8 op | u32 seq | prefix bytes (SUBSCRIBE, UNSUBSCRIBE only)
 *
 *   SUB -> PUB   1 SUBSCRIBE    add the prefix (len 0: everything)
 *                2 UNSUBSCRIBE  remove it
 *                3 SYNC         the subscriptions at connect time are all
 *                               here (sent after them, once per peer)
 *   PUB -> SUB   4 ACK          every frame up to seq is applied
 *
 * A SUB counts its prefixes as ZeroMQ does and sends SUBSCRIBE only when
 * a prefix appears and UNSUBSCRIBE when it goes; RMQ_SUBSCRIBE returns
 * once every live publisher acknowledged.  When a publisher joins (either
 * side bound), the SUB sends it every prefix and SYNC, and the connecting
 * side's rmq_connect waits for SYNC (a PUB) or its ACK (a SUB): so a
 * matching message published once RMQ_SUBSCRIBE or rmq_connect returned
 * is delivered or counted as dropped, never lost to a slow join.
 *
 *   SUB                                PUB
 *    |--- SUBSCRIBE "a" (seq 7) ------->|  filter for this SUB += "a"
 *    |<-------------- ACK 7 ------------|
 *    |  setopt returns                  |  send "a..." -> this SUB
 *
 * High-water mark: a subscriber has room while it has credits (its
 * RMQ_RCVHWM).  A message for a full subscriber is dropped for it alone
 * and counted (rmq_stats().dropped, once per subscriber); with RMQ_NODROP
 * the publisher waits until every matching subscriber has room, then
 * sends to all, so a timed-out send reached none of them.
 */
#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "path_ops.h"
#include "pattern.h"
#include "topics.h"
#include "util.h"
#include "wire.h"

#define PS_NEWS_NS 50000 /* a send takes in news at most this often */
#define SUB_PREFIXES_MAX   10000 /* prefixes one subscriber may hold */

/* Is serial a at or after b (wrapping)? */
static bool
seq_reached(uint32_t a, uint32_t b)
{
	return (int32_t) (a - b) >= 0;
}

/* ---- SUB ---- */

static int
sub_tell(struct rmq_socket *s, struct sub_state *st, struct sub_peer *sp,
         int op, const void *prefix, size_t len)
{
	uint8_t b[SUB_FRAME_HDR + SUB_PREFIX_MAX];

	sp->want = ++st->seq;
	return rmq_pat_ctrl_send(s, sp->p, b,
	                         ps_frame(b, op, sp->want, prefix, len));
}

static void
sub_peer_added(void *stp, struct rmq_socket *s, struct rmq_peer *p, void *pp)
{
	struct sub_state *st = stp;
	struct sub_peer  *sp = pp, **n;
	int               i, cap;

	sp->p = p;
	if (st->npubs == st->cap) {
		cap = st->cap ? 2 * st->cap : 8;
		n   = realloc(st->pubs, (size_t) cap * sizeof(*n));
		if (n == NULL)
			return; /* its ACKs are not waited for */
		st->pubs = n;
		st->cap  = cap;
	}
	st->pubs[st->npubs++] = sp;
	/* Everything we subscribe to, then SYNC: its ACK says all is in. */
	for (i = 0; i < st->subs.n; i++)
		if (sub_tell(s, st, sp, SUB_OP_SUBSCRIBE, st->subs.v[i].b,
		             st->subs.v[i].len) != 0)
			return;
	(void) sub_tell(s, st, sp, SUB_OP_SYNC, NULL, 0);
}

static void
sub_peer_gone(void *stp, struct rmq_socket *s, struct rmq_peer *p, void *pp)
{
	struct sub_state *st = stp;
	int               i;

	RMQ_UNUSED(s);
	RMQ_UNUSED(p);
	for (i = 0; i < st->npubs; i++)
		if (st->pubs[i] == pp) {
			st->pubs[i] = st->pubs[--st->npubs];
			break;
		}
	ps_reader_gone(st, pp);
}

static bool
sub_peer_ready(void *stp, struct rmq_socket *s, struct rmq_peer *p, void *pp)
{
	const struct sub_peer *sp = pp;

	RMQ_UNUSED(stp);
	RMQ_UNUSED(s);
	RMQ_UNUSED(p);
	return seq_reached(sp->acked, sp->want);
}

static int
sub_ctrl_rx(void *stp, struct rmq_socket *s, struct rmq_peer *p, void *pp,
            const uint8_t *body, size_t len)
{
	struct sub_peer *sp = pp;
	uint32_t         seq;

	RMQ_UNUSED(p);
	if (len >= SUB_FRAME_HDR && body[0] == SUB_OP_LOG)
		return ps_reader_frame(s, stp, sp, body, len);
	if (len != SUB_FRAME_HDR || body[0] != SUB_OP_ACK)
		return -RMQ_EPROTO;
	seq = rmq_get32(body + 1);
	if (!seq_reached(sp->want, seq))
		return -RMQ_EPROTO; /* acknowledges what we never sent */
	if (seq_reached(seq, sp->acked))
		sp->acked = seq;
	return 0;
}

/* Every live publisher applied what we sent it. */
static int
all_acked(struct rmq_socket *s, void *arg)
{
	struct sub_state *st = arg;
	int               i;

	RMQ_UNUSED(s);
	for (i = 0; i < st->npubs; i++)
		if (!seq_reached(st->pubs[i]->acked, st->pubs[i]->want))
			return 0;
	return 1;
}

/* Tell every live publisher; wait (RMQ_SNDTIMEO) until all applied it. */
static int
sub_tell_all(struct rmq_socket *s, struct sub_state *st, int op,
             const void *prefix, size_t len)
{
	int i;

	/* A publisher whose channel fails is dropped from pubs meanwhile. */
	for (i = st->npubs - 1; i >= 0; i--)
		if (i < st->npubs)
			(void) sub_tell(s, st, st->pubs[i], op, prefix, len);
	return rmq_pat_wait(s, 0, rmq_pat_sndtimeo(s), all_acked, st);
}

static int
sub_setopt(void *stp, struct rmq_socket *s, int opt, const void *val,
           size_t len)
{
	struct sub_state *st = stp;
	int               i, rc;

	if (opt != RMQ_SUBSCRIBE && opt != RMQ_UNSUBSCRIBE)
		return -RMQ_EINVAL;
	if ((val == NULL && len > 0) || len > SUB_PREFIX_MAX)
		return -RMQ_EINVAL;
	i = ps_prefix_find(&st->subs, val, len);
	if (opt == RMQ_SUBSCRIBE) {
		if (i >= 0) {
			st->subs.v[i].count++;
			/* In place already, or on its way: wait as the first
			 * did. */
			return rmq_pat_wait(s, 0, rmq_pat_sndtimeo(s), all_acked,
			                    st);
		}
		rc = ps_prefix_add(&st->subs, val, len);
		if (rc != 0)
			return rc;
		return sub_tell_all(s, st, SUB_OP_SUBSCRIBE, val, len);
	}
	if (i < 0)
		return -RMQ_EINVAL;
	if (--st->subs.v[i].count > 0)
		return 0;
	ps_prefix_del(&st->subs, i);
	return sub_tell_all(s, st, SUB_OP_UNSUBSCRIBE, val, len);
}

/* Publishers filter; we filter again what arrived before an unsubscribe
 * reached them (where the payload is here to look at). */
static bool
sub_filter(void *stp, const struct rmq_socket *s, const struct rmq_rxent *e)
{
	struct sub_state *st = stp;
	const uint8_t    *b;
	size_t            len;

	if (st->subs.nall > 0)
		return true; /* without looking: a match costs every
		              * message (INTERNALS §17) */
	b = rmq_pat_msg_data(s, e, &len);
	return b == NULL || ps_match(&st->subs, b, len);
}

static void
sub_fini(void *stp)
{
	struct sub_state *st = stp;

	ps_readers_free(st);
	ps_prefixes_free(&st->subs);
	free(st->pubs);
}

/* ---- PUB ---- */

static void
pub_fini(void *stp)
{
	struct pub_state *st = stp;

	ps_log_free(st);
	free(st->subs);
	free(st->ids);
}

static void
pub_peer_added(void *stp, struct rmq_socket *s, struct rmq_peer *p, void *pp)
{
	struct pub_state *st = stp;
	struct pub_peer  *sp = pp, **n;
	int               cap;

	RMQ_UNUSED(s);
	sp->p   = p;
	sp->idx = -1;
	if (st->nsubs == st->cap) {
		cap = st->cap ? 2 * st->cap : 8;
		n   = realloc(st->subs, (size_t) cap * sizeof(*n));
		if (n == NULL)
			return; /* never synced: its connect fails */
		st->subs = n;
		st->cap  = cap;
	}
	st->subs[st->nsubs++] = sp;
	st->ids_n             = -1;
}

static void
pub_peer_gone(void *stp, struct rmq_socket *s, struct rmq_peer *p, void *pp)
{
	struct pub_state *st = stp;
	struct pub_peer  *sp = pp;
	int               i;

	RMQ_UNUSED(s);
	RMQ_UNUSED(p);
	for (i = 0; i < st->nsubs; i++)
		if (st->subs[i] == sp) {
			st->subs[i] = st->subs[--st->nsubs];
			break;
		}
	st->ids_n = -1;
	ps_log_leave(st, sp);
	ps_prefixes_free(&sp->subs);
}

static bool
pub_peer_ready(void *stp, struct rmq_socket *s, struct rmq_peer *p, void *pp)
{
	const struct pub_peer *sp = pp;

	RMQ_UNUSED(stp);
	RMQ_UNUSED(s);
	RMQ_UNUSED(p);
	return sp->synced;
}

static int
pub_ctrl_rx(void *stp, struct rmq_socket *s, struct rmq_peer *p, void *pp,
            const uint8_t *body, size_t len)
{
	struct pub_peer *sp = pp;
	uint8_t          ack[SUB_FRAME_HDR];
	const uint8_t   *prefix = body + SUB_FRAME_HDR;
	size_t           plen   = len - SUB_FRAME_HDR;
	int              i, rc = 0;

	if (len < SUB_FRAME_HDR || plen > SUB_PREFIX_MAX)
		return -RMQ_EPROTO;
	switch (body[0]) {
	case SUB_OP_SUBSCRIBE:
		if (ps_prefix_find(&sp->subs, prefix, plen) >= 0)
			break; /* a repeat changes nothing */
		if (sp->subs.n >= SUB_PREFIXES_MAX)
			return -RMQ_EPROTO;
		rc = ps_prefix_add(&sp->subs, prefix, plen);
		break;
	case SUB_OP_UNSUBSCRIBE:
		i = ps_prefix_find(&sp->subs, prefix, plen);
		if (i >= 0)
			ps_prefix_del(&sp->subs, i);
		break;
	case SUB_OP_SYNC:
		if (plen != 0 || sp->synced)
			return -RMQ_EPROTO;
		sp->synced = true;
		/* Onto the log (its LOG frame goes before this ACK). */
		ps_log_join(s, stp, sp);
		break;
	default:
		return -RMQ_EPROTO;
	}
	if (rc != 0)
		return rc == -RMQ_ENOMEM ? -RMQ_EPROTO : rc;
	(void) rmq_pat_ctrl_send(s, p, ack,
	                         ps_frame(ack, SUB_OP_ACK, rmq_get32(body + 1),
	                               NULL, 0));
	return 0;
}

struct pub_send {
	struct pub_state *st;
	const uint8_t    *b;
	size_t            len;
};

/* RMQ_NODROP: every matching subscriber has room, and our bound on sends
 * in flight takes them all. */
static int
all_have_room(struct rmq_socket *s, void *arg)
{
	struct pub_send *ps = arg;
	struct pub_peer *sp;
	int              i, n = 0;

	for (i = 0; i < ps->st->nsubs; i++) {
		sp = ps->st->subs[i];
		if (sp->mode != PS_PUSH || !ps_match(&sp->subs, ps->b, ps->len))
			continue;
		if (!rmq_pat_peer_writable(s, sp->p))
			return 0;
		n++;
	}
	/* More matches than RMQ_SNDHWM: all sends done before any new. */
	return rmq_pat_sends_room(s, n);
}

static int
snapshot(struct pub_state *st)
{
	uint32_t *n;
	int       i, cap;

	if (st->ids_n >= 0)
		return st->ids_n; /* nobody came or went since */
	if (st->nsubs > st->ids_cap) {
		cap = st->nsubs < 16 ? 16 : 2 * st->nsubs;
		n   = realloc(st->ids, (size_t) cap * sizeof(*n));
		if (n == NULL)
			return -RMQ_ENOMEM;
		st->ids     = n;
		st->ids_cap = cap;
	}
	for (i = 0; i < st->nsubs; i++)
		st->ids[i] = rmq_pat_peer_id(st->subs[i]->p);
	st->ids_n = st->nsubs;
	return st->ids_n;
}

/* One subscriber's copy; one it cannot take (too large for it, ...) is
 * a drop, one that died took nothing. */
static void
push_to(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_out *out,
        int flags)
{
	int rc = rmq_pat_send(s, p, out, 0,
	                      (flags & ~RMQ_DONTWAIT) | RMQ_XFER_F_OWN);

	if (rc != 0 && rc != -RMQ_ECONNRESET)
		rmq_pat_count_drop(s);
}

static int
pub_send(void *stp, struct rmq_socket *s, const struct rmq_out *o, int flags)
{
	struct pub_state *st  = stp;
	struct rmq_out    out = *o;
	struct pub_send   ps  = {st, NULL, 0};
	struct rmq_peer  *p;
	struct pub_peer  *sp;
	bool              push, fresh = false;
	int64_t           now;
	int               i, n, rc;

	if (o->msg != NULL) {
		/* A copy for each subscriber, then the message is ours. */
		out.buf = rmq_msg_data(o->msg);
		out.len = rmq_msg_size(o->msg);
		out.msg = NULL;
	}
	ps.b   = out.buf;
	ps.len = out.len;
	/* Subscribers may never make us wait: take in their news here --
	 * pushing, every 50 microseconds, not at every send (a CQ poll
	 * costs as much as the send on tcp), and again before one would
	 * miss this message for want of a credit; with the log (whose
	 * readers' news come as writes and timers), at every send.  The
	 * coarse clock: a fine one was a large share of an 8-byte PUB send
	 * on shm (INTERNALS §17); it steps every kernel tick, so under a fast
	 * stream news come in once a tick (1-4 ms) and credits whenever a
	 * subscriber runs short, and sends further apart than a tick each
	 * take them in as before. */
	now = rmq_now_coarse_ns();
	if (st->log != NULL || now - st->news_at >= PS_NEWS_NS) {
		rmq_pat_progress(s);
		st->news_at = now;
		fresh       = true;
	}
	if (st->log == NULL) {
		rc = ps_log_maybe_start(s, st);
		if (rc != 0)
			return rc;
	} else {
		ps_log_join_later(s, st);
	}
	/* One subscriber, pushed to, with room now: the checks below made
	 * once (with RMQ_NODROP too: it has room, so none waits). */
	if (st->log == NULL && st->nsubs == 1 && st->subs[0]->mode == PS_PUSH &&
	    rmq_pat_peer_writable(s, st->subs[0]->p)) {
		sp = st->subs[0];
		if (ps_match(&sp->subs, ps.b, ps.len))
			push_to(s, sp->p, &out, flags);
		goto done;
	}
	/* Every subscriber on the log: nothing is pushed (the cost of a
	 * message must not grow with them). */
	push = st->nsubs > ps_log_count(st);
	if (st->nodrop && push) {
		rc = rmq_pat_wait(s, flags, rmq_pat_sndtimeo(s), all_have_room,
		                  &ps);
		if (rc != 0)
			return rc;
	}
	if (st->log != NULL) {
		/* Once for every log subscriber; then the pushed ones.  A
		 * failed RMQ_NODROP wait appends nothing: none gets it. */
		rc = ps_log_append(s, st, ps.b, ps.len, flags,
		                   (flags & RMQ_SNDMORE) ? PS_FR_MORE : 0);
		if (rc != 0)
			return rc;
	}
	/* Sends progress, and a subscriber may go meanwhile: walk a copy of
	 * their ids (taken again once one came or went). */
	n = push ? snapshot(st) : 0;
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		p = rmq_pat_peer(s, st->ids[i]);
		if (p == NULL)
			continue;
		sp = rmq_pat_peer_state(p);
		if (sp->mode != PS_PUSH || !ps_match(&sp->subs, ps.b, ps.len))
			continue;
		if (!st->nodrop && !fresh && !rmq_pat_peer_writable(s, p)) {
			rmq_pat_progress(s);
			st->news_at = now;
			fresh       = true;
			p = rmq_pat_peer(s, st->ids[i]); /* it may have gone */
			if (p == NULL)
				continue;
		}
		if (!st->nodrop && !rmq_pat_peer_writable(s, p)) {
			rmq_pat_count_drop(s); /* full: this one misses it */
			continue;
		}
		push_to(s, p, &out, flags);
	}
done:
	if (o->msg != NULL)
		rmq_msg_free(o->msg);
	return 0;
}

/* A frame after a message's first: into the log if the first went there,
 * and to the subscribers the first was pushed to. */
static int
pub_send_more(void *stp, struct rmq_socket *s, const struct rmq_out *o,
              int flags)
{
	struct pub_state *st = stp;
	const uint8_t    *b  = o->buf;
	size_t            len = o->len;

	if (o->msg != NULL) {
		b   = rmq_msg_data(o->msg);
		len = rmq_msg_size(o->msg);
	}
	if (ps_log_open(st))
		(void) ps_log_append(s, st, b, len, flags,
		                     PS_FR_CONT |
		                         ((flags & RMQ_SNDMORE) ? PS_FR_MORE : 0));
	(void) rmq_pat_send_rest(s, o, flags);
	return 0; /* a PUB's message goes to whoever takes it */
}

static int
pub_events(void *stp, struct rmq_socket *s)
{
	struct pub_state *st = stp;
	struct pub_send   ps = {st, (const uint8_t *) "", 0};
	int               i;

	if (!st->nodrop)
		return RMQ_EV_OUT; /* a full subscriber costs its copy only */
	/* Would a message every subscriber takes go now? */
	for (i = 0; i < st->nsubs; i++)
		if (st->subs[i]->mode == PS_PUSH &&
		    !rmq_pat_peer_writable(s, st->subs[i]->p))
			return 0;
	if (st->log != NULL && !ps_log_room(s, st))
		return 0;
	return all_have_room(s, &ps) ? RMQ_EV_OUT : 0;
}

static int
pub_setopt(void *stp, struct rmq_socket *s, int opt, const void *val,
           size_t len)
{
	struct pub_state *st = stp;
	int               v, rc;

	RMQ_UNUSED(s);
	if (opt != RMQ_NODROP)
		return -RMQ_EINVAL;
	rc = rmq_opt_int(val, len, 0, &v);
	if (rc == 0 && v > 1)
		rc = -RMQ_EINVAL;
	if (rc == 0)
		st->nodrop = v;
	return rc;
}

static int
pub_getopt(void *stp, struct rmq_socket *s, int opt, void *val, size_t *len)
{
	struct pub_state *st = stp;

	RMQ_UNUSED(s);
	if (opt != RMQ_NODROP)
		return -RMQ_EINVAL;
	return rmq_opt_get_int(st->nodrop, val, len);
}

static bool
pub_flushed(void *stp, struct rmq_socket *s)
{
	RMQ_UNUSED(s);
	return ps_log_flushed(stp);
}

const struct rmq_pattern_ops rmq_pattern_pub = {
	.type        = RMQ_PUB,
	.name        = "pub",
	.peer_name   = "sub",
	.section     = "pubsub",
	.self_id     = 0x20,
	.peer_id     = 0x21,
	.report_lost = false,
	.lossy       = true,
	.own_sends   = true,
	.sock_size   = sizeof(struct pub_state),
	.peer_size   = sizeof(struct pub_peer),
	.fini        = pub_fini,
	.send        = pub_send,
	.send_more   = pub_send_more,
	.recv        = rmq_pat_op_no_recv,
	.peer_added  = pub_peer_added,
	.peer_gone   = pub_peer_gone,
	.events      = pub_events,
	.setopt      = pub_setopt,
	.getopt      = pub_getopt,
	.ctrl_rx     = pub_ctrl_rx,
	.peer_ready  = pub_peer_ready,
	.flushed     = pub_flushed,
};

/* Closing: the publishers' memory is read no more. */
static bool
sub_flushed(void *stp, struct rmq_socket *s)
{
	RMQ_UNUSED(s);
	return ps_readers_stop(stp);
}

/* A publisher that said BYE frees its log once we let it go: not while a
 * read of it is under way. */
static bool
sub_peer_quiet(void *stp, struct rmq_socket *s, struct rmq_peer *p, void *pp)
{
	RMQ_UNUSED(stp);
	RMQ_UNUSED(s);
	RMQ_UNUSED(p);
	return ps_reader_quiet(pp);
}

const struct rmq_pattern_ops rmq_pattern_sub = {
	.type        = RMQ_SUB,
	.name        = "sub",
	.peer_name   = "pub",
	.section     = "pubsub",
	.self_id     = 0x21,
	.peer_id     = 0x20,
	.report_lost = false,
	.sock_size   = sizeof(struct sub_state),
	.peer_size   = sizeof(struct sub_peer),
	.fini        = sub_fini,
	.send        = rmq_pat_op_no_send,
	.recv        = rmq_pat_op_recv_any,
	.peer_added  = sub_peer_added,
	.peer_gone   = sub_peer_gone,
	.events      = rmq_pat_op_events_in,
	.setopt      = sub_setopt,
	.ctrl_rx     = sub_ctrl_rx,
	.peer_ready  = sub_peer_ready,
	.rx_filter   = sub_filter,
	.peer_quiet  = sub_peer_quiet,
	.flushed     = sub_flushed,
};
