/*
 * The configuration schema.  Every key, its type, range and default lives
 * in the one table below; rmq_config_defaults(), the YAML loader, the
 * environment overrides and rmq.yaml.example all follow it.  Adding a key
 * means adding a field to struct rmq_config, a row here, bumping
 * RMQ_SCHEMA_NFIXED, and a paragraph in rmq.yaml.example.
 *
 * What names a provider comes from the provider registry instead
 * (providers/prov.h), when the table is first used: the choices of
 * provider and provider_order, provider_order's default, and the keys of
 * each row's knobs ("tcp.interface"), which go after provider_order.
 *
 * Values are parsed by hand rather than with strtol()/strtoull(): those
 * accept leading blanks, "0x", signs on unsigned numbers and saturate on
 * overflow, and a configuration file should reject all of that.
 */
#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "rmq.h"
#include "rmq_path_rows.h"
#include "schema.h"

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

#define KiB ((int64_t) 1 << 10)
#define MiB ((int64_t) 1 << 20)
#define GiB ((int64_t) 1 << 30)
#define TiB ((int64_t) 1 << 40)

/* The offset and size of a field of struct rmq_config. */
#define FIELD(f)                                                              \
	offsetof(struct rmq_config, f), sizeof(((struct rmq_config *) 0)->f)

#define SIZE_EXAMPLE "a size (e.g. 65536, 64KiB)"
#define DIST_MAX     64 /* longer names are never within reach */
#define SUGGEST_MAX  3 /* largest edit distance we suggest */

/*
 * Filled from the registry by schema_init().  provider: auto, then each
 * row as rmq_prov_listed() orders them, its value its registry index + 1.
 * provider_order: every row, in the registry's order (the preference);
 * by default those that reach beyond this host (not RMQ_PROV_LOCAL_ONLY:
 * auto must not take one that cannot reach the peers of a multi-node job).
 */
static struct rmq_schema_choice providers[RMQ_PROV_NROWS + 2];
static struct rmq_schema_choice order_providers[RMQ_PROV_NROWS + 1];
static char                     order_default[RMQ_CFG_STR_MAX];

static const struct rmq_schema_choice log_levels[] = {
	{ "off", RMQ_LOG_OFF },
	{ "error", RMQ_LOG_ERROR },
	{ "warn", RMQ_LOG_WARN },
	{ "info", RMQ_LOG_INFO },
	{ "debug", RMQ_LOG_DEBUG },
	{ NULL, 0 },
};

/*
 * The paths, from the registry (lib/meson.build's rmq_path_rows, generated
 * into rmq_path_rows.h, which sits below config/): every one for
 * thresholds.path, the LARGE ones -- those that may carry what lies above
 * every range -- for thresholds.rndv.
 */
#define PATH_CHOICE(n, k)    { #n, RMQ_ROW_ID_##n },
#define RNDV_CHOICE(n, k)    RNDV_CHOICE_##k(n)
#define RNDV_CHOICE_LARGE(n) { #n, RMQ_ROW_ID_##n },
#define RNDV_CHOICE_RANGE(n)
#define RNDV_CHOICE_LINK(n)

static const struct rmq_schema_choice rndv_paths[] = {
	{ "auto", -1 },
	RMQ_PATH_ROWS(RNDV_CHOICE)
	{ NULL, 0 },
};

static const struct rmq_schema_choice all_paths[] = {
	{ "auto", -1 },
	RMQ_PATH_ROWS(PATH_CHOICE)
	{ NULL, 0 },
};

static const struct rmq_schema_choice booleans[] = {
	{ "false", 0 },
	{ "true", 1 },
	{ "off", 0 },
	{ "on", 1 },
	{ "no", 0 },
	{ "yes", 1 },
	{ "0", 0 }, /* RMQ_STRICT=1 in a job script */
	{ "1", 1 },
	{ NULL, 0 },
};

static const struct rmq_schema_choice local_modes[] = {
	{ "auto", RMQ_CFG_LOCAL_AUTO },
	{ "false", RMQ_CFG_LOCAL_OFF },
	{ "true", RMQ_CFG_LOCAL_ON },
	{ "off", RMQ_CFG_LOCAL_OFF },
	{ "on", RMQ_CFG_LOCAL_ON },
	{ "no", RMQ_CFG_LOCAL_OFF },
	{ "yes", RMQ_CFG_LOCAL_ON },
	{ "0", RMQ_CFG_LOCAL_OFF }, /* RMQ_LOCAL=0 */
	{ "1", RMQ_CFG_LOCAL_ON },
	{ NULL, 0 },
};

static const struct rmq_schema_choice progress_modes[] = {
	{ "inline", RMQ_CFG_PROGRESS_INLINE },
	{ "thread", RMQ_CFG_PROGRESS_THREAD },
	{ NULL, 0 },
};

static const struct rmq_schema_choice numa_policies[] = {
	{ "auto", RMQ_CFG_NUMA_AUTO },
	{ "off", RMQ_CFG_NUMA_OFF },
	{ "node", RMQ_CFG_NUMA_NODE },
	{ "cpuset", RMQ_CFG_NUMA_CPUSET },
	{ NULL, 0 },
};

enum parse_result {
	PARSE_OK,
	PARSE_BAD, /* not of the expected form */
	PARSE_RANGE, /* well formed but does not fit in 64 bits */
};

static enum parse_result parse_digits(
    const char *text, size_t len, size_t *i, uint64_t *out);

/*
 * The STR rows' checks: syntax only; text NULL asks for the expectation.  Whether the interface exists, the
 * device is there or the CPUs are this machine's is for rmq_ctx_new and
 * the first domain, which know the machine.
 */
#define IFACE_MAX 15 /* IFNAMSIZ - 1 */
#define CPU_MAX   65535 /* largest CPU number in a numa.cpuset */

