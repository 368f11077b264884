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
	RMQ_UNUSED(st);
	return rmq_pat_send_one(s, o, flags, NULL);
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
