/*
 * librmq configuration: one struct, one schema table (schema.c), loaded from
 * YAML with libyaml (config.c).  Internal; not installed.
 */
#ifndef RMQ_CONFIG_H
#define RMQ_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "prov.h" /* RMQ_PROV_NROWS */
#include "rmq.h"  /* enum rmq_log_level */

#define RMQ_CFG_STR_MAX 64
#define RMQ_CFG_ERR_MAX 512
#define RMQ_CFG_PATH_MAX 256 /* a file name key, with its NUL */


enum rmq_cfg_progress {
	RMQ_CFG_PROGRESS_INLINE = 0,
	RMQ_CFG_PROGRESS_THREAD = 1,
};

/* Where a value came from (rmq_info prints it). */
enum rmq_cfg_src {
	RMQ_CFG_SRC_DEFAULT = 0, /* schema default */
	RMQ_CFG_SRC_FILE,        /* the YAML file */
	RMQ_CFG_SRC_ENV,         /* an RMQ_* environment variable */
};

/* Room in src[]: the fixed keys and two knobs per provider row; schema.c
 * checks. */
#define RMQ_CFG_MAX_KEYS (54 + 2 * RMQ_PROV_NROWS)

/* Path thresholds of one section (0 and -1: inherit). */
struct rmq_cfg_paths {
	size_t inject_max; /* 0 = inherit */
	size_t eager_max;  /* 0 = inherit */
	size_t ring_max;   /* 0 = inherit */
	int    rndv;       /* RMQ_PATH_* above the ring/eager limit, -1 inherit */
	int    force;      /* RMQ_PATH_* for every message, -1 by size */
	int    fanout_log; /* PUB: subscribers at which the log is used,
	                    * 0 never, -1 inherit */
};

/* numa.policy: where slabs and rings are allocated (lib/numa.c). */
enum rmq_cfg_numa {
	RMQ_CFG_NUMA_AUTO = 0, /* the NIC's node, else the caller's */
	RMQ_CFG_NUMA_OFF,      /* no placement: first touch */
	RMQ_CFG_NUMA_NODE,     /* numa.node */
	RMQ_CFG_NUMA_CPUSET,   /* numa.cpuset: its CPUs and their nodes */
};

/* local.enabled: whether a peer on this host takes the local path. */
enum rmq_cfg_local {
	RMQ_CFG_LOCAL_OFF  = 0, /* never: the provider carries everything */
	RMQ_CFG_LOCAL_ON   = 1, /* yes, and a warning when it cannot */
	RMQ_CFG_LOCAL_AUTO = 2, /* yes where it can, quietly where not */
};

/*
 * A section of path keys: a pattern's (thresholds.SECTION, where SECTION is
 * the name a pattern gives itself: "pair", "reqrep"), or a socket name's
 * (thresholds.sockets.NAME, for sockets with that RMQ_NAME; NAME may be an
 * fnmatch(3) pattern, "bulk*": an exact name wins over patterns, then the
 * first pattern in the file).  The config does not know the patterns:
 * rmq_ctx_new checks that each pattern section is some pattern's.
 */
#define RMQ_CFG_SECT_MAX  8  /* pattern sections */
#define RMQ_CFG_SECT_NAME 16 /* a pattern section's name, with its NUL */
#define RMQ_CFG_NAMED_MAX 16 /* socket-name sections */
#define RMQ_CFG_NAME_MAX  64 /* a socket name, with its NUL */

/* ring.slots and ring.slot_size by default: the schema's defaults, and
 * what the selector assumes when it has no configuration.  A message may
 * take a quarter of the ring, and 17 slots of 4 KiB hold 64 KiB with its
 * header. */
#define RMQ_CFG_RING_SLOTS     68
#define RMQ_CFG_RING_SLOT_SIZE 4096
/* thresholds.in_place by default: where skipping the send's copy paid on
 * tcp (README, "Sends in place"). */