static int
check_iface(const char *text, size_t len, char *what, size_t whatlen)
{
	size_t i;

	for (i = 0; i < len; i++) {
		char c = text[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		        || (c >= '0' && c <= '9') || c == '_' || c == '-'
		        || c == '.' || c == ':' || c == '@'))
			break;
	}
	if (text != NULL && len <= IFACE_MAX && i == len)
		return 0;
	snprintf(what, whatlen,
	    "expected an interface name (up to %d of A-Z a-z 0-9 _ - . : @, "
	    "e.g. eth0)",
	    IFACE_MAX);
	return -1;
}

static int
check_domain(const char *text, size_t len, char *what, size_t whatlen)
{
	size_t i;

	/* No quote or backslash either: the dump writes the value in
	 * double quotes and must load back as it is (found by fuzz_yaml). */
	for (i = 0; i < len; i++)
		if ((unsigned char) text[i] <= 0x20
		    || (unsigned char) text[i] >= 0x7f || text[i] == '"'
		    || text[i] == '\\')
			break;
	if (text != NULL && len < RMQ_CFG_STR_MAX && i == len)
		return 0;
	snprintf(what, whatlen,
	    "expected a domain name as fi_info prints it (up to %d printable "
	    "characters, no spaces, quotes or backslashes, e.g. mlx5_0)",
	    RMQ_CFG_STR_MAX - 1);
	return -1;
}

/* A file name: printable, no quotes or backslashes (the dump writes the
 * value in double quotes); the file itself is read by rmq_ctx_new. */
static int
check_path(const char *text, size_t len, char *what, size_t whatlen)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char) text[i] < 0x20
		    || (unsigned char) text[i] >= 0x7f || text[i] == '"'
		    || text[i] == '\\')
			break;
	if (text != NULL && len < RMQ_CFG_PATH_MAX && i == len)
		return 0;
	snprintf(what, whatlen,
	    "expected a file name (up to %d printable characters, no quotes "
	    "or backslashes)",
	    RMQ_CFG_PATH_MAX - 1);
	return -1;
}

/* "0-3,8,10-11": hwloc's list syntax, each range low to high. */
static int
check_cpuset(const char *text, size_t len, char *what, size_t whatlen)
{
	uint64_t lo, hi;
	size_t   i = 0;
	int      ok = text != NULL && len > 0 && len < RMQ_CFG_STR_MAX;

	while (ok && i < len) {
		if (parse_digits(text, len, &i, &lo) != PARSE_OK || lo > CPU_MAX) {
			ok = 0;
			break;
		}
		hi = lo;
		if (i < len && text[i] == '-') {
			i++;
			if (parse_digits(text, len, &i, &hi) != PARSE_OK
			    || hi > CPU_MAX || hi < lo) {
				ok = 0;
				break;
			}
		}
		if (i < len && text[i] == ',' && i + 1 < len)
			i++;
		else if (i < len)
			ok = 0;
	}
	if (ok)
		return 0;
	snprintf(what, whatlen,
	    "expected CPUs as a list of numbers and low-high ranges up to "
	    "%d (e.g. 0-3,8)",
	    CPU_MAX);
	return -1;
}

/* Where schema_init() puts the provider rows' knobs. */
#define PROVIDER_KNOBS { NULL }

/*
 * name, type, min, max, default, choices, field, description.
 * Keep sections together: rmq.yaml.example lists them in this order.
 */
