/* Logging, clocks, randomness, small string and interface helpers. */
#ifndef RMQ_UTIL_H
#define RMQ_UTIL_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h" /* RMQ_LOG_* */

#include "rmq_config.h"

#define RMQ_UNUSED(x) ((void) (x))

/*
 * [p, p+n) was written by a peer's RMA: another process, through the
 * kernel (shm's CMA), so memcheck never saw the stores.  Tell it; outside
 * valgrind a client request costs a few instructions.
 */
#if RMQ_HAVE_VALGRIND
#include <valgrind/memcheck.h>
#define RMQ_MEM_WRITTEN(p, n) ((void) VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#else
#define RMQ_MEM_WRITTEN(p, n) ((void) 0)
#endif

#define rmq_container_of(ptr, type, member) \
	((type *) (void *) ((char *) (ptr) - offsetof(type, member)))

void rmq_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void     rmq_log_set_level(int level);
int64_t  rmq_now_ns(void);
/* The kernel's tick-grained monotonic clock (1-4 ms steps): a read costs
 * a fraction of rmq_now_ns's (INTERNALS §17), for cadences on a
 * per-message path. */
int64_t  rmq_now_coarse_ns(void);
/* Deadline in ns from a timeout in ms (-1: forever -> INT64_MAX). */
int64_t  rmq_deadline(int timeout_ms);
uint64_t rmq_random64(void);

/* An int socket option in: -RMQ_EINVAL unless len is an int's and the
 * value is at least min.  Out: into val (*len at least an int's). */
int  rmq_opt_int(const void *val, size_t len, int min, int *out);
int  rmq_opt_get_int(int v, void *val, size_t *len);

/* A path's kind (RMQ_ROW_RANGE, _LARGE, _LINK: rmq_path_rows.h), or 0
 * for no path.  Its name: rmq_path_name(); by name: rmq_path_id(). */
int  rmq_path_kind(int path);

/* Append name to the ", "-separated list in buf[len] (end at *pos), once. */
void rmq_list_add(char *buf, size_t len, size_t *pos, const char *name);
/*
 * An address of family (AF_INET, AF_INET6: a global one before a
 * link-local one) of interface iface into out: 0, -RMQ_ENODEV (no such
 * interface) or -RMQ_EADDR (none of that family); have lists the
 * interfaces (or the address found) for messages.
 */
int  rmq_iface_addr(const char *iface, int family,
                    struct sockaddr_storage *out, char *have, size_t havelen);
/* Is sa's address (IPv4 or IPv6) one of iface's addresses? */
bool rmq_iface_has(const char *iface, const struct sockaddr *sa);

/* Write all n bytes to a stream socket (no SIGPIPE), waiting up to
 * timeout_ms for room: 0, -RMQ_ETIMEDOUT or -errno. */
int rmq_write_all(int fd, const uint8_t *b, size_t n, int timeout_ms);

/*
 * A message's bytes, copied (never overlapping).  glibc's memcpy moves
 * 2112 B to 512 KiB with `rep movsb` on this class of x86 (AMD EPYC,
 * glibc 2.36), which is many times slower when the destination lies
 * fewer than 32 bytes after the source modulo 4 KiB: each store then
 * falsely aliases the loads that follow.  Our buffers are page-aligned
 * with a 16-byte header before the payload, so a page-aligned caller's
 * buffer (posix_memalign, mmap, rmq_msg_alloc) meets exactly that.  In
 * that case rmq_copy_back() copies from the end down, which has no such
 * stall.  Above 512 KiB glibc no longer uses rep movsb.  Measured:
 * docs/INTERNALS.md §4 (rmq_copy) and §17.
 */
#define RMQ_COPY_ALIAS_MIN 2048u
#define RMQ_COPY_ALIAS_MAX (512u * 1024u)
#define RMQ_COPY_ALIAS_GAP 32u

void rmq_copy_back(void *dst, const void *src, size_t n);

static inline bool
rmq_copy_aliases(const void *dst, const void *src, size_t n)
{
	size_t gap = ((uintptr_t) dst - (uintptr_t) src) & 4095u;

	return n >= RMQ_COPY_ALIAS_MIN && n < RMQ_COPY_ALIAS_MAX && gap != 0 &&
	       gap < RMQ_COPY_ALIAS_GAP;
}

static inline void
rmq_copy(void *dst, const void *src, size_t n)
{
	if (rmq_copy_aliases(dst, src, n))
		rmq_copy_back(dst, src, n);
	else if (n > 0)
		__builtin_memcpy(dst, src, n);
}

#endif /* RMQ_UTIL_H */