#define RMQ_CFG_IN_PLACE       8192
enum rmq_cfg_path_key {
	RMQ_CFG_PK_INJECT = 0, /* inject_max */
	RMQ_CFG_PK_EAGER,      /* eager_max */
	RMQ_CFG_PK_RING,       /* ring_max */
	RMQ_CFG_PK_RNDV,       /* rndv */
	RMQ_CFG_PK_PATH,       /* path */
	RMQ_CFG_PK_FANOUT,     /* fanout_log */
	RMQ_CFG_NPK,
};
struct rmq_cfg_section {
	char                 name[RMQ_CFG_NAME_MAX];
	struct rmq_cfg_paths p; /* 0 / -1 = not set */
	unsigned char        src[RMQ_CFG_NPK];  /* RMQ_CFG_SRC_* of each key */
	unsigned             line[RMQ_CFG_NPK]; /* file: where set; 0 = not */
	unsigned             col[RMQ_CFG_NPK];
};

/*
 * Every field has a default in schema.c.  Size thresholds of 0 mean "take
 * the provider row's value" (the provider row in providers/ knows the
 * provider's inject size and a measured eager limit).
 */
struct rmq_config {
	char     provider[RMQ_CFG_STR_MAX]; /* auto or a provider row's name */
	char     provider_order[RMQ_CFG_STR_MAX]; /* auto's choice: "verbs,tcp" */
	/* The provider rows' knobs (a row's iface_key and domain_key), by
	 * the row's place in the registry; "" = unset.  Read them by key:
	 * rmq_config_str(cfg, row->iface_key). */
	char     prov_iface[RMQ_PROV_NROWS][RMQ_CFG_STR_MAX];
	char     prov_domain[RMQ_PROV_NROWS][RMQ_CFG_STR_MAX];
	size_t   inject_max;     /* thresholds.inject_max, 0 = provider row */
	size_t   eager_max;      /* thresholds.eager_max,  0 = provider row */
	size_t   ring_max;       /* thresholds.ring_max,   0 = provider row */
	int      rndv;           /* thresholds.rndv: RMQ_PATH_*, -1 = row */
	int      force;          /* thresholds.path: RMQ_PATH_*, -1 = by size */
	int      tuned;          /* thresholds.tuned: written by rmq_tune */
	int      fanout_log;     /* thresholds.fanout_log, -1 = provider row */
	int64_t  in_place_min;   /* thresholds.in_place, -1 = never */
	int      fanout_slots;   /* fanout.slots: entries in a PUB's log */
	size_t   fanout_slot_size; /* fanout.slot_size: bytes per entry */
	struct rmq_cfg_section sect[RMQ_CFG_SECT_MAX]; /* thresholds.SECTION */
	int      nsect;
	int      ring_slots;     /* ring.slots per peer, 0 = no ring */
	size_t   ring_slot_size; /* ring.slot_size */
	int      ring_peers;     /* ring.peers: peers of a socket with a ring */
	int      strict;         /* strict: obey verbs/efa rules everywhere */
	size_t   slab_size;      /* memory.slab_size: multi-recv slab bytes */
	int      slabs;          /* memory.slabs: slabs posted per socket */
	int      numa_policy;    /* numa.policy: RMQ_CFG_NUMA_* */
	int      numa_node;      /* numa.node: for policy node, -1 none */
	char     numa_cpuset[RMQ_CFG_STR_MAX]; /* numa.cpuset: "0-3,8" */
	int      sndhwm;         /* limits.sndhwm: sends in flight */
	int      rcvhwm;         /* limits.rcvhwm: unread messages per peer */
	int64_t  max_msg_size;   /* limits.max_msg_size, -1 none */
	int      sndtimeo_ms;    /* timeouts.send_ms, -1 forever */
	int      rcvtimeo_ms;    /* timeouts.recv_ms, -1 forever */
	int      linger_ms;      /* timeouts.linger_ms, -1 forever */
	int      connect_ms;     /* timeouts.connect_ms */
	int      handshake_ms;   /* timeouts.handshake_ms */
	int      keepalive_ms;   /* timeouts.keepalive_ms: a silent peer's
	                          * host is lost after it */
	int      handshakes;     /* limits.handshakes */
	int      spin_us;        /* progress.spin_us before sleeping */
	int      progress_mode;  /* progress.mode: RMQ_CFG_PROGRESS_* */
	int      thread_sleep_us; /* progress.thread_sleep_us */
	int      wait_fd;        /* progress.wait_fd: CQs with a wait fd
	                          * where the provider has one */
	int      coalesce;       /* coalesce.enabled: pack queued messages */
	int      local;          /* local.enabled (RMQ_CFG_LOCAL_*): same-host
	                          * peers share a ring */
	size_t   local_ring;     /* local.ring: bytes of each local rx ring */
	int      local_peers;    /* local.peers: peers of a socket with one */
	size_t   local_split_min; /* local.split_min: both copy from here */
	int      coalesce_us;    /* coalesce.window_us: a send this soon after
	                          * the last one to a peer joins a batch */
	int      flush_us;       /* coalesce.flush_us: the flusher's period */
	int      log_level;      /* log: error|warn|info|debug */
	char     auth_key_file[RMQ_CFG_PATH_MAX]; /* auth.key_file, "" none */
	struct rmq_cfg_section named[RMQ_CFG_NAMED_MAX]; /* thresholds.sockets */
	int      nnamed;
	/* Not keys: where each value came from, and the file read. */
	unsigned char src[RMQ_CFG_MAX_KEYS]; /* RMQ_CFG_SRC_*, by schema row */
	unsigned line[RMQ_CFG_MAX_KEYS];     /* FILE: where it was set, 1-based */
	unsigned col[RMQ_CFG_MAX_KEYS];
	char     file[256];
};