#if defined(__GNUC__)
/* Rows without a check or a text default leave those two fields NULL. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
static const struct rmq_schema_key fixed[] = {
	{ "provider", RMQ_SCHEMA_STRENUM, 0, 0, 0, providers, FIELD(provider),
	    "libfabric provider; auto takes the first of provider_order that "
	    "this machine has" },
	{ "provider_order", RMQ_SCHEMA_LIST, 0, 0, 0, order_providers,
	    FIELD(provider_order),
	    "provider auto: the providers to try, best first",
	    NULL, order_default },
	PROVIDER_KNOBS,
	{ "log.level", RMQ_SCHEMA_ENUM, 0, 0, RMQ_LOG_WARN, log_levels,
	    FIELD(log_level),
	    "least severe message that is logged; off = none" },
	{ "thresholds.inject_max", RMQ_SCHEMA_SIZE, 0, 1 * MiB, 0, NULL,
	    FIELD(inject_max),
	    "largest payload sent with fi_inject; 0 = the provider's value" },
	{ "thresholds.eager_max", RMQ_SCHEMA_SIZE, 0, 64 * MiB, 0, NULL,
	    FIELD(eager_max),
	    "largest payload sent eagerly; 0 = the provider's value" },
	{ "thresholds.ring_max", RMQ_SCHEMA_SIZE, 0, 64 * MiB, 0, NULL,
	    FIELD(ring_max),
	    "largest payload written into the peer's ring; 0 = the provider's "
	    "value; at most eager_max = no ring" },
	{ "thresholds.rndv", RMQ_SCHEMA_ENUM, 0, 0, -1, rndv_paths,
	    FIELD(rndv),
	    "path for messages above the ring/eager limit; auto = the "
	    "provider's measured choice" },
	{ "thresholds.path", RMQ_SCHEMA_ENUM, 0, 0, -1, all_paths,
	    FIELD(force),
	    "force one path for every message; auto = choose by size" },
	{ "thresholds.tuned", RMQ_SCHEMA_ENUM, 0, 0, 0, booleans,
	    FIELD(tuned),
	    "true when rmq_tune measured these thresholds on this machine" },
	{ "thresholds.in_place", RMQ_SCHEMA_SIZE_OR_NONE, -1, 1 * GiB,
	    RMQ_CFG_IN_PLACE, NULL, FIELD(in_place_min),
	    "a blocking send of at least this many bytes (up to 64 KiB) by "
	    "eager or ring that answers a message from its peer, with "
	    "nothing else in flight to it, on a provider without FI_MR_LOCAL "
	    "whose sends complete without the peer (tcp), is posted from the "
	    "caller's buffer (no copy) and returns once the provider is done "
	    "with it; -1 = never" },
	{ "thresholds.fanout_log", RMQ_SCHEMA_INT, -1, 64, -1, NULL,
	    FIELD(fanout_log),
	    "PUB: subscribers at which each message is written once into a "
	    "log they read with fi_read (rmq_pubsub(7)); 0 = never; -1 = the "
	    "provider's value" },
	{ "fanout.slots", RMQ_SCHEMA_INT, 16, 65536, 1024, NULL,
	    FIELD(fanout_slots), "entries in a publisher's log" },
	{ "fanout.slot_size", RMQ_SCHEMA_SIZE, 64, 64 * KiB, 512, NULL,
	    FIELD(fanout_slot_size),
	    "bytes per log entry (rounded down to a multiple of 8); a payload "
	    "over slot_size - 40 is copied into memory registered for it" },
	{ "ring.slots", RMQ_SCHEMA_INT, 0, 65536, RMQ_CFG_RING_SLOTS, NULL,
	    FIELD(ring_slots),
	    "slots in each peer's receive ring; 0 = no ring (68 by default: "
	    "a message may take a quarter, and 17 slots of 4 KiB hold a "
	    "64 KiB message with its header)" },
	{ "ring.slot_size", RMQ_SCHEMA_SIZE, 64, 1 * MiB, RMQ_CFG_RING_SLOT_SIZE,
	    NULL, FIELD(ring_slot_size),
	    "bytes per ring slot; a message takes one or more slots" },
	{ "ring.peers", RMQ_SCHEMA_INT, 0, 16384, 256, NULL, FIELD(ring_peers),
	    "peers of a socket that get a ring (the first to connect); the "
	    "others send those sizes by rendezvous" },
	{ "strict", RMQ_SCHEMA_ENUM, 0, 0, 0, booleans, FIELD(strict),
	    "obey the rules of verbs and efa on every provider (rmq_paths(7))" },
	{ "memory.slab_size", RMQ_SCHEMA_SIZE, 64 * KiB, 1 * GiB, 1 * MiB,
	    NULL, FIELD(slab_size), "bytes in each multi-recv slab" },
	{ "memory.slabs", RMQ_SCHEMA_INT, 1, 64, 4, NULL, FIELD(slabs),
	    "multi-recv slabs posted per socket" },
	{ "numa.policy", RMQ_SCHEMA_ENUM, 0, 0, RMQ_CFG_NUMA_AUTO,
	    numa_policies, FIELD(numa_policy),
	    "where slabs and rings go: auto (the NIC's NUMA node, else the "
	    "caller's), off (first touch), node (numa.node) or cpuset (the "
	    "nodes of numa.cpuset)" },
	{ "numa.node", RMQ_SCHEMA_INT, -1, 1023, -1, NULL, FIELD(numa_node),
	    "the NUMA node for numa.policy node; -1 = none" },
	{ "numa.cpuset", RMQ_SCHEMA_STR, 0, 0, 0, NULL, FIELD(numa_cpuset),
	    "numa.policy cpuset: CPUs as a list (0-3,8); memory goes on their "
	    "NUMA nodes and the progress thread runs on them",
	    check_cpuset, "" },
	{ "limits.sndhwm", RMQ_SCHEMA_INT, 1, 1000000, 1000, NULL,
	    FIELD(sndhwm), "messages in flight per socket" },
	{ "limits.rcvhwm", RMQ_SCHEMA_INT, 1, 1000000, 1000, NULL,
	    FIELD(rcvhwm), "unread messages queued per peer" },
	{ "limits.max_msg_size", RMQ_SCHEMA_SIZE_OR_NONE, -1, 1 * TiB, -1,
	    NULL, FIELD(max_msg_size),
	    "largest message accepted; -1 = no limit" },
	{ "limits.handshakes", RMQ_SCHEMA_INT, 1, 1000000, 1024, NULL,
	    FIELD(handshakes),
	    "handshakes a bound socket keeps pending; past it the oldest is "
	    "dropped" },
	{ "timeouts.send_ms", RMQ_SCHEMA_INT, -1, INT_MAX, -1, NULL,
	    FIELD(sndtimeo_ms), "how long a send blocks; -1 = forever" },
	{ "timeouts.recv_ms", RMQ_SCHEMA_INT, -1, INT_MAX, -1, NULL,
	    FIELD(rcvtimeo_ms), "how long a receive blocks; -1 = forever" },
	{ "timeouts.linger_ms", RMQ_SCHEMA_INT, -1, INT_MAX, 1000, NULL,
	    FIELD(linger_ms),
	    "how long close waits for queued sends; -1 = forever" },
	{ "timeouts.connect_ms", RMQ_SCHEMA_INT, 0, INT_MAX, 10000, NULL,
	    FIELD(connect_ms), "how long connect keeps retrying" },
	{ "timeouts.handshake_ms", RMQ_SCHEMA_INT, 1, INT_MAX, 5000, NULL,
	    FIELD(handshake_ms),
	    "how long a peer has to finish the handshake" },
	{ "timeouts.keepalive_ms", RMQ_SCHEMA_INT, 2000, 3600000, 5000, NULL,
	    FIELD(keepalive_ms),
	    "a peer whose host stops answering (cable, power, partition) is "
	    "lost after about this long; outages shorter than it less 2 s "
	    "(1 s below 4000) are ridden out" },
	{ "progress.spin_us", RMQ_SCHEMA_INT, 0, 10000000, 1000, NULL,
	    FIELD(spin_us), "microseconds of polling before sleeping" },
	{ "progress.mode", RMQ_SCHEMA_ENUM, 0, 0, RMQ_CFG_PROGRESS_INLINE,
	    progress_modes, FIELD(progress_mode),
	    "inline (the calling thread drives progress) or thread (a thread "
	    "per context also does, while the application computes)" },
	{ "progress.thread_sleep_us", RMQ_SCHEMA_INT, 0, 1000000, 50, NULL,
	    FIELD(thread_sleep_us),
	    "thread mode: the progress thread's sleep when a round found "
	    "nothing" },
	{ "progress.wait_fd", RMQ_SCHEMA_ENUM, 0, 0, 1, booleans,
	    FIELD(wait_fd),
	    "sleep on the provider's completion-queue wait fd where it has "
	    "one (tcp, sockets); false: none, a waiting call spins then "
	    "sleeps in steps of 10 us to 1 ms as on shm, and tcp's busy "
	    "wait is cheaper" },
	{ "coalesce.enabled", RMQ_SCHEMA_ENUM, 0, 0, 1, booleans,
	    FIELD(coalesce),
	    "pack small messages sent back to back to one peer into one "
	    "transfer (rmq_paths(7))" },
	{ "coalesce.window_us", RMQ_SCHEMA_INT, 1, 1000000, 10, NULL,
	    FIELD(coalesce_us),
	    "a small message sent within this many microseconds of the last "
	    "one to the same peer, with no message from it between, joins a "
	    "batch" },
	{ "coalesce.flush_us", RMQ_SCHEMA_INT, 1, 1000000, 100, NULL,
	    FIELD(flush_us),
	    "inline mode: the period of the context's flusher thread, which "
	    "sends the batches the application left queued" },
	{ "local.enabled", RMQ_SCHEMA_ENUM, 0, 0, RMQ_CFG_LOCAL_AUTO,
	    local_modes, FIELD(local),
	    "a peer on this host (same boot id, host name, user and "
	    "network and PID namespaces) gets a ring in shared memory "
	    "whatever the provider: the local path (rmq_paths(7)); auto: "
	    "where it can, true: and a warning where it cannot, false: "
	    "never" },
	{ "local.ring", RMQ_SCHEMA_SIZE, 64 * KiB, 64 * MiB, 512 * KiB, NULL,
	    FIELD(local_ring),
	    "bytes of each local peer's receive ring (rounded down to a "
	    "power of two); a "
	    "message up to a quarter of it goes through the ring, larger "
	    "ones by rendezvous" },
	{ "local.split_min", RMQ_SCHEMA_SIZE, 0, 1024 * MiB, 32 * KiB, NULL,
	    FIELD(local_split_min),
	    "a message at least this large from a peer on this host that "
	    "waits in its send is copied by both: the sender writes half "
	    "into the receiver's buffer while the receiver reads the other "
	    "half; 0: the receiver copies it all" },
	{ "local.peers", RMQ_SCHEMA_INT, 0, 16384, 256, NULL,
	    FIELD(local_peers),
	    "peers of a socket that may take the local path (the first to "
	    "connect); the others use the provider" },
	{ "auth.key_file", RMQ_SCHEMA_STR, 0, 0, 0, NULL, FIELD(auth_key_file),
	    "a file holding a shared secret (16 to 4096 bytes, mode 0600, "
	    "ours): peers prove they hold it (HMAC-SHA-256 challenge and "
	    "response) before anything else is exchanged; empty = no "
	    "authentication",
	    check_path, "" },
};

/* The offset and size of a field of struct rmq_cfg_paths. */
#define PFIELD(f)                                                             \
	offsetof(struct rmq_cfg_paths, f),                                    \
	    sizeof(((struct rmq_cfg_paths *) 0)->f)

