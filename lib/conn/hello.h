/*
 * The handshake's HELLO (hello.c).
 */
#ifndef RMQ_HELLO_H
#define RMQ_HELLO_H

#include <stddef.h>

#include "wire.h"

struct rmq_peer;
struct rmq_socket;

/* Our HELLO for p, sent on control connection fd. */
void rmq_hello_fill(struct rmq_socket *s, int fd, struct rmq_peer *p,
                    struct rmq_hello *h);
/* Validate a peer's HELLO; on success fill p.  reason on error. */
int  rmq_hello_accept(struct rmq_socket *s, struct rmq_peer *p,
                      const struct rmq_hello *h, char *reason, size_t rl);

#endif /* RMQ_HELLO_H */
