/*
 * What rmq_pingpong and rmq_bw share on top of common/bench.h: the roles and
 * how they are launched (--local, --server/--connect, mpirun -np 2), the
 * socket options both sides set, and the plan exchange that tells the
 * other side what comes next.
 *
 * A benchmark may ask for a second pair of sockets, the data sockets (role
 * .data): the plans and acks then travel on the first pair, a PAIR (the
 * control sockets), and the timed messages on the data pair, e.g. PUSH ->
 * PULL or PUB -> SUB, whose receiving end cannot send.  The measuring side
 * binds its data socket on an ephemeral port of HOST (-B: 127.0.0.1 unless
 * given, also under --connect), tells the other side over the control
 * pair, and returns once that side has connected (a SUB subscribed to
 * everything first, so the PUB has its filter when it is told).  A second
 * data pair (role .data2, e.g. PUB -> SUB beside PUSH -> PULL) is set up
 * the same way after the first, for a benchmark that alternates them.
 *
 * A forced path (RMQ_PATH) may refuse a size (-RMQ_EMSGSIZE) or the
 * provider (-RMQ_ENOTSUP).  The plan of each size doubles as a probe: the
 * measuring side sends it padded to the size it is about to use, and the
 * other side answers with an acknowledgement as long as what it will send
 * back.  Either send failing that way marks the size skipped on both sides,
 * before any timed message, so one size a path cannot carry does not end
 * the whole run.
 */
#ifndef RMQ_PERF_H
#define RMQ_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmq.h"

/* struct rmq_perf_role.path: leave RMQ_PATH as the socket has it. */
#define RMQ_PERF_PATH_UNSET (-2)

/* Plan commands shared by both benchmarks; the low byte is the command. */
#define RMQ_PERF_CMD_SIZE 1
#define RMQ_PERF_CMD_DONE 2
#define RMQ_PERF_CMD_SKIP 0x10000 /* in an ack: size is why (errno) */

/* What the measuring side tells the other before each size. */
struct rmq_perf_plan {
	uint32_t magic;  /* one per benchmark, so they do not mix */
	uint32_t cmd;    /* RMQ_PERF_CMD_* | the benchmark's own flags */
	uint64_t size;   /* bytes per message */
	uint64_t iters;  /* rounds, warm-up included */
	uint64_t reply;  /* bytes the other side sends back per round */
	uint32_t window; /* messages per round (1 for ping-pong) */
	int32_t  path;   /* RMQ_PATH to set, or RMQ_PERF_PATH_UNSET */
	uint32_t warmup; /* of iters, the untimed rounds first (rmq_bw) */
	uint32_t spare;  /* 0 */
};

struct rmq_perf_role {
	const char *prov;
	const char *host;
	const char *connect; /* --connect HOST:PORT */
	int         port;    /* -1: 25555, or derived from the job id */
	unsigned    salt;    /* keeps one program's job port off another's */
	bool        server, local, quiet, reqrep;
	bool        data;    /* open data sockets too (data_type) */
	int         data_type[2]; /* measuring side, other side (RMQ_PUSH..) */
	bool        data2;   /* and a second pair of data sockets */
	int         data2_type[2];
	int         rndv;    /* 0, or RMQ_RNDV_PATH */
	int         path;    /* RMQ_PATH, or RMQ_PERF_PATH_UNSET */
	int         cpus[2]; /* measuring side, other side (--local) */
};

/* What one side gets to work with. */
struct rmq_perf_side {
	rmq_socket *s;        /* the control socket (PAIR, REQ or REP) */
	rmq_socket *data;     /* role.data: the data socket, else NULL */
	rmq_socket *data2;    /* role.data2: the second, else NULL */
	const char *what;     /* how it was launched, for the header */
	int         path_err; /* why a socket refused the forced path */
};

typedef int (*rmq_perf_fn)(struct rmq_perf_side *side, void *arg);

extern const char *rmq_perf_prog; /* for messages */

int rmq_perf_die(const char *what, long rc);
void rmq_perf_pin(int cpu);

