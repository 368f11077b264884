/*
 * librmq: ZeroMQ-style messaging over libfabric.
 *
 * This header is the whole public API.  Every function returns 0 (or a
 * size) on success and a negative error code on failure: -errno values,
 * libfabric's -FI_Exxx (equal to errno below 256, its own from 256 up: so
 * fi_* results pass through unchanged), or one of the librmq-only codes
 * below, which start at RMQ_ERRNO_BASE (65536), above both.
 *
 * Threading: a context is thread-safe; a socket is not (as in ZeroMQ), so a
 * socket must be used by one thread at a time.
 */
#ifndef RMQ_H
#define RMQ_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RMQ_API __attribute__((visibility("default")))
#else
#define RMQ_API
#endif

#define RMQ_VERSION_MAJOR 0
#define RMQ_VERSION_MINOR 1
#define RMQ_VERSION_PATCH 0

typedef struct rmq_ctx    rmq_ctx;
typedef struct rmq_socket rmq_socket;
typedef struct rmq_msg    rmq_msg;

/* librmq-only error codes start here: above every errno (< 4096) and
 * every libfabric FI_E* code (256 to FI_ERRNO_MAX, below 4096). */
#define RMQ_ERRNO_BASE 65536

/* Error codes.  Functions return the negative value. */
enum rmq_err {
	RMQ_OK        = 0,
	RMQ_EAGAIN    = EAGAIN,    /* would block, or a timeout expired */
	RMQ_EINVAL    = EINVAL,    /* bad argument */
	RMQ_ENOMEM    = ENOMEM,    /* out of memory */
	RMQ_EMSGSIZE  = EMSGSIZE,  /* larger than RMQ_MAXMSGSIZE (ours/peer's) */
	RMQ_ENOTSUP   = ENOTSUP,   /* not supported (yet, or by provider) */
	RMQ_ECONNRESET = ECONNRESET, /* the peer died or went away */
	RMQ_ENOTCONN  = ENOTCONN,  /* no peer to talk to */
	RMQ_EADDRINUSE = EADDRINUSE,
	RMQ_ECONNREFUSED = ECONNREFUSED,
	RMQ_ETIMEDOUT = ETIMEDOUT, /* connect/handshake timed out */
	RMQ_ENODEV    = ENODEV,    /* the provider is not on this machine */
	RMQ_EHOSTUNREACH = EHOSTUNREACH, /* ROUTER: no peer with that routing
	                            * id (RMQ_ROUTER_MANDATORY) */
	RMQ_ECLOSED   = RMQ_ERRNO_BASE, /* the socket or context is closed */
	RMQ_EFSM,                  /* operation not valid in this state
	                            * (REQ: recv first; REP: send first) */
	RMQ_EPROTO,                /* malformed message or handshake */
	RMQ_EVERSION,              /* peer speaks another wire version */
	RMQ_EPROVIDER,             /* the peer, or an earlier bind/connect
	                            * of the socket, uses another provider */
	RMQ_EPATTERN,              /* peer's pattern does not match ours */
	RMQ_ECONFIG,               /* bad configuration file or value */
	RMQ_EADDR,                 /* malformed endpoint string (an
	                            * unknown scheme: -EPROTONOSUPPORT) */
	RMQ_ETRUNC,                /* reserved: message truncated */
	RMQ_EPEERFULL,             /* no room for another peer: a PAIR has
	                            * its one, or the provider's limit (shm:
	                            * 4,096 per socket) */
	RMQ_ERESOLVE,              /* the endpoint's host name does not
	                            * resolve */
	RMQ_EAUTH,                 /* authentication failed: the peer does
	                            * not hold our auth.key_file's key, or
	                            * one side has a key and the other not */
	RMQ_ERR_MAX
};

/* Socket types (the pattern). */
enum rmq_type {
	RMQ_PAIR = 0,
	RMQ_PUB  = 1,
	RMQ_SUB  = 2,
	RMQ_REQ  = 3,
	RMQ_REP  = 4,
	RMQ_DEALER = 5, /* requests round-robin, replies fair-queued, many
	                 * in flight (rmq_rpc(7)) */
	RMQ_ROUTER = 6, /* each message received starts with its peer's
	                 * routing id; a send's first frame names the peer */
	RMQ_PUSH = 8,
	RMQ_PULL = 7,
};

/* Flags for send/recv. */
#define RMQ_DONTWAIT 0x1
#define RMQ_SNDMORE  0x2 /* send: more frames of this message follow; a
                          * message of several frames is delivered whole
                          * or not at all, never interleaved with another
                          * (rmq_send(3)) */

