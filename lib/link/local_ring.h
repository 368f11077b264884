/*
 * The local path's rings (local_ring.c): memory two processes of one user
 * on one host share, one writer and one reader each, and the facts of
 * this host the handshake compares.  local.c builds the path on them.
 *
 *   head page: magic, nonce, size | tail (the writer's) | freed (the
 *              reader's) | armed (the reader sleeps: wake it) | want (the
 *              writer waits for room: wake it), each on its own line
 *   data:      records [u64 prefix | the message as it would go over the
 *              fabric], padded to 8, in order; a record never wraps:
 *              where one does not fit before the end, the writer skips to
 *              the start (a SKIP prefix marks it where a record would fit;
 *              where none would, the skip goes without saying)
 *
 * The reader polls the prefix where its next record goes, not the tail
 * (as Open MPI's vader polls its fast boxes): a message costs it the
 * cache lines it reads anyway.  A prefix is the record's length, in the
 * low 32 bits of one 64-bit word the writer stores last (release); 0:
 * nothing there yet.  Before that store the writer zeroes the prefix of
 * the record after it, so the reader never takes old bytes for a new
 * record: the writer keeps RMQ_LRING_PFX bytes of room beyond each
 * record for that.  The tail is still published, for the sleep and wake
 * handshake (armed).
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
#define RMQ_LRING_SKIP 0xffffffffu /* a prefix: go to the ring's start */

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

/* Where the record after one ending at pos starts: there, or at the next
 * lap's start when no record fits before the end. */
static inline uint64_t
rmq_lring_next(const struct rmq_lring *r, uint64_t pos)
{
	uint64_t room = r->size - (pos & (r->size - 1));

	return room < RMQ_LRING_MIN ? pos + room : pos;
}

/* The prefix word at offset off of the data. */
static inline _Atomic uint64_t *
rmq_lring_pfx(const struct rmq_lring *r, uint64_t off)
{
	return (_Atomic uint64_t *) (void *) (r->d + off);
}

/*
 * The writer: room for a record of n bytes at *tail (skipping to the
 * start if it does not fit before the end; *tfreed caches the reader's
 * freed): its offset, or -1 (then the reader will wake us when it frees
 * some).  commit, once the record's bytes are written there: *tail is
 * past it, and with show the reader may take it from now on; without,
 * once show stores its prefix (then every record committed after it is
 * seen with it).  publish tells the tail (what a reader about to sleep
 * compares); true: wake the reader.
 */
int64_t rmq_lring_reserve(struct rmq_lring *r, uint64_t *tail,
                          uint64_t *tfreed, size_t n);
void    rmq_lring_commit(struct rmq_lring *r, uint64_t *tail, int64_t off,
                         uint32_t len, bool show);
void    rmq_lring_show(struct rmq_lring *r, int64_t off, uint32_t len);
bool    rmq_lring_publish(struct rmq_lring *r, uint64_t tail);

/* The reader: bytes through freed are free again; true: wake the
 * writer.  wanted: whether the writer waits for room, as free says
 * (true once a wait); free does not fence, so the reader asks again with
 * nothing to read and, after its fence, before it sleeps.  arm: before
 * we sleep (the caller fences once for all rings); then pending says
 * whether anything came past head meanwhile. */
bool rmq_lring_free(struct rmq_lring *r, uint64_t freed);
static inline bool
rmq_lring_wanted(struct rmq_lring *r)
{
	return atomic_load_explicit(&r->h->want, memory_order_relaxed) != 0 &&
	       atomic_exchange(&r->h->want, 0) != 0;
}
static inline void
rmq_lring_arm(struct rmq_lring *r)
{
	atomic_store_explicit(&r->h->armed, 1, memory_order_relaxed);
}
static inline bool
rmq_lring_pending(const struct rmq_lring *r, uint64_t head)
{
	/* The reader may be past the tail: records it took before their
	 * writer published them (coalescing). */
	return (int64_t) (atomic_load_explicit(&r->h->tail,
	                                       memory_order_relaxed) -
	                  head) > 0;
}

/* The name of a wake socket: abstract, gone with its process. */
void rmq_wake_name(struct sockaddr_un *a, socklen_t *len, uint32_t pid,
                   uint32_t id);

#endif /* RMQ_PATHS_LOCAL_RING_H */
