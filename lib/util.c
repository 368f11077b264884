/* Logging, clocks, randomness and error strings. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "rmq_config.h"
#include "rmq_int.h"

static atomic_int rmq_log_level = RMQ_LOG_WARN;

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
	char    line[512];
	va_list ap;

	if (level > atomic_load(&rmq_log_level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "librmq: %s: %s\n", names[level], line);
}

int64_t
rmq_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
rmq_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return INT64_MAX;
	return rmq_now_ns() + (int64_t) timeout_ms * 1000000;
}

uint64_t
rmq_random64(void)
{
	uint64_t v = 0;

	/* getrandom() from the kernel CSPRNG; keys must not be guessable. */
	if (getrandom(&v, sizeof(v), 0) != (ssize_t) sizeof(v))
		v = (uint64_t) rmq_now_ns() * 0x9e3779b97f4a7c15ull;
	return v;
}

/* X-macro, so the codes and their strings cannot drift apart. */
#define RMQ_OWN_ERRORS(X)                                                   \
	X(RMQ_ECLOSED, "socket or context closed")                           \
	X(RMQ_EFSM, "operation not valid in the socket's current state")     \
	X(RMQ_EPROTO, "protocol error: malformed message or handshake")      \
	X(RMQ_EVERSION, "peer speaks another librmq wire version")           \
	X(RMQ_EPROVIDER, "peer uses another libfabric provider")             \
	X(RMQ_EPATTERN, "peer's socket type does not match ours")            \
	X(RMQ_ECONFIG, "bad configuration")                                  \
	X(RMQ_EADDR, "malformed endpoint (expected scheme://host:port)")     \
	X(RMQ_ETRUNC, "message truncated")                                   \
	X(RMQ_EPEERFULL, "socket already has its one peer (PAIR)")

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
	if (err < 256)
		return strerror(err);
	return fi_strerror(err);
}

const char *
rmq_path_name(int path)
{
	switch (path) {
	case RMQ_PATH_INJECT:
		return "inject";
	case RMQ_PATH_EAGER:
		return "eager";
	case RMQ_PATH_RNDV_READ:
		return "rndv_read";
	case RMQ_PATH_RNDV_SEND:
		return "rndv_send";
	case RMQ_PATH_RING:
		return "ring";
	case RMQ_PATH_RNDV_WRITE:
		return "rndv_write";
	case RMQ_PATH_SEG:
		return "seg";
	default:
		return "?";
	}
}

const char *
rmq_version(void)
{
	return RMQ_VERSION_STRING;
}
