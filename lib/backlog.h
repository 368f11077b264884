/*
 * Sends that wait for a first peer (backlog.c).
 *
 * A PAIR or PUSH socket whose connects are still under way (RMQ_CONNECT_ASYNC,
 * or reconnecting after its peer went) and that has no live peer keeps
 * what the application sends, up to RMQ_SNDHWM messages, as ZeroMQ's
 * pipes do; they leave in order once a peer is live, before any later
 * send.  They are flushed at every call on the socket and on the idle
 * rounds of its waits (and by the progress thread).
 */
#ifndef RMQ_BACKLOG_H
#define RMQ_BACKLOG_H

#include <stdbool.h>

struct rmq_out;
struct rmq_socket;

/*
 * Before a send: 1 = send it as usual; 0 = it was kept (or sent after
 * the backlog); < 0 = the error (-RMQ_EAGAIN: the backlog is full).  On
 * 0 a msg in o is the engine's.
 */
int  rmq_backlog_send(struct rmq_socket *s, const struct rmq_out *o,
                      int flags);
/* Send what waits, as far as peers take it without waiting. */
void rmq_backlog_flush(struct rmq_socket *s);
/* Would a send be kept now (for RMQ_POLLOUT)? */
bool rmq_backlog_room(const struct rmq_socket *s);
/* At close: what never left is dropped (counted). */
void rmq_backlog_drop(struct rmq_socket *s);

#endif /* RMQ_BACKLOG_H */
