/*
 * PUSH/PULL, the pipeline (rmq_pipeline(7)).
 *
 * PUSH: each message goes to one puller, round-robin over the pullers that
 * have room (a credit from the puller's RMQ_RCVHWM, and our RMQ_SNDHWM).
 * When none has, send waits (RMQ_SNDTIMEO, RMQ_DONTWAIT): nothing is ever
 * dropped.  A puller that dies is skipped; a message whose rendezvous it
 * had not finished goes to another puller, so only what a dead puller had
 * already been given is lost with it.
 *
 * PULL: messages fair-queued over the pushers, each pusher's in order.
 *
 * Neither reports a lost peer as an error: a pipeline outlives its
 * workers.
 */
#include "path_ops.h"
#include "pattern.h"
#include "util.h"

struct push_try {
	const struct rmq_out *o;
	int                   flags;
};

/*
 * One round over the pullers with room, none waited for: 1 when one took
 * the message, 0 when each one's queue is full now (or none has a credit),
 * or why no puller may come.
 */
static int
push_round(struct rmq_socket *s, void *arg)
{
	const struct push_try *t = arg;
	struct rmq_peer       *p;
	int                    i, n = rmq_pat_npeers(s), rc;

	for (i = 0; i < (n > 0 ? n : 1); i++) {
		rc = rmq_pat_pick_writable(s, &p);
		if (rc <= 0)
			return rc;
		rc = rmq_pat_send(s, p, t->o, 0, t->flags | RMQ_DONTWAIT);
		/* Full (it stopped reading, or died and we do not know yet),
		 * or died before the message was its own: the next one. */
		if (rc != -RMQ_EAGAIN && rc != -RMQ_ECONNRESET)
			return rc == 0 ? 1 : rc;
	}
	return 0;
}

static int
push_send(void *st, struct rmq_socket *s, const struct rmq_out *o, int flags)
{
	struct push_try  t = {o, flags};
	struct rmq_peer *p;
	int              rc;

	RMQ_UNUSED(st);
	/*
	 * Several pullers: the send waits for room at any of them, never for
	 * one in particular -- a puller whose queue is full (or that has yet
	 * to take a zero-copy rendezvous) must not hold up the others.  So
	 * every try is one that does not wait, and a large payload is copied
	 * as with RMQ_DONTWAIT (rmq_msg_send hands its message over).  A
	 * blocking try at one chosen puller once waited there for 10 s while
	 * the other read (check_pipeline's stalled puller, 8 KiB).
	 */
	if (rmq_pat_npeers(s) > 1)
		return rmq_pat_wait(s, flags, rmq_pat_sndtimeo(s), push_round,
		                    &t);
	/*
	 * One puller (or none yet): waiting for it is waiting for room, and
	 * a large send stays zero-copy, done when it returns (as a single-
	 * threaded program with several sockets needs: check_pipeline's
	 * test_ring_peers lost messages at close when it copied).  A puller
	 * that died before the message was its own (its rendezvous
	 * unfinished, or before it went out): the message goes to another.
	 */
	for (;;) {
		rc = rmq_pat_next_writable(s, flags, rmq_pat_sndtimeo(s), &p);
		if (rc != 0)
			return rc;
		rc = rmq_pat_send(s, p, o, 0, flags);
		if (rc != -RMQ_ECONNRESET)
			return rc;
	}
}

const struct rmq_pattern_ops rmq_pattern_push = {
	.type        = RMQ_PUSH,
	.name        = "push",
	.peer_name   = "pull",
	.section     = "pipeline",
	.self_id     = 0x50,
	.peer_id     = 0x51,
	.report_lost = false,
	.keep_sends  = true,
	.send        = push_send,
	.recv        = rmq_pat_op_no_recv,
	.events      = rmq_pat_op_events_out,
};

const struct rmq_pattern_ops rmq_pattern_pull = {
	.type        = RMQ_PULL,
	.name        = "pull",
	.peer_name   = "push",
	.section     = "pipeline",
	.self_id     = 0x51,
	.peer_id     = 0x50,
	.report_lost = false,
	.send        = rmq_pat_op_no_send,
	.recv        = rmq_pat_op_recv_any,
	.events      = rmq_pat_op_events_in,
};