/* "auto" (-1) or a path name; --rndv: read, send, write or seg. */
int rmq_perf_parse_path(const char *s, int *path);
int rmq_perf_parse_rndv(const char *s, int *path);
/*
 * The long options of the role, for both programs' option tables; their
 * short forms are 'p', 'B' and 'P' ("p:B:P:" in the getopt string).
 */
#define RMQ_PERF_ROLE_LONGOPTS                                               \
	{"server", no_argument, NULL, 's'},                                  \
	    {"connect", required_argument, NULL, 'c'},                       \
	    {"local", no_argument, NULL, 'l'},                               \
	    {"cpus", required_argument, NULL, 'u'},                          \
	    {"rndv", required_argument, NULL, 'R'},                          \
	    {"path", required_argument, NULL, 'A'}
/*
 * Apply getopt's option c (argument arg) to r if it is one of the role's:
 * 1 taken, 0 not a role option, -1 a bad value (said on stderr).
 */
int rmq_perf_role_opt(struct rmq_perf_role *r, int c, const char *arg);

/* The forced path's name, or "auto". */
const char *rmq_perf_path_label(int path);

/* The path that sent the most messages between two snapshots; -1: none. */
int rmq_perf_main_path(const struct rmq_stats *a, const struct rmq_stats *b);

/*
 * Measuring side: send p, padded with buf to probe bytes (buf holds at
 * least probe bytes; its start is overwritten), and wait for the ack.
 * *skip is 0, or why the size cannot be carried (negative error).
 */
int rmq_perf_plan_send(rmq_socket *s, const struct rmq_perf_plan *p,
                       void *buf, size_t probe, int *skip);
/* Other side: the next plan (any size; what follows the plan is ignored). */
int rmq_perf_plan_recv(rmq_socket *s, uint32_t magic,
                       struct rmq_perf_plan *p);
/*
 * Other side: set the plan's path and ack with max(reply, plan) bytes from
 * buf (at least that long, or NULL when reply fits the plan).  *skip as
 * above; the ack then says so, and the size is not run.
 */
int rmq_perf_plan_ack(rmq_socket *s, const struct rmq_perf_plan *p,
                      void *buf, int *skip);

/*
 * Other side: the rounds of one size.  rbuf and sbuf hold at least
 * max(p->size, p->reply) bytes (sbuf zeroed when they grew).  Returns 0,
 * or an exit status (rmq_perf_die).
 */
typedef int (*rmq_perf_rounds_fn)(rmq_socket *s,
                                  const struct rmq_perf_plan *p,
                                  uint8_t *rbuf, uint8_t *sbuf);
/*
 * Other side: follow the plans until DONE -- ack each (from sbuf, as long
 * as the reply: the ack probes the way back), and run rounds for the
 * sizes not skipped.  Returns 0 or an exit status.
 */
int rmq_perf_follow(rmq_socket *s, uint32_t magic, rmq_perf_rounds_fn rounds);

/*
 * The same, for a side with data sockets: rounds gets the side (plans and
 * acks on side->s, messages on side->data).
 */
typedef int (*rmq_perf_side_rounds_fn)(struct rmq_perf_side *side,
                                       const struct rmq_perf_plan *p,
                                       uint8_t *rbuf, uint8_t *sbuf);
int rmq_perf_follow_side(struct rmq_perf_side *side, uint32_t magic,
                         rmq_perf_side_rounds_fn rounds);

/*
 * Wait until s has a message, driving also's progress meanwhile (NULL: none):
 * with progress.mode inline a socket moves only while its owner calls into
 * it, and a bound data socket must answer handshakes, a PUB serve reads of
 * its log, while the benchmark waits on its control socket.  0 when s is
 * readable, -RMQ_EAGAIN after timeout_ms (-1: never), or an error.
 */
int rmq_perf_wait_in(rmq_socket *s, rmq_socket *also, long timeout_ms);

/* "PAIR", "PUSH", ... for headers. */
const char *rmq_perf_type_name(int type);

/*
 * Open the socket(s), take the role the options or the MPI rank give, run
 * measure or other, close.  Returns the exit status (2: usage).
 */
int rmq_perf_run(const struct rmq_perf_role *r, rmq_perf_fn measure,
                 rmq_perf_fn other, void *arg);

#endif /* RMQ_PERF_H */
