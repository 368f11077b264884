/*
 * Sends that wait for a first peer (backlog.h).
 */
#include <stdlib.h>
#include <string.h>

#include "backlog.h"
#include "conn/ctrl.h"
#include "conn/dial.h"
#include "conn/peer.h"
#include "frames.h"
#include "path_ops.h"
#include "pattern_ops.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

struct rmq_blmsg {
	struct rmq_blmsg *next;
	rmq_msg          *msg; /* zero-copy: kept as given */
	size_t            len;
	int               more; /* RMQ_SNDMORE: a frame with more after it */
	uint8_t           data[];
};

/* Does this socket keep sends now? */
static bool
keeps(const struct rmq_socket *s)
{
	if (!s->pat->keep_sends)
		return false;
	return s->bl_n > 0 ||
	       (s->peers->nlive == 0 && rmq_dial_pending(s));
}

bool
rmq_backlog_room(const struct rmq_socket *s)
{
	return keeps(s) && s->bl_n < s->sndhwm;
}

static void
pop(struct rmq_socket *s, bool sent)
{
	struct rmq_blmsg *m = s->bl_head;

	s->bl_head = m->next;
	if (s->bl_head == NULL)
		s->bl_tail = &s->bl_head;
	s->bl_n--;
	if (!sent && m->msg != NULL)
		rmq_msg_free(m->msg);
	free(m);
	s->reactor.idle_any = s->bl_n > 0 || s->rx->fetch_more;
}

void
rmq_backlog_flush(struct rmq_socket *s)
{
	struct rmq_blmsg *m;
	struct rmq_out    o;
	int               rc;

	if (s->bl_flushing)
		return; /* a send of ours waiting: it progresses */
	s->bl_flushing = true;
	while ((m = s->bl_head) != NULL && s->peers->nlive > 0) {
		o.buf = m->msg != NULL ? NULL : m->data;
		o.len = m->msg != NULL ? 0 : m->len;
		o.msg = m->msg;
		rc    = rmq_frames_send(s, &o, RMQ_DONTWAIT | m->more);
		if (rc == -RMQ_EAGAIN)
			break;
		if (rc != 0) {
			rmq_log(RMQ_LOG_WARN, "a message kept until a peer "
			        "came could not be sent: %s", rmq_strerror(rc));
			s->stats.dropped++;
		}
		pop(s, rc == 0);
	}
	s->bl_flushing = false;
}

static int
has_room(void *arg)
{
	struct rmq_socket *s = arg;

	rmq_backlog_flush(s);
	return s->bl_n < s->sndhwm || !keeps(s);
}

int
rmq_backlog_send(struct rmq_socket *s, const struct rmq_out *o, int flags)
{
	struct rmq_blmsg *m;
	struct rmq_waiter w;
	int               rc;

	if (s->bl_n > 0)
		rmq_backlog_flush(s);
	/* Disconnected with nothing to come: what was kept cannot go. */
	if (s->bl_n > 0 && s->peers->nlive == 0 && !rmq_dial_pending(s) &&
	    !rmq_ctrl_listening(s))
		rmq_backlog_drop(s);
	if (!keeps(s))
		return 1;
	/* A message's frames are kept whole: only its first waits for room
	 * (RMQ_SNDHWM counts messages). */
	if (s->bl_n >= s->sndhwm && !s->bl_open) {
		rmq_waiter_init(&w, (flags & RMQ_DONTWAIT) ? 0 : s->sndtimeo);
		rc = rmq_wait_until(&s->reactor, &w, RMQ_WAIT_IDLE, has_room, s);
		if (rc != 0)
			return rc;
		if (!keeps(s))
			return 1;
	}
	if (o->msg == NULL && o->len > 0 && s->maxmsg >= 0 &&
	    o->len > (uint64_t) s->maxmsg)
		return -RMQ_EMSGSIZE;
	m = malloc(sizeof(*m) + (o->msg != NULL ? 0 : o->len));
	if (m == NULL)
		return -RMQ_ENOMEM;
	m->next = NULL;
	m->msg  = o->msg;
	m->len  = o->len;
	m->more = flags & RMQ_SNDMORE;
	s->bl_open = m->more != 0;
	if (o->msg == NULL && o->len > 0)
		rmq_copy(m->data, o->buf, o->len);
	*s->bl_tail = m;
	s->bl_tail  = &m->next;
	s->bl_n++;
	s->reactor.idle_any = true;
	return 0;
}

void
rmq_backlog_drop(struct rmq_socket *s)
{
	if (s->bl_n > 0)
		rmq_log(RMQ_LOG_DEBUG, "%d messages never found a peer",
		        s->bl_n);
	while (s->bl_head != NULL) {
		/* A message counted once: at its last frame kept. */
		if (!s->bl_head->more || s->bl_head->next == NULL)
			s->stats.dropped++;
		pop(s, false);
	}
	s->bl_open = false;
}