/* Socket options (rmq_setopt / rmq_getopt).  Values are int unless noted. */
enum rmq_opt {
	RMQ_SNDTIMEO      = 1,  /* ms, -1 = forever (default) */
	RMQ_RCVTIMEO      = 2,  /* ms, -1 = forever (default) */
	RMQ_LINGER        = 3,  /* ms rmq_close waits for sends; -1 forever */
	RMQ_MAXMSGSIZE    = 4,  /* int64_t bytes; -1 = no limit */
	RMQ_SNDHWM        = 5,  /* messages in flight per socket */
	RMQ_RCVHWM        = 6,  /* unread messages per peer (credits) */
	RMQ_CONNECT_TIMEOUT = 7, /* ms rmq_connect keeps retrying */
	RMQ_LAST_ENDPOINT = 8,  /* getopt only: char[], the bound address */
	RMQ_TYPE          = 9,  /* getopt only */
	RMQ_PROVIDER_NAME = 10, /* getopt only: char[], libfabric provider */
	RMQ_INJECT_MAX    = 11, /* size_t: largest payload sent by inject */
	RMQ_EAGER_MAX     = 12, /* size_t: largest payload sent eager */
	RMQ_NPEERS        = 13, /* getopt only: connected peers */
	RMQ_RNDV_PATH     = 14, /* int: what carries messages above the
	                         * ring/eager limit: RMQ_PATH_RNDV_READ,
	                         * _RNDV_WRITE, _RNDV_SEND or _SEG (default:
	                         * the provider row's) */
	RMQ_PATH          = 15, /* int: force one path for every message
	                         * (RMQ_PATH_*), or -1 = by size (default) */
	RMQ_RING_MAX      = 16, /* size_t: largest payload sent by the ring
	                         * (0: no ring; above eager_max to use it) */
	RMQ_STRICT        = 17, /* getopt only: 1 if the socket obeys the
	                         * verbs/efa rules (rmq_paths(7)) */
	RMQ_NAME          = 18, /* char[]: the socket's name (1..63 of
	                         * A-Z a-z 0-9 _ -), set before bind/connect;
	                         * picks its thresholds.sockets.NAME section
	                         * of the config (rmq.yaml(5)) */
	RMQ_DOMAIN_NAME   = 19, /* getopt only: char[], the fabric domain
	                         * (e.g. eth0, lo, mlx5_0); "" before
	                         * bind/connect */
	RMQ_SUBSCRIBE     = 20, /* SUB, setopt: a byte prefix (len 0 = all);
	                         * returns once every connected publisher
	                         * filters with it */
	RMQ_UNSUBSCRIBE   = 21, /* SUB, setopt: remove one such prefix */
	RMQ_NODROP        = 22, /* PUB, int: 1 = at a subscriber's high-water
	                         * mark wait (or -RMQ_EAGAIN) instead of
	                         * dropping its copy (default 0: drop,
	                         * counted in rmq_stats().dropped) */
	RMQ_FD            = 23, /* getopt only, int: a file descriptor that
	                         * becomes readable when the socket's events
	                         * may have changed (then read RMQ_EVENTS) */
	RMQ_EVENTS        = 24, /* getopt only, int: RMQ_POLLIN | RMQ_POLLOUT
	                         * that would not block now */
	RMQ_FANOUT_LOG    = 25, /* PUB, int: at this many subscribers, write
	                         * each message once into a log they read
	                         * with fi_read (rmq_pubsub(7)); 0 = never;
	                         * default thresholds.fanout_log.  Set before
	                         * the first send. */
	RMQ_RECONNECT_IVL = 26, /* ms a connecting socket waits before it
	                         * connects again after its peer went or a
	                         * try failed (plus up to as much at random);
	                         * default 100; -1 = never reconnect */
	RMQ_RECONNECT_IVL_MAX = 27, /* ms: the wait doubles after each failed
	                         * try up to this (0, the default: no
	                         * doubling) */
	RMQ_CONNECT_ASYNC = 28, /* 1: rmq_connect returns at once and
	                         * connects in the background; a PAIR or
	                         * PUSH keeps up to RMQ_SNDHWM messages sent
	                         * meanwhile.  Default 0: rmq_connect returns
	                         * once the handshake is done. */
	RMQ_RCVMORE       = 29, /* getopt only, int: 1 if the frame just
	                         * received has more frames of its message
	                         * after it, else 0 */
	RMQ_ROUTING_ID    = 30, /* bytes (1 to 255, not starting with a zero
	                         * byte): the identity ROUTER peers see for
	                         * this socket; set before bind/connect;
	                         * getopt: length 0 until set */
	RMQ_ROUTER_MANDATORY = 31, /* ROUTER, int: 1 = a send to a routing id
	                         * not connected fails with -RMQ_EHOSTUNREACH;
	                         * 0 (default) = dropped, counted */
};

