/* Logging, clocks, randomness and error strings. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "rmq_config.h"
#include <rdma/fi_errno.h>

#include "rmq.h"
#include "rmq_path_rows.h"
#include "util.h"

static atomic_int rmq_log_level = RMQ_LOG_WARN;
static rmq_log_fn log_fn;  /* rmq_set_log_fn; NULL: stderr */
static void      *log_arg;

void
rmq_log_set_level(int level)
{
	atomic_store(&rmq_log_level, level);
}

void
rmq_log(int level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warning", "info",
	                                    "debug"};
	rmq_log_fn fn = log_fn;
	char       line[512];
	va_list    ap;

	if (level > atomic_load(&rmq_log_level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (fn != NULL)
		fn(level, line, log_arg);
	else
		fprintf(stderr, "librmq: %s: %s\n", names[level], line);
}

void
rmq_set_log_fn(rmq_log_fn fn, void *arg)
{
	log_arg = arg;
	log_fn  = fn;
}

int64_t
rmq_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
rmq_now_coarse_ns(void)
{
	struct timespec ts;

#ifdef CLOCK_MONOTONIC_COARSE
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
	clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
rmq_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return INT64_MAX;
	return rmq_now_ns() + (int64_t) timeout_ms * 1000000;
}

/*
 * Keys must not be guessable, so they come from the kernel's CSPRNG; but
 * one getrandom() per key is a system call each, and every rendezvous send
 * registers its payload under a fresh key.  So each thread draws 32 at a
 * time and hands them out once each.  A forked child starts with an empty
 * pool: it never reuses (or lets its parent know) the parent's next keys.
 */
#define RANDOM_POOL 32 /* 256 bytes: getrandom() fills it whole */

static _Thread_local uint64_t random_pool[RANDOM_POOL];
static _Thread_local unsigned random_left;
static pthread_once_t         random_once = PTHREAD_ONCE_INIT;

static void
random_forget(void)
{
	/* Only the forking thread lives on in the child. */
	explicit_bzero(random_pool, sizeof(random_pool));
	random_left = 0;
}

static void
random_atfork(void)
{
	(void) pthread_atfork(NULL, NULL, random_forget);
}

uint64_t
rmq_random64(void)
{
	uint64_t v;

	pthread_once(&random_once, random_atfork);
	if (random_left == 0) {
		if (getrandom(random_pool, sizeof(random_pool), 0) !=
		    (ssize_t) sizeof(random_pool)) {
			/* Not seeded yet (early boot): the clock, scrambled,
			 * and no pool kept. */
			return (uint64_t) rmq_now_ns() * 0x9e3779b97f4a7c15ull;
		}
		random_left = RANDOM_POOL;
	}
	v = random_pool[--random_left];
	random_pool[random_left] = 0; /* handed out once */
	return v;
}

/* X-macro, so the codes and their strings cannot drift apart. */
#define RMQ_OWN_ERRORS(X)                                                   \
	X(RMQ_ECLOSED, "socket or context closed")                           \
	X(RMQ_EFSM, "operation not valid in the socket's current state")     \
	X(RMQ_EPROTO, "protocol error: malformed message or handshake")      \
	X(RMQ_EVERSION, "peer speaks another librmq wire version")           \
	X(RMQ_EPROVIDER, "endpoints use different libfabric providers")      \
	X(RMQ_EPATTERN, "peer's socket type does not match ours")            \
	X(RMQ_ECONFIG, "bad configuration")                                  \
	X(RMQ_EADDR, "malformed endpoint")                                   \
	X(RMQ_ETRUNC, "message truncated")                                   \
	X(RMQ_EPEERFULL, "no room for another peer")                        \
	X(RMQ_ERESOLVE, "cannot resolve the endpoint's host name")       \
	X(RMQ_EAUTH, "authentication failed (auth.key_file)")

const char *
rmq_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
#define X(code, text) \
	case code:    \
		return text;
		RMQ_OWN_ERRORS(X)
#undef X
	default:
		break;
	}
	/* errno below 256; libfabric's own from 256 (it keeps below 4096,
	 * where errno stops too); ours from RMQ_ERRNO_BASE. */
	if (err < FI_ERRNO_OFFSET)
		return strerror(err);
	if (err < 4096)
		return fi_strerror(err);
	return "unknown librmq error";
}

/* The names and kinds of the paths: the registry's (rmq_path_rows.h). */
#define ROW_NAME(n, k) #n,
static const char *const path_names[RMQ_PATHS] = {RMQ_PATH_ROWS(ROW_NAME)};
#undef ROW_NAME
#define ROW_KIND(n, k) RMQ_ROW_##k,
static const unsigned char path_kinds[RMQ_PATHS] = {RMQ_PATH_ROWS(ROW_KIND)};
#undef ROW_KIND

const char *
rmq_path_name(int path)
{
	return path >= 0 && path < RMQ_PATHS ? path_names[path] : "?";
}

int
rmq_path_count(void)
{
	return RMQ_PATHS;
}

int
rmq_path_id(const char *name)
{
	int i;

	for (i = 0; name != NULL && i < RMQ_PATHS; i++)
		if (strcmp(path_names[i], name) == 0)
			return i;
	return -RMQ_EINVAL;
}

int
rmq_path_kind(int path)
{
	return path >= 0 && path < RMQ_PATHS ? path_kinds[path] : 0;
}

const char *
rmq_version(void)
{
	return RMQ_VERSION_STRING;
}

