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

static int
push_send(void *st, struct rmq_socket *s, const struct rmq_out *o, int flags)
{
	struct rmq_peer *p;
	int              rc, tries;

	RMQ_UNUSED(st);
	for (tries = 0;; tries++) {
		rc = rmq_pat_next_writable(s, flags, rmq_pat_sndtimeo(s), &p);
		if (rc != 0)
			return rc;
		/*
		 * A puller whose provider queue is full (it stopped reading,
		 * or died and we do not know yet) must not hold up the
		 * others: each but the last of the live ones is tried
		 * without waiting; round-robin then moves on.
		 */
		if (tries + 1 < rmq_pat_npeers(s) && !(flags & RMQ_DONTWAIT)) {
			rc = rmq_pat_send(s, p, o, 0, flags | RMQ_DONTWAIT);
			if (rc == -RMQ_EAGAIN)
				continue;
		} else if (rmq_pat_npeers(s) > 1) {
			/*
			 * Waiting for room is ours to do, waiting for a
			 * puller to take the message is not: a zero-copy
			 * rendezvous send would wait for its FIN, and a
			 * puller that stopped reading would hold up the
			 * others for ever.  So the payload is copied here
			 * (as the tries without waiting do).  With one
			 * puller, waiting for it is waiting for room.
			 */
			rc = rmq_pat_send(s, p, o, 0, flags | RMQ_XFER_F_OWN);
		} else {
			rc = rmq_pat_send(s, p, o, 0, flags);
		}
		/*
		 * The puller died before the message was its own (its
		 * rendezvous unfinished, or before it went out): it is still
		 * ours to give to another.
		 */
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