/* Events (RMQ_EVENTS, rmq_pollitem). */
#define RMQ_POLLIN  1 /* a receive would not block */
#define RMQ_POLLOUT 2 /* a send would not block */
#define RMQ_POLLERR 4 /* fd items: poll(2) said POLLERR, POLLHUP or POLLNVAL */

/* One thing rmq_poll() waits on: a socket, or (socket NULL) an fd. */
typedef struct rmq_pollitem {
	rmq_socket *socket; /* or NULL, then fd is polled like poll(2) */
	int         fd;
	short       events;  /* RMQ_POLLIN | RMQ_POLLOUT */
	short       revents; /* set by rmq_poll */
} rmq_pollitem;

/* The ways a message can travel (see rmq(7)). */
enum rmq_path {
	RMQ_PATH_INJECT    = 0, /* fi_inject: header + payload, no completion */
	RMQ_PATH_EAGER     = 1, /* fi_send into the peer's multi-recv slabs */
	RMQ_PATH_RNDV_READ = 2, /* receiver pulls the payload with fi_read */
	RMQ_PATH_RNDV_SEND = 3, /* receiver posts a tagged receive into the
	                         * destination and says CTS; the sender sends
	                         * the payload two-sided (the provider's own
	                         * bulk protocol: CMA/SAR on shm, rxm's
	                         * rendezvous on tcp) */
	RMQ_PATH_RING      = 4, /* fi_writedata into a ring in the receiver's
	                         * registered memory; the 32-bit immediate
	                         * says where */
	RMQ_PATH_RNDV_WRITE = 5, /* receiver grants its buffer, the sender
	                          * fi_write's the payload and signals with
	                          * fi_writedata */
	RMQ_PATH_SEG       = 6, /* segmented two-sided: eager-sized pieces,
	                         * for providers without RMA */
	RMQ_PATH_LOCAL     = 7, /* a peer on this host: a ring in memory the
	                         * two processes share, whatever the
	                         * provider (local.enabled, rmq_paths(7)) */
	RMQ_PATH_COUNT     = 8, /* the paths this header names; the library
	                         * may have more (rmq_path_count()) */
	RMQ_PATH_MAX       = 8  /* size of the arrays in struct rmq_stats:
	                         * fixed, whatever paths come later */
};

/*
 * A socket's counters.  The layout is fixed for the life of the ABI: its
 * per-path arrays hold the paths 0 .. RMQ_PATH_MAX - 1, and a path added
 * later is read with rmq_path_stats(); a new counter takes a reserved
 * word (zero until then), and past those a new call (rmq_stats(3)).
 */
struct rmq_stats {
	uint64_t sent_msgs[RMQ_PATH_MAX];
	uint64_t sent_bytes[RMQ_PATH_MAX];
	uint64_t recv_msgs[RMQ_PATH_MAX];
	uint64_t recv_bytes[RMQ_PATH_MAX];
	uint64_t peers_connected;  /* handshakes completed */
	uint64_t peers_lost;       /* peers that died or left */
	uint64_t handshake_errors; /* rejected or malformed handshakes */
	uint64_t proto_errors;     /* malformed messages from peers */
	uint64_t dropped;          /* messages discarded (see rmq(7)) */
	uint64_t eagain;           /* provider -FI_EAGAIN retries */
	uint64_t coalesced;        /* messages sent packed with others into
	                            * one transfer (coalescing, rmq_paths(7)) */
	uint64_t reconnects;       /* connections a connecting socket made
	                            * again after its peer went */
	uint64_t auth_failures;    /* handshakes refused for authentication
	                            * (auth.key_file): also in
	                            * handshake_errors */
	uint64_t split_copies;     /* large messages from a peer on this host
	                            * that both sides copied, half each
	                            * (local.split_min, rmq_paths(7)) */
	uint64_t direct_copies;    /* messages from a peer on this host read
	                            * straight from its memory, not through
	                            * the ring (large and, where it costs
	                            * less, mid-sized; rmq_paths(7)) */
	uint64_t sent_in_place;    /* messages sent from the caller's buffer
	                            * without a copy (thresholds.in_place,
	                            * rmq_paths(7)) */
	uint64_t reserved[4];
};