/*
 * The keys of a section of path keys, a pattern's (thresholds.pair) or a
 * socket name's (thresholds.sockets.bulk), in rmq_cfg_path_key order;
 * they parse into a struct rmq_cfg_paths.
 */
const struct rmq_schema_key rmq_schema_path_keys[RMQ_CFG_NPK] = {
	{ "inject_max", RMQ_SCHEMA_SIZE, 0, 1 * MiB, 0, NULL,
	    PFIELD(inject_max),
	    "largest inject payload; 0 = thresholds.inject_max" },
	{ "eager_max", RMQ_SCHEMA_SIZE, 0, 64 * MiB, 0, NULL,
	    PFIELD(eager_max),
	    "largest eager payload; 0 = thresholds.eager_max" },
	{ "ring_max", RMQ_SCHEMA_SIZE, 0, 64 * MiB, 0, NULL, PFIELD(ring_max),
	    "largest ring payload; 0 = thresholds.ring_max" },
	{ "rndv", RMQ_SCHEMA_ENUM, 0, 0, -1, rndv_paths, PFIELD(rndv),
	    "path above the ring/eager limit; auto = thresholds.rndv" },
	{ "path", RMQ_SCHEMA_ENUM, 0, 0, -1, all_paths, PFIELD(force),
	    "one path for every message; auto = thresholds.path" },
	{ "fanout_log", RMQ_SCHEMA_INT, -1, 64, -1, NULL, PFIELD(fanout_log),
	    "PUB: subscribers at which the log is used; -1 = "
	    "thresholds.fanout_log" },
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

_Static_assert(sizeof(fixed) / sizeof(fixed[0]) == RMQ_SCHEMA_NFIXED + 1,
    "RMQ_SCHEMA_NFIXED does not match the table (and its PROVIDER_KNOBS)");
_Static_assert(RMQ_SCHEMA_MAX <= RMQ_CFG_MAX_KEYS,
    "struct rmq_config's src[] is too small");

/* The fixed rows and the knobs, in order; built once (schema_init). */
static struct rmq_schema_key schema[RMQ_SCHEMA_MAX];
static size_t                nkeys;
static pthread_once_t        schema_once = PTHREAD_ONCE_INIT;


/* Append to buf at *pos, truncating; *pos stops at buflen - 1. */
static void put(char *buf, size_t buflen, size_t *pos, const char *fmt, ...)
    PRINTF_LIKE(4, 5);

static void
put(char *buf, size_t buflen, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int     n = 0;

	if (buflen > 0 && *pos < buflen - 1) {
		va_start(ap, fmt);
		n = vsnprintf(buf + *pos, buflen - *pos, fmt, ap);
		va_end(ap);
		if (n < 0)
			buf[*pos] = '\0';
	}
	if (n > 0)
		*pos += (size_t) n;
	if (buflen > 0 && *pos > buflen - 1)
		*pos = buflen - 1;
}

static int
lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* ASCII-only, so the locale cannot change what a config file means. */
static int
same_nocase(const char *text, size_t len, const char *word)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (word[i] == '\0'
		    || lower((unsigned char) text[i])
		        != lower((unsigned char) word[i]))
			return 0;
	return word[len] == '\0';
}

