/*
 * The local path's rings (local_ring.c): memory two processes of one user
 * on one host share, one writer and one reader each, and the facts of
 * this host the handshake compares.  local.c builds the path on them.
 *
 *   head page: magic, nonce, size | tail (the writer's) | freed (the
 *              reader's) | armed (the reader sleeps: wake it) | want (the
 *              writer waits for room: wake it), each on its own line
 *   data:      records [u32 length | u32 0 | the message as it would go
 *              over the fabric], padded to 8, in order; a record never
 *              wraps: where one does not fit before the end, the writer
 *              skips to the start (a zero length marks the skip where a
 *              record would fit)
 */
#ifndef RMQ_PATHS_LOCAL_RING_H
#define RMQ_PATHS_LOCAL_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "wire.h"

#define RMQ_LRING_HEAD 512 /* bytes before the data */
#define RMQ_LRING_PFX  8   /* a record's length word and padding */
#define RMQ_LRING_MIN  (RMQ_LRING_PFX + RMQ_HDR_SIZE) /* the least record */

struct rmq_lhead {
	uint64_t magic;
	uint64_t nonce;
	uint32_t size;
	uint8_t  pad0[44];
	_Alignas(64) _Atomic uint64_t tail;  /* bytes written (writer) */
	_Alignas(64) _Atomic uint64_t freed; /* bytes given back (reader) */
	_Alignas(64) atomic_uint      armed; /* reader asleep: wake it */
	_Alignas(64) atomic_uint      want;  /* writer waits for room */
};

/* One mapped ring. */
struct rmq_lring {
	struct rmq_lhead *h; /* NULL: none */
	uint8_t          *d;
	uint32_t          size; /* a power of two */
	size_t            map;  /* bytes mapped */
};

/* This host, as the handshake compares it. */
struct rmq_host {
	uint8_t  boot[16]; /* the kernel's boot id */
	uint64_t name;     /* a hash of the host name and of our network
	                    * and PID namespaces */
};

/* NULL if this host cannot say (no /proc). */
const struct rmq_host *rmq_host_this(void);

/* A new ring of size bytes (rounded down to a power of two), ours to
 * read: a sealed memfd in *fd, mapped.  0 or -errno. */
int  rmq_lring_make(struct rmq_lring *r, size_t size, int *fd);
/* A peer's ring, its fd opened through /proc/pid/fd (same user only):
 * sealed, of size bytes, with that nonce.  0, or -1 with why. */
int  rmq_lring_open(struct rmq_lring *r, uint32_t pid, uint32_t fd,
                    uint32_t size, uint64_t nonce, char *why, size_t len);
void rmq_lring_unmap(struct rmq_lring *r);

/* A record's bytes in the ring for a message of n bytes. */
static inline size_t
rmq_lring_rec(size_t n)
{
	return (RMQ_LRING_PFX + n + 7) & ~(size_t) 7;
}

/*
 * The writer: room for a record of n bytes at *tail (skipping to the
 * start if it does not fit before the end; *tfreed caches the reader's
 * freed): its offset, or -1 (then the reader will wake us when it frees
 * some).  publish makes the bytes written up to tail visible; true:
 * wake the reader.
 */
int64_t rmq_lring_reserve(struct rmq_lring *r, uint64_t *tail,
                          uint64_t *tfreed, size_t n);
bool    rmq_lring_publish(struct rmq_lring *r, uint64_t tail);

/* The reader: bytes through freed are free again; true: wake the
 * writer.  arm: before we sleep (the caller fences once for all rings);
 * then pending says whether anything came past head meanwhile. */
bool rmq_lring_free(struct rmq_lring *r, uint64_t freed);
static inline void
rmq_lring_arm(struct rmq_lring *r)
{
	atomic_store_explicit(&r->h->armed, 1, memory_order_relaxed);
}
static inline bool
rmq_lring_pending(const struct rmq_lring *r, uint64_t head)
{
	return atomic_load_explicit(&r->h->tail, memory_order_relaxed) != head;
}

/* The name of a wake socket: abstract, gone with its process. */
void rmq_wake_name(struct sockaddr_un *a, socklen_t *len, uint32_t pid,
                   uint32_t id);

#endif /* RMQ_PATHS_LOCAL_RING_H */