/*
 * Logging.  librmq logs at most at the level of the config's log key (or
 * RMQ_LOG: off, error, warn -- the default --, info, debug), to stderr,
 * or to fn(level, message, arg) once set (NULL: stderr again).  Set it
 * before other threads call librmq; messages have no newline.  At warn
 * and error only what a caller cannot learn otherwise (a peer lost or
 * refused in the background, messages lost, a fall-back; and where a
 * configuration error is); why a call failed is logged at info.
 */
enum rmq_log_level {
	RMQ_LOG_OFF   = -1, /* nothing */
	RMQ_LOG_ERROR = 0,
	RMQ_LOG_WARN  = 1,
	RMQ_LOG_INFO  = 2,
	RMQ_LOG_DEBUG = 3,
};
typedef void (*rmq_log_fn)(int level, const char *message, void *arg);
RMQ_API void rmq_set_log_fn(rmq_log_fn fn, void *arg);

/* Context.  config_path NULL: $RMQ_CONFIG if set, else built-in defaults. */
RMQ_API int rmq_ctx_new(rmq_ctx **ctx, const char *config_path);
RMQ_API int rmq_ctx_destroy(rmq_ctx *ctx);
/* Every call blocked on a socket of ctx returns -RMQ_ECLOSED at once, and
 * every later send, receive, bind, connect or poll of them does too; close
 * the sockets, then rmq_ctx_destroy (ZeroMQ's zmq_ctx_shutdown). */
RMQ_API int rmq_ctx_shutdown(rmq_ctx *ctx);

/* Sockets. */
RMQ_API int rmq_socket_open(rmq_ctx *ctx, int type, rmq_socket **s);
RMQ_API int rmq_close(rmq_socket *s);
RMQ_API int rmq_bind(rmq_socket *s, const char *endpoint);
RMQ_API int rmq_connect(rmq_socket *s, const char *endpoint);
/* Undo one rmq_connect (no more reconnecting; its peer gets a goodbye,
 * within RMQ_LINGER) / one rmq_bind (no new peers there; connected ones
 * stay).  endpoint: as given (or, for unbind, as RMQ_LAST_ENDPOINT says);
 * -ENOENT if there is none. */
RMQ_API int rmq_disconnect(rmq_socket *s, const char *endpoint);
RMQ_API int rmq_unbind(rmq_socket *s, const char *endpoint);
RMQ_API ssize_t rmq_send(rmq_socket *s, const void *buf, size_t len,
                         int flags);
/* Returns the message's full size; copies at most cap bytes. */
RMQ_API ssize_t rmq_recv(rmq_socket *s, void *buf, size_t cap, int flags);
RMQ_API int rmq_setopt(rmq_socket *s, int opt, const void *val, size_t len);
RMQ_API int rmq_getopt(rmq_socket *s, int opt, void *val, size_t *len);

/*
 * Wait until one of items is ready, or timeout_ms passes (-1 = forever,
 * 0 = look once).  Returns the number of items with revents != 0, 0 on
 * timeout, or -error.  It drives the progress of every socket in items,
 * whatever its events (0 included).
 */
RMQ_API int rmq_poll(rmq_pollitem *items, int nitems, long timeout_ms);

/* Zero-copy messages. */
RMQ_API int rmq_msg_alloc(rmq_socket *s, size_t size, rmq_msg **m);
RMQ_API void *rmq_msg_data(rmq_msg *m);
RMQ_API size_t rmq_msg_size(const rmq_msg *m);
/* Takes ownership of m on success; on failure m is still the caller's. */
RMQ_API int rmq_msg_send(rmq_socket *s, rmq_msg *m, int flags);
RMQ_API int rmq_msg_recv(rmq_socket *s, rmq_msg **m, int flags);
RMQ_API void rmq_msg_free(rmq_msg *m);

RMQ_API int rmq_stats(rmq_socket *s, struct rmq_stats *st);
/* One path's counters, for any path the library has (0 ..
 * rmq_path_count() - 1): -RMQ_EINVAL for another. */
struct rmq_path_stats {
	uint64_t sent_msgs;
	uint64_t sent_bytes;
	uint64_t recv_msgs;
	uint64_t recv_bytes;
};
RMQ_API int rmq_path_stats(rmq_socket *s, int path, struct rmq_path_stats *ps);
RMQ_API const char *rmq_strerror(int err); /* err or -err */
/* The path of id path (0 .. rmq_path_count() - 1): its name, "?" for
 * none; by name: its id, or -RMQ_EINVAL. */
RMQ_API const char *rmq_path_name(int path);
RMQ_API int rmq_path_id(const char *name);
/* How many paths this library has: RMQ_PATH_COUNT or more (a library
 * newer than this header may have paths it does not name). */
RMQ_API int rmq_path_count(void);
RMQ_API const char *rmq_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RMQ_H */