/* One or more digits at text[*i]; PARSE_RANGE past UINT64_MAX. */
static enum parse_result
parse_digits(const char *text, size_t len, size_t *i, uint64_t *out)
{
	enum parse_result res   = PARSE_OK;
	uint64_t          u     = 0;
	size_t            start = *i;
	unsigned          d;

	for (; *i < len && text[*i] >= '0' && text[*i] <= '9'; (*i)++) {
		d = (unsigned) (text[*i] - '0');
		if (u > (UINT64_MAX - d) / 10)
			res = PARSE_RANGE;
		else
			u = u * 10 + d;
	}
	if (*i == start)
		res = PARSE_BAD;
	*out = u;
	return res;
}

static enum parse_result
parse_int(const char *text, size_t len, int64_t *out)
{
	enum parse_result res;
	uint64_t          u;
	size_t            i   = 0;
	int               neg = 0;

	if (len > 0 && (text[0] == '-' || text[0] == '+')) {
		neg = text[0] == '-';
		i++;
	}
	res = parse_digits(text, len, &i, &u);
	if (i != len)
		res = PARSE_BAD;
	if (res != PARSE_OK)
		goto out;
	if (u > (uint64_t) INT64_MAX + (neg ? 1 : 0)) {
		res = PARSE_RANGE;
		goto out;
	}
	if (neg)
		*out
		    = u == (uint64_t) INT64_MAX + 1 ? INT64_MIN : -(int64_t) u;
	else
		*out = (int64_t) u;
out:
	return res;
}

static enum parse_result
parse_size(const char *text, size_t len, int64_t *out)
{
	static const struct {
		const char *suffix;
		int64_t     mult;
	} suffixes[] = {
		{ "b", 1 },
		{ "k", KiB },
		{ "kb", KiB },
		{ "kib", KiB },
		{ "m", MiB },
		{ "mb", MiB },
		{ "mib", MiB },
		{ "g", GiB },
		{ "gb", GiB },
		{ "gib", GiB },
	};
	enum parse_result res;
	uint64_t          u;
	uint64_t          mult = 1;
	size_t            i    = 0;
	size_t            s;

	res = parse_digits(text, len, &i, &u);
	if (res == PARSE_BAD)
		goto out;
	if (i < len) {
		for (s = 0; s < sizeof suffixes / sizeof suffixes[0]; s++)
			if (same_nocase(text + i, len - i, suffixes[s].suffix))
				break;
		if (s == sizeof suffixes / sizeof suffixes[0]) {
			res = PARSE_BAD;
			goto out;
		}
		mult = (uint64_t) suffixes[s].mult;
	}
	if (res != PARSE_OK)
		goto out;
	if (u > (uint64_t) INT64_MAX / mult) {
		res = PARSE_RANGE;
		goto out;
	}
	*out = (int64_t) (u * mult);
out:
	return res;
}

static enum parse_result
parse_choice(
    const struct rmq_schema_key *k, const char *text, size_t len, int64_t *out)
{
	const struct rmq_schema_choice *c;
	enum parse_result               res = PARSE_BAD;

	for (c = k->choices; c->name != NULL; c++) {
		if (same_nocase(text, len, c->name)) {
			*out = c->value;
			res  = PARSE_OK;
			break;
		}
	}
	return res;
}

static enum parse_result
parse_value(
    const struct rmq_schema_key *k, const char *text, size_t len, int64_t *out)
{
	enum parse_result res = PARSE_BAD;

	switch (k->type) {
	case RMQ_SCHEMA_STRENUM:
	case RMQ_SCHEMA_ENUM:
		res = parse_choice(k, text, len, out);
		break;
	case RMQ_SCHEMA_INT:
		res = parse_int(text, len, out);
		break;
	case RMQ_SCHEMA_SIZE_OR_NONE:
		if (len == 2 && memcmp(text, "-1", 2) == 0) {
			*out = -1;
			res  = PARSE_OK;
			break;
		}
		res = parse_size(text, len, out);
		break;
	case RMQ_SCHEMA_SIZE:
		res = parse_size(text, len, out);
		break;
	case RMQ_SCHEMA_STR:
	case RMQ_SCHEMA_LIST:
		break; /* rmq_schema_set handles them */
	}
	return res;
}

/* Sizes that are whole KiB/MiB/GiB print that way: "0..64MiB". */
static void
format_value(
    const struct rmq_schema_key *k, int64_t v, char *buf, size_t buflen)
{
	static const struct {
		const char *suffix;
		int64_t     mult;
	} units[] = { { "GiB", GiB }, { "MiB", MiB }, { "KiB", KiB } };
	size_t u;

	if (k->type == RMQ_SCHEMA_SIZE || k->type == RMQ_SCHEMA_SIZE_OR_NONE) {
		for (u = 0; u < sizeof units / sizeof units[0]; u++) {
			if (v > 0 && v % units[u].mult == 0) {
				snprintf(buf, buflen, "%" PRId64 "%s",
				    v / units[u].mult, units[u].suffix);
				goto out;
			}
		}
	}
	snprintf(buf, buflen, "%" PRId64, v);
out:
	return;
}

static const char *
choice_name(const struct rmq_schema_key *k, int64_t v)
{
	const struct rmq_schema_choice *c;

	for (c = k->choices; c->name != NULL; c++)
		if (c->value == v)
			break;
	assert(c->name != NULL);
	return c->name;
}

