/* The ring path's one public fact (ring.c): where a peer's ring lies. */
#ifndef RMQ_RING_H
#define RMQ_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "numa.h"

struct rmq_peer;

/* Our ring for p's writes: its memory, length and how it was allocated
 * (tests, rmq_info).  false: p has none. */
bool rmq_ring_rx_area(const struct rmq_peer *p, void **buf, size_t *len,
                      struct rmq_numa_mem *mem);

/* p's ring, which we write: its address (or offset 0), key and length
 * (tests).  false: p gave none. */
bool rmq_ring_tx_area(const struct rmq_peer *p, uint64_t *raddr,
                      uint64_t *rkey, size_t *len);

struct rmq_socket;
struct rmq_tx;

/* What one RBATCH to p may carry after its header now: the room its ring
 * has (at most a quarter of it) and one tx slot; 0: none (its ring full,
 * no ring of its to write, or it did not say RMQ_FEAT_RBATCH). */
size_t rmq_ring_batch_cap(const struct rmq_socket *s,
                          const struct rmq_peer *p);
/* Write tx->buf[0..n) (an RBATCH header and its items) into p's ring at
 * its tail, once: 0 (in flight), 1 (no room in its ring yet: its credit
 * is on its way), -FI_EAGAIN (the provider's), or -error. */
int rmq_ring_batch_post(struct rmq_socket *s, struct rmq_peer *p,
                        struct rmq_tx *tx, size_t n);

#endif /* RMQ_RING_H */
