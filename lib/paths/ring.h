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

#endif /* RMQ_RING_H */