static void
store(const struct rmq_schema_key *k, void *base, int64_t v)
{
	char       *field = (char *) base + k->offset;
	const char *name;
	int         i;
	size_t      z;

	switch (k->type) {
	case RMQ_SCHEMA_STRENUM:
		name = choice_name(k, v);
		assert(strlen(name) < k->size);
		memset(field, 0, k->size);
		memcpy(field, name, strlen(name) + 1);
		break;
	case RMQ_SCHEMA_ENUM:
	case RMQ_SCHEMA_INT:
		assert(k->size == sizeof i && v >= INT_MIN && v <= INT_MAX);
		i = (int) v;
		memcpy(field, &i, sizeof i);
		break;
	case RMQ_SCHEMA_SIZE:
		assert(k->size == sizeof z && v >= 0);
		z = (size_t) v;
		memcpy(field, &z, sizeof z);
		break;
	case RMQ_SCHEMA_SIZE_OR_NONE:
		assert(k->size == sizeof v);
		memcpy(field, &v, sizeof v);
		break;
	case RMQ_SCHEMA_STR:
	case RMQ_SCHEMA_LIST:
		assert(0 && "store_text");
		break;
	}
}

static void
store_text(const struct rmq_schema_key *k, void *base, const char *text,
    size_t len)
{
	char *field = (char *) base + k->offset;

	assert(len < k->size);
	memset(field, 0, k->size);
	memcpy(field, text, len);
}

static int
is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * A LIST value: "verbs, tcp", "verbs,tcp" or "[verbs, tcp]" (how
 * rmq_schema_format writes it).  Stored as "verbs,tcp".
 */
static int
set_list(const struct rmq_schema_key *k, void *cfg, const char *text,
    size_t len, char *what, size_t whatlen)
{
	const struct rmq_schema_choice *c;
	char                            out[RMQ_CFG_STR_MAX];
	char                            shown[RMQ_SCHEMA_ECHO_SIZE];
	char                            expect[RMQ_CFG_ERR_MAX];
	size_t                          pos = 0, i = 0, start, end;
	const char                     *used[16];
	size_t                          nused = 0, u;
	int                             rc    = -RMQ_ECONFIG;

	if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
		text++;
		len -= 2;
	}
	out[0] = '\0';
	for (;;) {
		while (i < len && is_blank(text[i]))
			i++;
		start = i;
		while (i < len && text[i] != ',')
			i++;
		end = i;
		while (end > start && is_blank(text[end - 1]))
			end--;
		for (c = k->choices; c->name != NULL; c++)
			if (same_nocase(text + start, end - start, c->name))
				break;
		rmq_schema_echo(shown, sizeof shown, text + start, end - start);
		if (c->name == NULL) {
			rmq_schema_describe(k, expect, sizeof expect);
			snprintf(what, whatlen, "expected %s, got '%s'", expect,
			    shown);
			goto out;
		}
		for (u = 0; u < nused; u++)
			if (used[u] == c->name) {
				snprintf(what, whatlen, "'%s' is listed twice",
				    c->name);
				goto out;
			}
		assert(nused < sizeof used / sizeof used[0]);
		used[nused++] = c->name;
		put(out, sizeof out, &pos, "%s%s", pos ? "," : "", c->name);
		if (i == len)
			break;
		i++; /* the comma */
	}
	store_text(k, cfg, out, pos);
	rc = 0;
out:
	return rc;
}

/* Append the row of a provider's knob: a text key, checked by check,
 * stored at offset in struct rmq_config. */
static void
add_knob(const char *key, const char *help, size_t offset,
    rmq_schema_check_fn check)
{
	struct rmq_schema_key *k = &schema[nkeys];
	size_t                 i;

	assert(nkeys < RMQ_SCHEMA_MAX && help != NULL);
	for (i = 0; i < nkeys; i++)
		assert(strcmp(schema[i].name, key) != 0);
	memset(k, 0, sizeof *k);
	k->name   = key;
	k->type   = RMQ_SCHEMA_STR;
	k->offset = offset;
	k->size   = RMQ_CFG_STR_MAX;
	k->desc   = help;
	k->check  = check;
	k->sdef   = "";
	nkeys++;
}

/* Each row's knobs, rows in listed order, its interface before its domain. */
static void
add_knobs(void)
{
	const struct rmq_prov *p;
	size_t                 i, at;

	for (i = 0; (p = rmq_prov_listed(i)) != NULL; i++) {
		at = (size_t) rmq_prov_index(p) * RMQ_CFG_STR_MAX;
		if (p->iface_key != NULL)
			add_knob(p->iface_key, p->iface_help,
			    offsetof(struct rmq_config, prov_iface) + at,
			    check_iface);
		if (p->domain_key != NULL)
			add_knob(p->domain_key, p->domain_help,
			    offsetof(struct rmq_config, prov_domain) + at,
			    check_domain);
	}
}

static void
schema_init(void)
{
	const struct rmq_prov *const *pp;
	const struct rmq_prov        *p;
	size_t                        i, n = 0, pos = 0;

	providers[n++] = (struct rmq_schema_choice) { "auto", 0 };
	for (i = 0; (p = rmq_prov_listed(i)) != NULL; i++)
		providers[n++] = (struct rmq_schema_choice) { p->name,
			rmq_prov_index(p) + 1 };
	for (pp = rmq_prov_all(), i = 0; *pp != NULL; pp++, i++) {
		order_providers[i] = (struct rmq_schema_choice) { (*pp)->name,
			(int) i + 1 };
		if (!((*pp)->flags & RMQ_PROV_LOCAL_ONLY))
			put(order_default, sizeof order_default, &pos, "%s%s",
			    pos > 0 ? "," : "", (*pp)->name);
	}
	for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
		if (fixed[i].name == NULL)
			add_knobs();
		else
			schema[nkeys++] = fixed[i];
	}
}

size_t
rmq_schema_nkeys(void)
{
	(void) pthread_once(&schema_once, schema_init);
	return nkeys;
}

