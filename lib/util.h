/* Logging, clocks, randomness, small string and interface helpers. */
#ifndef RMQ_UTIL_H
#define RMQ_UTIL_H

#include <netinet/in.h>
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
/* Deadline in ns from a timeout in ms (-1: forever -> INT64_MAX). */
int64_t  rmq_deadline(int timeout_ms);
uint64_t rmq_random64(void);

/* An int socket option in: -RMQ_EINVAL unless len is an int's and the
 * value is at least min.  Out: into val (*len at least an int's). */
int  rmq_opt_int(const void *val, size_t len, int min, int *out);
int  rmq_opt_get_int(int v, void *val, size_t *len);

/* Append name to the ", "-separated list in buf[len] (end at *pos), once. */
void rmq_list_add(char *buf, size_t len, size_t *pos, const char *name);
/*
 * The first IPv4 address of interface iface: 0, -RMQ_ENODEV (no such
 * interface) or -RMQ_EADDR (no IPv4 address); have lists the interfaces
 * (or that one's addresses) for messages.
 */
int  rmq_iface_ipv4(const char *iface, struct in_addr *addr, char *have,
                    size_t havelen);
/* Is addr one of iface's addresses? */
bool rmq_iface_has(const char *iface, struct in_addr addr);

#endif /* RMQ_UTIL_H */
