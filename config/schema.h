/*
 * The configuration schema: one row per key in schema.c, the only place
 * where a key's type, range and default are written down.  config.c walks
 * the YAML events and asks this table what a dotted key is and how to parse
 * its value; rmq_config_env() uses the same rows.  Internal to config/.
 */
#ifndef RMQ_SCHEMA_H
#define RMQ_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define RMQ_SCHEMA_NFIXED    44 /* rows of the fixed table in schema.c */
/* Every key: the fixed ones and the provider rows' knobs (two at most
 * per row). */
#define RMQ_SCHEMA_MAX       (RMQ_SCHEMA_NFIXED + 2 * RMQ_PROV_NROWS)
#define RMQ_SCHEMA_ECHO_SIZE 48 /* buffer for rmq_schema_echo() */

enum rmq_schema_type {
	RMQ_SCHEMA_STRENUM, /* a choice; its name goes in a char[] */
	RMQ_SCHEMA_ENUM, /* a choice; its value goes in an int */
	RMQ_SCHEMA_INT, /* decimal integer, stored as int */
	RMQ_SCHEMA_SIZE, /* bytes, 64KiB etc., stored as size_t */
	RMQ_SCHEMA_SIZE_OR_NONE, /* a size or -1 (none), stored as int64_t */
	RMQ_SCHEMA_STR, /* text checked by the row's check(), in a char[];
	                 * "" = not set */
	RMQ_SCHEMA_LIST, /* choices, no repeats: "verbs,tcp" in a char[];
	                  * YAML writes a sequence or "a, b" */
};

/*
 * A STR row's check: is text[0..len) a valid value?  Returns 0, or -1 with
 * "what was expected" in what.
 */
typedef int (*rmq_schema_check_fn)(
    const char *text, size_t len, char *what, size_t whatlen);

struct rmq_schema_choice {
	const char *name; /* lower case; matched case-insensitively */
	int         value;
};

struct rmq_schema_key {
	const char          *name; /* dotted: "thresholds.eager_max" */
	enum rmq_schema_type type;
	int64_t              min; /* inclusive; unused for enums */
	int64_t              max;
	int64_t              def; /* enums: the value of a choice */
	const struct rmq_schema_choice *choices; /* enums; NULL-terminated */
	size_t      offset; /* of the field in struct rmq_config */
	size_t      size; /* of that field */
	const char *desc; /* one line, for docs and tools */
	rmq_schema_check_fn check; /* STR rows */
	const char         *sdef; /* STR and LIST rows: the default text */
};

/*
 * The keys, in the order files and messages show them: schema.c's fixed
 * table with, after provider_order, each provider row's knobs
 * ("tcp.interface", "verbs.domain"), built from the registry on first use.
 * rmq_schema_index(k) is k's place (its cfg->src[] slot).
 */
size_t                       rmq_schema_nkeys(void);
const struct rmq_schema_key *rmq_schema_at(size_t i);
size_t rmq_schema_index(const struct rmq_schema_key *k);
/* The keys of a section of path keys (offsets into struct rmq_cfg_paths). */
extern const struct rmq_schema_key rmq_schema_path_keys[RMQ_CFG_NPK];

/* The row for a full dotted key, or NULL.  name need not be NUL-ended. */
const struct rmq_schema_key *rmq_schema_find(const char *name, size_t len);

/*
 * Is name[0..len) a section, the dotted prefix of some key ("thresholds")?
 * Returns a key name that starts with it (a stable pointer whose first len
 * bytes are the section name) or NULL.
 */
const char *rmq_schema_section(const char *name, size_t len);

/*
 * Did-you-mean: copy into buf the key or section closest to the unknown
 * name (edit distance <= 3; a bare last component such as "eager_max" also
 * matches; the distance must also be less than len).  Returns 1 if there
 * is a suggestion, else 0.
 */
int rmq_schema_suggest(const char *name, size_t len, char *buf, size_t buflen);

/* Did-you-mean among the keys of a section of path keys ("eagr_max"). */
int rmq_schema_suggest_path_key(const char *key, size_t len, char *buf,
    size_t buflen);

/*
 * What a value of this key looks like, for messages: "an integer",
 * "a size (e.g. 65536, 64KiB)", "one of auto, shm, ...".
 */
void rmq_schema_describe(
    const struct rmq_schema_key *k, char *buf, size_t buflen);

/* The current value of k in cfg, as a config file would write it. */
void rmq_schema_format(const struct rmq_schema_key *k,
    const struct rmq_config *cfg, char *buf, size_t buflen);

/*
 * Parse text[0..len), check the range and store it into cfg.  Returns 0,
 * or -RMQ_ECONFIG with cfg untouched and "what was expected" (without the
 * key name) in what, e.g. "0 is out of range 1..1000000".
 */
int rmq_schema_set(const struct rmq_schema_key *k, struct rmq_config *cfg,
    const char *text, size_t len, char *what, size_t whatlen);

/* The same into (from) any struct the row's offset is for. */
int  rmq_schema_set_in(const struct rmq_schema_key *k, void *base,
    const char *text, size_t len, char *what, size_t whatlen);
void rmq_schema_format_in(const struct rmq_schema_key *k, const void *base,
    char *buf, size_t buflen);

/*
 * Copy user text into buf for quoting in a message: control bytes become
 * '?', long text is cut (at a UTF-8 boundary) and ends in "...".
 */
void rmq_schema_echo(char *buf, size_t buflen, const char *text, size_t len);

#endif /* RMQ_SCHEMA_H */