const struct rmq_schema_key *
rmq_schema_at(size_t i)
{
	assert(i < rmq_schema_nkeys());
	return &schema[i];
}

size_t
rmq_schema_index(const struct rmq_schema_key *k)
{
	assert(k >= schema && k < schema + nkeys);
	return (size_t) (k - schema);
}

void
rmq_config_defaults(struct rmq_config *cfg)
{
	const struct rmq_schema_key *k;
	size_t                       i, n = rmq_schema_nkeys();

	memset(cfg, 0, sizeof *cfg);
	for (i = 0; i < n; i++) {
		k = &schema[i];
		if (k->type == RMQ_SCHEMA_STR || k->type == RMQ_SCHEMA_LIST)
			store_text(k, cfg, k->sdef, strlen(k->sdef));
		else
			store(k, cfg, k->def);
	}
}

const struct rmq_schema_key *
rmq_schema_find(const char *name, size_t len)
{
	const struct rmq_schema_key *k = NULL;
	size_t                       i;

	/* "log: LEVEL" is short for "log: {level: LEVEL}". */
	if (len == 3 && memcmp(name, "log", 3) == 0) {
		name = "log.level";
		len  = 9;
	}
	for (i = 0; i < rmq_schema_nkeys(); i++) {
		if (strlen(schema[i].name) == len
		    && memcmp(schema[i].name, name, len) == 0) {
			k = &schema[i];
			break;
		}
	}
	return k;
}

const char *
rmq_schema_section(const char *name, size_t len)
{
	const char *found = NULL;
	size_t      i;

	for (i = 0; i < rmq_schema_nkeys(); i++) {
		if (len > 0 && strlen(schema[i].name) > len
		    && schema[i].name[len] == '.'
		    && memcmp(schema[i].name, name, len) == 0) {
			found = schema[i].name;
			break;
		}
	}
	return found;
}

/*
 * Optimal string alignment distance: Levenshtein plus swaps of two
 * neighbours, the commonest typo ("eagre_max").
 */
static unsigned
distance(const char *a, size_t la, const char *b, size_t lb)
{
	unsigned  rows[3][DIST_MAX + 1];
	unsigned *pp = rows[0], *p = rows[1], *c = rows[2], *t;
	unsigned  d = UINT_MAX;
	unsigned  cost, v;
	size_t    i, j;

	if (la > DIST_MAX || lb > DIST_MAX)
		goto out;
	for (j = 0; j <= lb; j++)
		p[j] = (unsigned) j;
	for (i = 1; i <= la; i++) {
		c[0] = (unsigned) i;
		for (j = 1; j <= lb; j++) {
			cost = a[i - 1] == b[j - 1] ? 0 : 1;
			v    = p[j - 1] + cost;
			if (p[j] + 1 < v)
				v = p[j] + 1;
			if (c[j - 1] + 1 < v)
				v = c[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2]
			    && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < v)
				v = pp[j - 2] + 1;
			c[j] = v;
		}
		t  = pp;
		pp = p;
		p  = c;
		c  = t;
	}
	d = p[lb];
out:
	return d;
}

static const char *
last_part(const char *name, size_t len, size_t *partlen)
{
	size_t i = len;

	while (i > 0 && name[i - 1] != '.')
		i--;
	*partlen = len - i;
	return name + i;
}

int
rmq_schema_suggest_path_key(const char *key, size_t len, char *buf,
    size_t buflen)
{
	const char *best  = NULL;
	unsigned    bestd = SUGGEST_MAX + 1, d;
	size_t      i;

	for (i = 0; i < RMQ_CFG_NPK; i++) {
		d = distance(key, len, rmq_schema_path_keys[i].name,
		    strlen(rmq_schema_path_keys[i].name));
		if (d < bestd) {
			bestd = d;
			best  = rmq_schema_path_keys[i].name;
		}
	}
	if (bestd >= len)
		best = NULL;
	if (best != NULL && buflen > 0)
		snprintf(buf, buflen, "%s", best);
	return best != NULL;
}

int
rmq_schema_suggest(const char *name, size_t len, char *buf, size_t buflen)
{
	const char *best    = NULL;
	size_t      bestlen = 0;
	unsigned    bestd   = SUGGEST_MAX + 1;
	int         nested  = memchr(name, '.', len) != NULL;
	const char *key, *part, *upart;
	size_t      i, j, keylen, partlen, upartlen;
	unsigned    d;

	upart = last_part(name, len, &upartlen);
	for (i = 0; i < rmq_schema_nkeys(); i++) {
		key    = schema[i].name;
		keylen = strlen(key);
		/* The sections this key is in, then the key itself. */
		for (j = 1; j <= keylen; j++) {
			if (j < keylen && key[j] != '.')
				continue;
			d = distance(name, len, key, j);
			if (d < bestd) {
				bestd   = d;
				best    = key;
				bestlen = j;
			}
		}
		/*
		 * "eager_max" at the top level, or in the wrong section:
		 * compare last components.  Nested names must match exactly,
		 * or "timeouts.foo" would suggest "log".
		 */
		part = last_part(key, keylen, &partlen);
		d    = distance(upart, upartlen, part, partlen);
		if ((!nested || d == 0) && d < bestd) {
			bestd   = d;
			best    = key;
			bestlen = keylen;
		}
	}
	/* Turning "a" into "log" is no hint: keep some of what was typed. */
	if (bestd >= len)
		best = NULL;
	if (best != NULL && buflen > 0)
		snprintf(buf, buflen, "%.*s", (int) bestlen, best);
	return best != NULL;
}