/* Fill cfg with the schema's defaults. */
void rmq_config_defaults(struct rmq_config *cfg);

/*
 * Load a YAML file over the defaults.  On error returns -RMQ_ECONFIG (or
 * -ENOENT / -EACCES for a file that cannot be opened) and writes a message
 * of the form "FILE:LINE:COLUMN: KEY: what was expected" into err.
 */
int rmq_config_load(struct rmq_config *cfg, const char *path, char *err,
                    size_t errlen);

/* Same, from a string (name is used in messages in place of a file). */
int rmq_config_load_string(struct rmq_config *cfg, const char *yaml,
                           const char *name, char *err, size_t errlen);

/*
 * Apply environment overrides (RMQ_PROVIDER, RMQ_LOG, RMQ_EAGER_MAX,
 * RMQ_INJECT_MAX, RMQ_RING_MAX, RMQ_RNDV, RMQ_PATH, RMQ_STRICT,
 * RMQ_SPIN_US, every key as RMQ_<KEY>, and a pattern section's keys as
 * RMQ_THRESHOLDS_<SECTION>_<KEY>): same validation, messages name the
 * variable.
 */
int rmq_config_env(struct rmq_config *cfg, char *err, size_t errlen);

/* The schema row index of a dotted key (for cfg->src[]), or -1. */
int rmq_config_key_index(const char *key);
/* RMQ_ + key in capitals, dots as underscores: RMQ_LIMITS_SNDHWM. */
void rmq_config_env_name(const char *key, char *buf, size_t len);
/* The short environment variable for a key (RMQ_EAGER_MAX), or NULL;
 * every key also has its full name, RMQ_ + KEY with '.' as '_'. */
const char *rmq_config_env_var(const char *key);

/*
 * The thresholds.sockets section for a socket called name: the exact name,
 * else the first pattern that matches it; NULL if none (or name is NULL).
 */
const struct rmq_cfg_section *rmq_config_named(
    const struct rmq_config *cfg, const char *name);

/* The thresholds.SECTION section (a pattern's); NULL if none was set. */
const struct rmq_cfg_section *rmq_config_section(
    const struct rmq_config *cfg, const char *section);

/* "FILE:LINE:COL: key", "RMQ_VAR" or "key": where a key was set. */
void rmq_config_where(const struct rmq_config *cfg, const char *key,
    char *buf, size_t len);
/* The same for a pattern section: where its first key was set. */
void rmq_config_section_where(const struct rmq_config *cfg,
    const struct rmq_cfg_section *sc, char *buf, size_t len);

/* The text of a text key ("tcp.interface"); "" if unset, NULL if there is
 * no such key. */
const char *rmq_config_str(const struct rmq_config *cfg, const char *key);

/* Is name a valid socket name (RMQ_NAME): 1..63 of [A-Za-z0-9_-]? */
int rmq_config_name_ok(const char *name, size_t len);

/* Write every key's value and where it came from, as loadable YAML. */
int rmq_config_dump(const struct rmq_config *cfg, FILE *f);

#endif /* RMQ_CONFIG_H */