void
rmq_list_add(char *buf, size_t len, size_t *pos, const char *name)
{
	const char *p = buf;
	size_t      n = strlen(name);
	int         w;

	while ((p = strstr(p, name)) != NULL) {
		if ((p == buf || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
			return;
		p += n;
	}
	if (*pos >= len)
		return;
	w = snprintf(buf + *pos, len - *pos, "%s%s", *pos ? ", " : "", name);
	if (w > 0)
		*pos += (size_t) w;
	if (*pos >= len)
		*pos = len - 1;
}

/* An address of iface of family: an IPv6 one with global scope first. */
static const struct sockaddr *
iface_pick(struct ifaddrs *ifa, const char *iface, int family, bool *found)
{
	const struct sockaddr *best = NULL;
	struct ifaddrs        *i;

	for (i = ifa; i != NULL; i = i->ifa_next) {
		if (strcmp(i->ifa_name, iface) != 0)
			continue;
		*found = true;
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != family)
			continue;
		if (family == AF_INET6 &&
		    IN6_IS_ADDR_LINKLOCAL(
		        &((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr)) {
			if (best == NULL)
				best = i->ifa_addr;
			continue;
		}
		return i->ifa_addr;
	}
	return best;
}

int
rmq_iface_addr(const char *iface, int family, struct sockaddr_storage *out,
               char *have, size_t havelen)
{
	struct ifaddrs        *ifa = NULL, *i;
	const struct sockaddr *sa;
	char                   txt[INET6_ADDRSTRLEN];
	const void            *bits;
	size_t                 pos   = 0;
	bool                   found = false;
	int                    rc    = -RMQ_ENODEV;

	if (have != NULL && havelen > 0)
		have[0] = '\0';
	if (getifaddrs(&ifa) != 0)
		return -RMQ_ENODEV;
	sa = iface_pick(ifa, iface, family, &found);
	if (sa != NULL) {
		memset(out, 0, sizeof(*out));
		memcpy(out, sa, family == AF_INET6 ? sizeof(struct sockaddr_in6)
		                                   : sizeof(struct sockaddr_in));
		rc = 0;
	} else if (found) {
		rc = -RMQ_EADDR;
	}
	/* For the message: the interfaces there are. */
	if (rc == -RMQ_ENODEV && have != NULL && havelen > 0)
		for (i = ifa; i != NULL; i = i->ifa_next)
			rmq_list_add(have, havelen, &pos, i->ifa_name);
	if (rc == 0 && have != NULL && havelen > 0) {
		bits = family == AF_INET6
		           ? (const void *) &((struct sockaddr_in6 *) out)->sin6_addr
		           : (const void *) &((struct sockaddr_in *) out)->sin_addr;
		snprintf(have, havelen, "%s",
		         inet_ntop(family, bits, txt, sizeof(txt)) ? txt : "?");
	}
	freeifaddrs(ifa);
	return rc;
}

bool
rmq_iface_has(const char *iface, const struct sockaddr *sa)
{
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *) sa, *b6;
	const struct sockaddr_in  *a4 = (const struct sockaddr_in *) sa, *b4;
	struct ifaddrs            *ifa = NULL, *i;
	bool                       has = false;

	if (getifaddrs(&ifa) != 0)
		return false;
	for (i = ifa; i != NULL && !has; i = i->ifa_next) {
		if (strcmp(i->ifa_name, iface) != 0 || i->ifa_addr == NULL ||
		    i->ifa_addr->sa_family != sa->sa_family)
			continue;
		b4  = (const struct sockaddr_in *) i->ifa_addr;
		b6  = (const struct sockaddr_in6 *) i->ifa_addr;
		has = sa->sa_family == AF_INET
		          ? b4->sin_addr.s_addr == a4->sin_addr.s_addr
		          : memcmp(&b6->sin6_addr, &a6->sin6_addr,
		                   sizeof(b6->sin6_addr)) == 0;
	}
	freeifaddrs(ifa);
	return has;
}

int
rmq_opt_int(const void *val, size_t len, int min, int *out)
{
	int v;

	if (val == NULL || len != sizeof(int))
		return -RMQ_EINVAL;
	memcpy(&v, val, sizeof(v));
	if (v < min)
		return -RMQ_EINVAL;
	*out = v;
	return 0;
}

int
rmq_opt_get_int(int v, void *val, size_t *len)
{
	if (*len < sizeof(int))
		return -RMQ_EINVAL;
	memcpy(val, &v, sizeof(v));
	*len = sizeof(int);
	return 0;
}

int
rmq_write_all(int fd, const uint8_t *b, size_t n, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	ssize_t       w;

	while (n > 0) {
		w = send(fd, b, n, MSG_NOSIGNAL);
		if (w > 0) {
			b += w;
			n -= (size_t) w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (poll(&pfd, 1, timeout_ms) <= 0)
			return -RMQ_ETIMEDOUT;
	}
	return 0;
}

/* rmq_copy()'s way round the store-to-load aliasing stall (util.h): from
 * the end down, 64 bytes at a time, the odd bytes at the end first. */
void
rmq_copy_back(void *dst, const void *src, size_t n)
{
	uint8_t       *d = dst;
	const uint8_t *s = src;
	size_t         i = n & ~(size_t) 63;
	uint8_t        t[64];

	if (n > i)
		memcpy(d + i, s + i, n - i);
	while (i >= 64) {
		i -= 64;
		memcpy(t, s + i, 64);
		memcpy(d + i, t, 64);
	}
}