void
rmq_schema_describe(const struct rmq_schema_key *k, char *buf, size_t buflen)
{
	const struct rmq_schema_choice *c;
	size_t                          pos = 0;

	if (buflen > 0)
		buf[0] = '\0';
	switch (k->type) {
	case RMQ_SCHEMA_STRENUM:
	case RMQ_SCHEMA_ENUM:
		put(buf, buflen, &pos, "one of");
		for (c = k->choices; c->name != NULL; c++)
			put(buf, buflen, &pos, "%s %s",
			    c == k->choices ? "" : ",", c->name);
		break;
	case RMQ_SCHEMA_INT:
		put(buf, buflen, &pos, "an integer");
		break;
	case RMQ_SCHEMA_SIZE:
		put(buf, buflen, &pos, SIZE_EXAMPLE);
		break;
	case RMQ_SCHEMA_SIZE_OR_NONE:
		put(buf, buflen, &pos, SIZE_EXAMPLE " or -1");
		break;
	case RMQ_SCHEMA_STR:
		if (k->check != NULL)
			k->check(NULL, 0, buf, buflen); /* its "expected" */
		if (strncmp(buf, "expected ", 9) == 0)
			memmove(buf, buf + 9, strlen(buf + 9) + 1);
		break;
	case RMQ_SCHEMA_LIST:
		put(buf, buflen, &pos, "a list of");
		for (c = k->choices; c->name != NULL; c++)
			put(buf, buflen, &pos, "%s %s",
			    c == k->choices ? "" : ",", c->name);
		break;
	}
}

int
rmq_schema_set(const struct rmq_schema_key *k, struct rmq_config *cfg,
    const char *text, size_t len, char *what, size_t whatlen)
{
	return rmq_schema_set_in(k, cfg, text, len, what, whatlen);
}

int
rmq_schema_set_in(const struct rmq_schema_key *k, void *cfg, const char *text,
    size_t len, char *what, size_t whatlen)
{
	char              shown[RMQ_SCHEMA_ECHO_SIZE];
	char              expect[RMQ_CFG_ERR_MAX];
	char              lo[32], hi[32];
	enum parse_result res;
	int64_t           v  = 0;
	int               rc = -RMQ_ECONFIG;

	rmq_schema_echo(shown, sizeof shown, text, len);
	if (k->type == RMQ_SCHEMA_LIST) {
		rc = set_list(k, cfg, text, len, what, whatlen);
		goto out;
	}
	if (k->type == RMQ_SCHEMA_STR) {
		/* "" resets to the default (none). */
		if (len > 0 && k->check(text, len, expect, sizeof expect) != 0) {
			snprintf(what, whatlen, "%s, got '%s'", expect, shown);
			goto out;
		}
		store_text(k, cfg, text, len);
		rc = 0;
		goto out;
	}
	res = parse_value(k, text, len, &v);
	if (res == PARSE_BAD) {
		rmq_schema_describe(k, expect, sizeof expect);
		if (whatlen > 0)
			snprintf(what, whatlen, "expected %s, got '%s'",
			    expect, shown);
		goto out;
	}
	if (k->type != RMQ_SCHEMA_STRENUM && k->type != RMQ_SCHEMA_ENUM
	    && (res == PARSE_RANGE || v < k->min || v > k->max)) {
		format_value(k, k->min, lo, sizeof lo);
		format_value(k, k->max, hi, sizeof hi);
		if (whatlen > 0)
			snprintf(what, whatlen, "%s is out of range %s..%s",
			    shown, lo, hi);
		goto out;
	}
	store(k, cfg, v);
	rc = 0;
out:
	return rc;
}

void
rmq_schema_echo(char *buf, size_t buflen, const char *text, size_t len)
{
	size_t n = len;
	size_t i;
	int    cut = 0;

	if (buflen == 0)
		goto out;
	if (n > buflen - 1) {
		cut = buflen > 4;
		n   = buflen > 4 ? buflen - 4 : buflen - 1;
		/* Do not leave half a UTF-8 sequence before the dots. */
		while (
		    cut && n > 0 && ((unsigned char) text[n] & 0xc0) == 0x80)
			n--;
	}
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char) text[i];

		if (ch < 0x20 || ch == 0x7f)
			ch = '?';
		buf[i] = (char) ch;
	}
	if (cut) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
out:
	return;
}

/* "verbs,tcp" as "[verbs, tcp]". */
static void
format_list(const char *field, size_t size, char *buf, size_t buflen)
{
	size_t pos = 0, i;

	put(buf, buflen, &pos, "[");
	for (i = 0; i < size && field[i] != '\0'; i++)
		if (field[i] == ',')
			put(buf, buflen, &pos, ", ");
		else
			put(buf, buflen, &pos, "%c", field[i]);
	put(buf, buflen, &pos, "]");
}

void
rmq_schema_format(const struct rmq_schema_key *k,
    const struct rmq_config *cfg, char *buf, size_t buflen)
{
	rmq_schema_format_in(k, cfg, buf, buflen);
}

void
rmq_schema_format_in(const struct rmq_schema_key *k, const void *base,
    char *buf, size_t buflen)
{
	const char *field = (const char *) base + k->offset;
	int64_t     v     = 0;
	int         i;
	size_t      z;

	switch (k->type) {
	case RMQ_SCHEMA_STRENUM:
		snprintf(buf, buflen, "%.*s", (int) k->size, field);
		return;
	case RMQ_SCHEMA_STR:
		/* Quoted: "" must stay a string, and so must "0-3,8". */
		snprintf(buf, buflen, "\"%.*s\"", (int) k->size, field);
		return;
	case RMQ_SCHEMA_LIST:
		format_list(field, k->size, buf, buflen);
		return;
	case RMQ_SCHEMA_ENUM:
	case RMQ_SCHEMA_INT:
		memcpy(&i, field, sizeof i);
		v = i;
		break;
	case RMQ_SCHEMA_SIZE:
		memcpy(&z, field, sizeof z);
		v = (int64_t) z;
		break;
	case RMQ_SCHEMA_SIZE_OR_NONE:
		memcpy(&v, field, sizeof v);
		break;
	}
	if (k->type == RMQ_SCHEMA_ENUM)
		snprintf(buf, buflen, "%s", choice_name(k, v));
	else
		format_value(k, v, buf, buflen);
}
