/*
 * Messages of several frames (frames.c): RMQ_SNDMORE on the sending side,
 * RMQ_RCVMORE on the receiving one.
 */
#ifndef RMQ_FRAMES_H
#define RMQ_FRAMES_H

#include <stdbool.h>

struct rmq_out;
struct rmq_rxent;
struct rmq_socket;

/*
 * Send one frame: the first of a message through the pattern, which
 * chooses its peers; the others to those same peers.  0 or -error (a msg
 * in o is the engine's on 0).
 */
int  rmq_frames_send(struct rmq_socket *s, const struct rmq_out *o,
                     int flags);
/* The next frame to hand out: the rest of the message being taken, or
 * the first of the next one the pattern gives.  0 or -error. */
int  rmq_frames_recv(struct rmq_socket *s, int flags, struct rmq_rxent **e);
/* The frame rmq_frames_recv gave was handed out (or failed). */
void rmq_frames_done(struct rmq_socket *s);
/* Is a message being taken (its next frame waits: RMQ_POLLIN)? */
bool rmq_frames_rx_open(const struct rmq_socket *s);
/* The socket closes: what the frames held. */
void rmq_frames_fini(struct rmq_socket *s);

#endif /* RMQ_FRAMES_H */
