/*
 * The path selector (select.c): for a message size, which path carries it,
 * and where each threshold came from.  The precedence of the threshold
 * layers is written down here and nowhere else.
 */
#ifndef RMQ_SELECT_H
#define RMQ_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "caps.h"
#include "config.h"
#include "path_ops.h"

/* Where a threshold came from. */
enum rmq_src {
	RMQ_SRC_ROW = 0, /* the provider row (measured) */
	RMQ_SRC_INFO,    /* what fi_info allows */
	RMQ_SRC_FILE,    /* the YAML file */
	RMQ_SRC_ENV,     /* an RMQ_* variable */
	RMQ_SRC_TUNED,   /* a file rmq_tune wrote */
	RMQ_SRC_OPT,     /* a socket option */
	RMQ_SRC_CAPS,    /* asked-for path impossible: the next best */
	RMQ_SRC_NAMED,   /* the file's thresholds.sockets.NAME section */
};
const char *rmq_src_name(int src);

enum { RMQ_TH_INJECT, RMQ_TH_EAGER, RMQ_TH_RING, RMQ_TH_RNDV, RMQ_TH_FORCE,
       RMQ_TH_FANOUT, RMQ_TH_COUNT };

struct rmq_path_table {
	bool    inject;     /* inject possible at all */
	bool    ring_ok;    /* ring possible (provider and ring.slots) */
	bool    ring;       /* ... and mixed with other paths by size
	                     * (the domain orders writes with sends) */
	size_t  inject_max; /* payload <= inject_max: inject */
	size_t  eager_max;  /* payload <= eager_max: eager */
	size_t  ring_max;   /* payload <= ring_max: ring (if ring) */
	size_t  ring_cap;   /* largest payload one ring message can hold */
	int     rndv_path;  /* larger: RNDV_READ/_WRITE/_SEND or SEG */
	int     force;      /* -1, or the one path for every message */
	int     fanout_log; /* PUB: at this many subscribers they read a log
	                     * (0: never, or the provider cannot) */
	uint8_t src[RMQ_TH_COUNT]; /* RMQ_SRC_* of each */
	/* The rows (the domain's caps.rows): the row of each range (-1:
	 * none), and the fabric link's short way: the first range row's
	 * send_now (NULL: none). */
	const struct rmq_path_ops *const *rows;
	int8_t  range_row[RMQ_RANGES];
	int   (*send_now)(struct rmq_socket *s, struct rmq_peer *p,
	                  const void *buf, size_t len, uint32_t msgid);
};

/* The socket options that change the table. */
struct rmq_path_opts {
	size_t inject_max;   /* 0: not set */
	size_t eager_max;    /* 0: not set */
	size_t ring_max;     /* with ring_max_set (0 = no ring) */
	bool   ring_max_set;
	int    rndv_path;    /* 0: not set */
	int    force;        /* RMQ_PATH: -2 not set, -1 by size, a path */
	int    fanout_log;   /* RMQ_FANOUT_LOG: -1 not set */
};
void rmq_path_opts_init(struct rmq_path_opts *o);

/*
 * The layers, lowest first: the provider row (or fi_info's limits), the
 * global keys of the file or the environment, the pattern's section
 * (thresholds.SECTION, named by the pattern), the socket name's section
 * (thresholds.sockets.NAME), and the socket options.  section, name and o
 * may be NULL.
 */
void rmq_path_table_init(struct rmq_path_table *t, const struct rmq_caps *c,
                         const struct rmq_config *cfg, const char *section);
void rmq_path_table_named(struct rmq_path_table *t, const struct rmq_caps *c,
                          const struct rmq_config *cfg, const char *name);
void rmq_path_table_opts(struct rmq_path_table *t,
                         const struct rmq_path_opts *o);
/* Keep the thresholds consistent after a change. */
void rmq_path_table_fix(struct rmq_path_table *t, const struct rmq_caps *c);
/* All layers; then a path asked for that the provider cannot carry is
 * -RMQ_ENOTSUP (logged with why). */
int  rmq_path_table_build(struct rmq_path_table *t, const struct rmq_caps *c,
                          const struct rmq_config *cfg, const char *section,
                          const char *name, const struct rmq_path_opts *o);
/* Range r's bound in t (RMQ_RANGE_*, path_ops.h): 0 where the table
 * does not use that range. */
size_t rmq_range_max(const struct rmq_path_table *t, int r);
/* Returns the row (its id) for a message of len bytes. */
int  rmq_path_select(const struct rmq_path_table *t, size_t len);

/*
 * Will a socket mix the ring with other paths by size?  Then its domain
 * must order writes with sends, asked for only then (caps.c says why).
 * Decided before the domain opens, by the same layers over the provider
 * row (fi_info's limits are not known yet).
 */
bool rmq_wants_ring(const struct rmq_path_ops *const *rows,
                    const struct rmq_config *cfg, const struct rmq_prov *prov,
                    const char *section, const char *name,
                    const struct rmq_path_opts *o);

#endif /* RMQ_SELECT_H */
