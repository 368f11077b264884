/*
 * Connecting sockets that stay connected (dial.c).
 *
 * Every rmq_connect leaves a dialer on its socket.  While its peer lives
 * the dialer sleeps; when the peer dies or leaves, the dialer tries again
 * after RMQ_RECONNECT_IVL (plus up to as much again at random, so that a
 * job's hundreds of clients do not all come back in the same
 * millisecond), doubling the wait after each failed try up to
 * RMQ_RECONNECT_IVL_MAX.  A try is a non-blocking TCP (or Unix) connect
 * and the same HELLO exchange as a first connect, each step driven by the
 * socket's reactor, so the application never blocks on it:
 *
 *          due                  connected            HELLO back
 *   WAIT ------> CONNECTING --------------> HELLO ---------------> UP
 *    ^  refused, timed out, rejected      |                        |
 *    +------------------------------------+------ peer gone -------+
 *
 * With RMQ_CONNECT_ASYNC the first connect is such a try too.
 */
#ifndef RMQ_DIAL_H
#define RMQ_DIAL_H

#include <stdbool.h>
#include <stdint.h>

#include <netinet/in.h>

#include "conn/addr.h"
#include "conn/auth.h"
#include "progress.h"
#include "wire.h"

struct rmq_peer;
struct rmq_socket;

enum rmq_dial_state {
	RMQ_DIAL_WAIT = 0,   /* until due */
	RMQ_DIAL_CONNECTING, /* the stream connect is under way */
	RMQ_DIAL_HELLO,      /* our HELLO (or AUTH) went; its answer until
	                      * due */
	RMQ_DIAL_UP,         /* p is its peer */
};

struct rmq_dialer {
	struct rmq_dialer *next;
	char               endpoint[256]; /* as given to rmq_connect */
	struct rmq_addr    a;
	union rmq_inaddr   sin;     /* a, resolved (TCP) */
	int                state;   /* RMQ_DIAL_* */
	struct rmq_source  src;     /* the control connection being made */
	int                fd;      /* -1: none */
	struct rmq_peer   *p;       /* HELLO: NEW; UP: its live peer */
	int64_t            due;     /* WAIT: next try; else: give up */
	int                ivl_ms;  /* the wait after the next failure */
	unsigned           tries;   /* failed tries since the last success */
	int                last_err; /* why the last try failed */
	bool               was_up;  /* it had a peer once */
	size_t             have;
	uint8_t            buf[RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX];
	struct rmq_auth    auth;    /* with auth.key_file: this try's */
};

void rmq_dial_init(struct rmq_socket *s);
/*
 * A dialer for endpoint (parsed in a).  p: the live peer a blocking
 * connect just made (it is UP); NULL: try now, in the background.
 */
int  rmq_dial_add(struct rmq_socket *s, const char *endpoint,
                  const struct rmq_addr *a, const union rmq_inaddr *sin,
                  struct rmq_peer *p);
/* rmq_disconnect: the dialer goes, and its peer with a goodbye; 0, or
 * -ENOENT if no connect named endpoint. */
int  rmq_dial_remove(struct rmq_socket *s, const char *endpoint);
/* May a dialer still bring a peer (one is not UP)? */
bool rmq_dial_pending(const struct rmq_socket *s);
/* Every dialer goes (rmq_close). */
void rmq_dial_close(struct rmq_socket *s);

/*
 * Connect a control channel to a, retrying until deadline (the binding
 * side may not be up yet; s's reactor runs between tries); *local: our
 * side of it (TCP).  For a connect that waits (rmq_ctrl_handshake next).
 */
int  rmq_ctrl_dial(struct rmq_socket *s, const struct rmq_addr *a,
                   int64_t deadline, int *fdp, union rmq_inaddr *local);

#endif /* RMQ_DIAL_H */
