/*
 * Waiting on many sockets (events.c): rmq_poll(), and the events behind
 * RMQ_EVENTS and RMQ_FD.
 */
#ifndef RMQ_EVENTS_H
#define RMQ_EVENTS_H

#include <stdbool.h>

struct rmq_socket;

/*
 * RMQ_POLLIN | RMQ_POLLOUT of s now.  settle: take in everything there is
 * first and rearm RMQ_FD (rmq_reactor_settle), as RMQ_EVENTS does.
 */
int  rmq_sock_events(struct rmq_socket *s, bool settle);
/* After a send or receive: with RMQ_FD in use and messages still queued,
 * keep the fd readable, so an edge-style loop cannot miss them. */
void rmq_sock_fd_after(struct rmq_socket *s);

#endif /* RMQ_EVENTS_H */
