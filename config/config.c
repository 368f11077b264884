/*
 * The YAML loader.  libyaml's event API (yaml_parser_parse) hands us the
 * document one event at a time; nested mappings become dotted keys
 * ("thresholds:" then "eager_max:" is "thresholds.eager_max"), and a key
 * may also be written dotted in one go.  Everything about a key (type,
 * range, default) is in the schema table (schema.c); this file only walks
 * the events and reports positions.
 *
 * The rules, each an error with a FILE:LINE:COLUMN message:
 * - the top level is one mapping; an empty file, or one holding only
 *   comments, means "all defaults";
 * - unknown keys are errors (we suggest the nearest key), so are duplicate
 *   keys, sequences (no key takes a list yet), aliases, and a mapping
 *   where a value is expected or the other way round.  A section with no
 *   value ("thresholds:" followed only by comments) is an empty section;
 * - one document per file.
 *
 * Values go into a copy of the caller's struct, which is written back only
 * when the whole document loaded: on error the caller's config is
 * untouched.  A file is read into memory first (it is small, and capped),
 * so that libyaml's reader errors, which come with a byte offset instead
 * of a line and column, can be placed like every other error.
 */
#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "config.h"
#include "rmq.h"
#include "schema.h"

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

#define PATH_MAX_LEN 128 /* longer dotted keys are never known keys */
#define FILE_MAX     (1 << 20) /* bytes; a config file is a few hundred */

#define NAMED_PREFIX "thresholds.sockets" /* NAME.key below it */
#define SECT_PREFIX  "thresholds."        /* SECTION.key below it */
/* The socket names' section, under thresholds: no pattern's. */
#define NAMED_SECT (NAMED_PREFIX + sizeof SECT_PREFIX - 1)
/* Every key or section at most once: the schema's, then the sections. */
#define SEEN_MAX                                                              \
	(2 * RMQ_SCHEMA_MAX + 1                                               \
	    + (RMQ_CFG_NAMED_MAX + RMQ_CFG_SECT_MAX) * (1 + RMQ_CFG_NPK))

struct loader {
	yaml_parser_t        parser;
	yaml_event_t         ev; /* the current event; zeroed when none */
	struct rmq_config    cfg; /* the copy we load into */
	const char          *name; /* file name for messages */
	const unsigned char *buf;
	size_t               len;
	char                *err;
	size_t               errlen;
	/* Every known key or section, at most once: no overflow possible. */
	char   seen[SEEN_MAX][PATH_MAX_LEN];
	size_t nseen;
	char   path[PATH_MAX_LEN]; /* dotted key being read */
	size_t pathlen;
	/* The key being read is in this section (a socket name's or a
	 * pattern's; NULL: none), and is RMQ_CFG_PK_* (-1: the section). */
	struct rmq_cfg_section *sec;
	int    sec_key;
	bool   candidate; /* thresholds.X: a pattern section if a mapping */
	yaml_mark_t key_mark; /* where the key being read starts */
};

/* Environment overrides, checked in this order. */
static const struct {
	const char *var;
	const char *key;
} env_vars[] = {
	{ "RMQ_PROVIDER", "provider" },
	{ "RMQ_LOG", "log.level" },
	{ "RMQ_EAGER_MAX", "thresholds.eager_max" },
	{ "RMQ_INJECT_MAX", "thresholds.inject_max" },
	{ "RMQ_RING_MAX", "thresholds.ring_max" },
	{ "RMQ_RNDV", "thresholds.rndv" },
	{ "RMQ_PATH", "thresholds.path" },
	{ "RMQ_FANOUT_LOG", "thresholds.fanout_log" },
	{ "RMQ_STRICT", "strict" },
	{ "RMQ_SPIN_US", "progress.spin_us" },
	{ "RMQ_COALESCE", "coalesce.enabled" },
	{ "RMQ_LOCAL", "local.enabled" },
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    PRINTF_LIKE(3, 4);
static int at(struct loader *ld, yaml_mark_t mark, const char *fmt, ...)
    PRINTF_LIKE(3, 4);

static void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		goto out;
	va_start(ap, fmt);
	if (vsnprintf(err, errlen, fmt, ap) < 0)
		err[0] = '\0';
	va_end(ap);
out:
	return;
}

/* "NAME:LINE:COLUMN: " and the message.  Returns -RMQ_ECONFIG. */
static int
at(struct loader *ld, yaml_mark_t mark, const char *fmt, ...)
{
	va_list ap;
	int     n;

	if (ld->err == NULL || ld->errlen == 0)
		goto out;
	n = snprintf(ld->err, ld->errlen, "%s:%zu:%zu: ", ld->name,
	    mark.line + 1, mark.column + 1);
	if (n < 0) {
		ld->err[0] = '\0';
		goto out;
	}
	if ((size_t) n >= ld->errlen)
		goto out;
	va_start(ap, fmt);
	if (vsnprintf(ld->err + n, ld->errlen - (size_t) n, fmt, ap) < 0)
		ld->err[n] = '\0';
	va_end(ap);
out:
	return -RMQ_ECONFIG;
}

/* Line and column (in characters) of a byte offset into the input. */
static yaml_mark_t
offset_mark(const struct loader *ld, size_t offset)
{
	yaml_mark_t mark;
	size_t      i;

	memset(&mark, 0, sizeof mark);
	if (offset > ld->len)
		offset = ld->len;
	for (i = 0; i < offset; i++) {
		if (ld->buf[i] == '\n') {
			mark.line++;
			mark.column = 0;
		} else if ((ld->buf[i] & 0xc0) != 0x80) {
			mark.column++;
		}
	}
	mark.index = offset;
	return mark;
}

static int
syntax_error(struct loader *ld)
{
	const yaml_parser_t *p       = &ld->parser;
	const char          *problem = p->problem ? p->problem : "unknown";
	yaml_mark_t          mark    = p->problem_mark;
	int                  rc;

	if (p->error == YAML_MEMORY_ERROR) {
		set_err(ld->err, ld->errlen, "%s: out of memory", ld->name);
		rc = -RMQ_ENOMEM;
		goto out;
	}
	if (p->error == YAML_READER_ERROR)
		mark = offset_mark(ld, p->problem_offset);
	rc = at(ld, mark, "YAML syntax error: %s", problem);
out:
	return rc;
}

/* Drop the current event and parse the next one. */
static int
next(struct loader *ld)
{
	int rc = 0;

	yaml_event_delete(&ld->ev);
	if (!yaml_parser_parse(&ld->parser, &ld->ev))
		rc = syntax_error(ld);
	return rc;
}

/* libyaml checks the grammar; this only guards our reading of it. */
static int
expect(struct loader *ld, yaml_event_type_t type)
{
	int rc;

	rc = next(ld);
	if (rc == 0 && ld->ev.type != type)
		rc = at(ld, ld->ev.start_mark, "unexpected YAML event");
	return rc;
}

static const char *
kind(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return "a scalar";
	case YAML_SEQUENCE_START_EVENT:
		return "a sequence";
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	case YAML_ALIAS_EVENT:
		return "an alias";
	default:
		return "something else";
	}
}

/* An empty plain scalar, "~" or "null": YAML's ways to say nothing. */
static int
is_null(const yaml_event_t *ev)
{
	const char *v   = (const char *) ev->data.scalar.value;
	size_t      len = ev->data.scalar.length;

	return ev->type == YAML_SCALAR_EVENT
	    && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE
	    && (len == 0 || (len == 1 && v[0] == '~')
	        || (len == 4 && memcmp(v, "null", 4) == 0));
}

/*
 * The current event is a key that is not in the schema; the path is
 * path[0..plen) plus the key.  fits: the whole key is in ld->path, so we
 * can look for a suggestion.
 */
static int
unknown_key(struct loader *ld, size_t plen, int fits)
{
	const char *key  = (const char *) ld->ev.data.scalar.value;
	size_t      klen = ld->ev.data.scalar.length;
	char        shown[RMQ_SCHEMA_ECHO_SIZE];
	char        hint[PATH_MAX_LEN];
	int         rc;

	rmq_schema_echo(shown, sizeof shown, key, klen);
	if (fits
	    && rmq_schema_suggest(ld->path, ld->pathlen, hint, sizeof hint))
		rc = at(ld, ld->ev.start_mark,
		    "unknown key '%.*s%s%s' (did you mean '%s'?)", (int) plen,
		    ld->path, plen > 0 ? "." : "", shown, hint);
	else
		rc = at(ld, ld->ev.start_mark, "unknown key '%.*s%s%s'",
		    (int) plen, ld->path, plen > 0 ? "." : "", shown);
	return rc;
}

/* The key in ld->path, found at mark, is not known after all. */
static int
unknown_key_at(struct loader *ld, yaml_mark_t mark)
{
	char shown[RMQ_SCHEMA_ECHO_SIZE], hint[PATH_MAX_LEN];

	rmq_schema_echo(shown, sizeof shown, ld->path, ld->pathlen);
	if (rmq_schema_suggest(ld->path, ld->pathlen, hint, sizeof hint))
		return at(ld, mark, "unknown key '%s' (did you mean '%s'?)",
		    shown, hint);
	return at(ld, mark, "unknown key '%s'", shown);
}

/* A socket name or an fnmatch(3) pattern of them, as a section name. */
static int
name_pattern_ok(const char *name, size_t len)
{
	size_t i;

	if (len == 0 || len >= RMQ_CFG_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!rmq_config_name_ok(name + i, 1)
		    && strchr("*?[]!", name[i]) == NULL)
			return 0;
	return 1;
}

/* A new section called name[0..nlen) in secs (n of max), or the one there
 * is; NULL when there is no room. */
static struct rmq_cfg_section *
section_get(struct rmq_cfg_section *secs, int *n, int max, const char *name,
    size_t nlen)
{
	struct rmq_cfg_section *sc;
	int                     i;

	for (i = 0; i < *n; i++)
		if (strlen(secs[i].name) == nlen
		    && memcmp(secs[i].name, name, nlen) == 0)
			return &secs[i];
	if (*n == max)
		return NULL;
	sc = &secs[(*n)++];
	memset(sc, 0, sizeof(*sc));
	memcpy(sc->name, name, nlen);
	sc->p.rndv  = -1;
	sc->p.force = -1;
	sc->p.fanout_log = -1;
	return sc;
}

/*
 * key[0..) is a key of the section whose dotted name is
 * ld->path[0..seclen): set ld->sec_key and *kp to the row that parses it,
 * or fail with a suggestion.  what: "a socket's" or "a pattern's".
 */
static int
section_key(struct loader *ld, size_t seclen, const char *key,
    const char *what, const struct rmq_schema_key **kp)
{
	char shown[RMQ_SCHEMA_ECHO_SIZE], hint[PATH_MAX_LEN];
	int  i;

	for (i = 0; i < RMQ_CFG_NPK; i++)
		if (strcmp(key, rmq_schema_path_keys[i].name) == 0) {
			ld->sec_key = i;
			*kp         = &rmq_schema_path_keys[i];
			return 0;
		}
	rmq_schema_echo(shown, sizeof shown, key, strlen(key));
	if (rmq_schema_suggest_path_key(key, strlen(key), hint, sizeof hint))
		return at(ld, ld->ev.start_mark,
		    "unknown key '%.*s.%s' (did you mean '%.*s.%s'?)",
		    (int) seclen, ld->path, shown, (int) seclen, ld->path, hint);
	return at(ld, ld->ev.start_mark,
	    "unknown key '%.*s.%s' (%s section takes inject_max, eager_max, "
	    "ring_max, rndv and path)",
	    (int) seclen, ld->path, shown, what);
}

/*
 * ld->path is thresholds.sockets, thresholds.sockets.NAME or
 * thresholds.sockets.NAME.KEY: set ld->sec, ld->sec_key, and *kp to the
 * row that parses KEY.  0, or an error at the key.
 */
static int
named_key(struct loader *ld, const struct rmq_schema_key **kp)
{
	const size_t plen = sizeof NAMED_PREFIX - 1;
	const char  *name = ld->path + plen + 1, *dot;
	char         shown[RMQ_SCHEMA_ECHO_SIZE];
	size_t       nlen;
	int          rc = 0;

	if (ld->pathlen == plen)
		goto out; /* the section itself */
	dot  = strchr(name, '.');
	nlen = dot != NULL ? (size_t) (dot - name) : strlen(name);
	rmq_schema_echo(shown, sizeof shown, name, nlen);
	if (!name_pattern_ok(name, nlen)) {
		rc = at(ld, ld->ev.start_mark,
		    "%s: '%s' is not a socket name (1 to %d of A-Z a-z 0-9 _ -, "
		    "or an fnmatch pattern of them with * ? [ ])",
		    NAMED_PREFIX, shown, RMQ_CFG_NAME_MAX - 1);
		goto out;
	}
	ld->sec = section_get(ld->cfg.named, &ld->cfg.nnamed,
	    RMQ_CFG_NAMED_MAX, name, nlen);
	if (ld->sec == NULL) {
		rc = at(ld, ld->ev.start_mark,
		    "%s: '%s': at most %d socket names", NAMED_PREFIX, shown,
		    RMQ_CFG_NAMED_MAX);
		goto out;
	}
	if (dot != NULL) /* else the NAME section */
		rc = section_key(ld, (size_t) (dot - ld->path), dot + 1,
		    "a socket's", kp);
out:
	return rc;
}

/* A pattern's section name: 1 to 15 of a-z 0-9, a letter first. */
static bool
section_name_ok(const char *name, size_t len)
{
	size_t i;

	if (len == 0 || len >= RMQ_CFG_SECT_NAME || name[0] < 'a'
	    || name[0] > 'z')
		return false;
	for (i = 0; i < len; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z')
		        || (name[i] >= '0' && name[i] <= '9')))
			return false;
	return true;
}

/*
 * ld->path is thresholds.X or thresholds.X.KEY, and not a key of the
 * schema: X is a pattern's section (the patterns are not known here:
 * rmq_ctx_new checks X).  Returns 1 if it is not of that form (an unknown
 * key, then), else 0 or an error at the key.
 */
static int
pattern_key(struct loader *ld, const struct rmq_schema_key **kp)
{
	const size_t plen = sizeof SECT_PREFIX - 1;
	const char  *name = ld->path + plen, *dot;
	char         shown[RMQ_SCHEMA_ECHO_SIZE];
	size_t       nlen;

	if (strncmp(ld->path, SECT_PREFIX, plen) != 0)
		return 1;
	dot  = strchr(name, '.');
	nlen = dot != NULL ? (size_t) (dot - name) : strlen(name);
	if (!section_name_ok(name, nlen)
	    || (dot != NULL && strchr(dot + 1, '.') != NULL))
		return 1;
	ld->sec = section_get(ld->cfg.sect, &ld->cfg.nsect, RMQ_CFG_SECT_MAX,
	    name, nlen);
	if (ld->sec == NULL) {
		rmq_schema_echo(shown, sizeof shown, name, nlen);
		return at(ld, ld->ev.start_mark,
		    "thresholds: '%s': at most %d pattern sections", shown,
		    RMQ_CFG_SECT_MAX);
	}
	if (dot == NULL) {
		ld->candidate = true; /* a section if a mapping follows */
		return 0;
	}
	return section_key(ld, (size_t) (dot - ld->path), dot + 1,
	    "a pattern's", kp);
}

/*
 * The current event is a scalar key: append it to the path, check that it
 * is a known key or section and that it is new.  *kp is the key's schema
 * row, or NULL for a section.
 */
static int
load_key(struct loader *ld, const struct rmq_schema_key **kp)
{
	const char *key  = (const char *) ld->ev.data.scalar.value;
	size_t      klen = ld->ev.data.scalar.length;
	size_t      plen = ld->pathlen;
	size_t      sep  = plen > 0 ? 1 : 0;
	const char *name;
	size_t      i;
	int         rc = 0;

	*kp           = NULL;
	ld->key_mark  = ld->ev.start_mark;
	ld->sec       = NULL;
	ld->sec_key   = -1;
	ld->candidate = false;
	/* A NUL inside a quoted key must not cut "provider\0x" short. */
	if (memchr(key, '\0', klen) != NULL
	    || plen + sep + klen >= sizeof ld->path) {
		rc = unknown_key(ld, plen, 0);
		goto out;
	}
	if (sep)
		ld->path[plen] = '.';
	memcpy(ld->path + plen + sep, key, klen);
	ld->pathlen           = plen + sep + klen;
	ld->path[ld->pathlen] = '\0';

	if (strncmp(ld->path, NAMED_PREFIX, sizeof NAMED_PREFIX - 1) == 0
	    && (ld->path[sizeof NAMED_PREFIX - 1] == '\0'
	        || ld->path[sizeof NAMED_PREFIX - 1] == '.')) {
		rc = named_key(ld, kp);
		if (rc != 0)
			goto out;
	} else {
		*kp  = rmq_schema_find(ld->path, ld->pathlen);
		name = *kp != NULL ? (*kp)->name
		                   : rmq_schema_section(ld->path, ld->pathlen);
		if (name == NULL && (rc = pattern_key(ld, kp)) != 0) {
			if (rc == 1)
				rc = unknown_key(ld, plen, 1);
			goto out;
		}
	}
	for (i = 0; i < ld->nseen; i++) {
		if (strcmp(ld->seen[i], ld->path) == 0) {
			rc = at(ld, ld->ev.start_mark, "duplicate key '%s'",
			    ld->path);
			goto out;
		}
	}
	assert(ld->nseen < SEEN_MAX);
	memcpy(ld->seen[ld->nseen], ld->path, ld->pathlen + 1);
	ld->nseen++;
out:
	return rc;
}

static int load_mapping(struct loader *ld);

/* Set key k (of ld->path) to text, found at mark. */
static int
set_value(struct loader *ld, const struct rmq_schema_key *k,
    const char *text, size_t len, yaml_mark_t mark)
{
	struct rmq_cfg_section *sc = ld->sec;
	char                    what[RMQ_CFG_ERR_MAX];
	int                     rc = 0;

	if (sc != NULL) {
		/* A key of a section, into its paths. */
		if (rmq_schema_set_in(k, &sc->p, text, len, what, sizeof what)) {
			rc = at(ld, mark, "%s: %s", ld->path, what);
			goto out;
		}
		sc->src[ld->sec_key]  = RMQ_CFG_SRC_FILE;
		sc->line[ld->sec_key] = (unsigned) mark.line + 1;
		sc->col[ld->sec_key]  = (unsigned) mark.column + 1;
		goto out;
	}
	if (rmq_schema_set(k, &ld->cfg, text, len, what, sizeof what)) {
		rc = at(ld, mark, "%s: %s", k->name, what);
		goto out;
	}
	ld->cfg.src[rmq_schema_index(k)]  = RMQ_CFG_SRC_FILE;
	ld->cfg.line[rmq_schema_index(k)] = (unsigned) mark.line + 1;
	ld->cfg.col[rmq_schema_index(k)]  = (unsigned) mark.column + 1;
out:
	return rc;
}

/*
 * The current event starts a sequence, the value of LIST key k: its
 * scalars, joined with commas, are the value.
 */
static int
load_list(struct loader *ld, const struct rmq_schema_key *k)
{
	yaml_mark_t mark = ld->ev.start_mark;
	char        text[RMQ_CFG_ERR_MAX], what[RMQ_CFG_ERR_MAX];
	size_t      len = 0, n;
	int         rc;

	for (;;) {
		rc = next(ld);
		if (rc != 0 || ld->ev.type == YAML_SEQUENCE_END_EVENT)
			break;
		if (ld->ev.type != YAML_SCALAR_EVENT) {
			rmq_schema_describe(k, what, sizeof what);
			rc = at(ld, ld->ev.start_mark,
			    "%s: expected %s, got %s in the list", k->name, what,
			    kind(&ld->ev));
			break;
		}
		n = ld->ev.data.scalar.length;
		if (len + n + 2 > sizeof text) {
			rc = at(ld, ld->ev.start_mark, "%s: list too long",
			    k->name);
			break;
		}
		if (len > 0)
			text[len++] = ',';
		memcpy(text + len, ld->ev.data.scalar.value, n);
		len += n;
	}
	if (rc == 0)
		rc = set_value(ld, k, text, len, mark);
	return rc;
}

/*
 * The current event is the value of the key in ld->path: k is its schema
 * row, or NULL if the key is a section.
 */
static int
load_value(struct loader *ld, const struct rmq_schema_key *k)
{
	const yaml_event_t *ev = &ld->ev;
	char                shown[RMQ_SCHEMA_ECHO_SIZE];
	char                what[RMQ_CFG_ERR_MAX];
	int                 rc = 0;

	if (k != NULL && k->type == RMQ_SCHEMA_LIST
	    && ev->type == YAML_SEQUENCE_START_EVENT) {
		rc = load_list(ld, k);
		goto out;
	}
	if (k != NULL && ev->type == YAML_SCALAR_EVENT) {
		rc = set_value(ld, k, (const char *) ev->data.scalar.value,
		    ev->data.scalar.length, ev->start_mark);
		goto out;
	}
	/* A section whose name is also a short key ("log"). */
	if (ev->type == YAML_MAPPING_START_EVENT &&
	    (k == NULL || strcmp(k->name, ld->path) != 0)) {
		rc = load_mapping(ld);
		goto out;
	}
	if (k == NULL && is_null(ev))
		goto out; /* an empty section */
	if (ld->candidate && ev->type == YAML_SCALAR_EVENT) {
		/* thresholds.X: 3 -- a key we do not know, not a section. */
		ld->pathlen = strlen(ld->path);
		rc = unknown_key_at(ld, ld->key_mark);
		goto out;
	}

	/* A mapping for a value, a value for a section, or worse. */
	if (k != NULL)
		rmq_schema_describe(k, what, sizeof what);
	else
		snprintf(what, sizeof what, "a mapping");
	if (ev->type == YAML_SCALAR_EVENT) {
		rmq_schema_echo(shown, sizeof shown,
		    (const char *) ev->data.scalar.value,
		    ev->data.scalar.length);
		rc = at(ld, ev->start_mark, "%s: expected %s, got '%s'",
		    ld->path, what, shown);
	} else {
		rc = at(ld, ev->start_mark, "%s: expected %s, got %s",
		    ld->path, what, kind(ev));
	}
out:
	return rc;
}

/* The current event is MAPPING-START; read up to its MAPPING-END. */
static int
load_mapping(struct loader *ld)
{
	const struct rmq_schema_key *k;
	size_t                       plen = ld->pathlen;
	int                          rc;

	for (;;) {
		rc = next(ld);
		if (rc != 0 || ld->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (ld->ev.type != YAML_SCALAR_EVENT) {
			rc = at(ld, ld->ev.start_mark,
			    "%s%sexpected a key, got %s", ld->path,
			    plen > 0 ? ": " : "", kind(&ld->ev));
			break;
		}
		rc = load_key(ld, &k);
		if (rc == 0)
			rc = next(ld);
		if (rc == 0)
			rc = load_value(ld, k);
		if (rc != 0)
			break;
		ld->pathlen    = plen;
		ld->path[plen] = '\0';
	}
	return rc;
}

static int
load_stream(struct loader *ld)
{
	int rc;

	rc = expect(ld, YAML_STREAM_START_EVENT);
	if (rc != 0)
		goto out;
	rc = next(ld);
	if (rc != 0 || ld->ev.type == YAML_STREAM_END_EVENT)
		goto out; /* no document: comments only, or nothing */
	if (ld->ev.type != YAML_DOCUMENT_START_EVENT) {
		rc = at(ld, ld->ev.start_mark, "unexpected YAML event");
		goto out;
	}
	rc = next(ld);
	if (rc != 0)
		goto out;
	if (ld->ev.type == YAML_MAPPING_START_EVENT)
		rc = load_mapping(ld);
	else if (!is_null(&ld->ev)) /* "---" alone is an empty document */
		rc = at(ld, ld->ev.start_mark,
		    "top level must be a mapping, got %s", kind(&ld->ev));
	if (rc != 0)
		goto out;
	rc = expect(ld, YAML_DOCUMENT_END_EVENT);
	if (rc != 0)
		goto out;
	rc = next(ld);
	if (rc == 0 && ld->ev.type != YAML_STREAM_END_EVENT)
		rc = at(ld, ld->ev.start_mark,
		    "only one YAML document is allowed");
out:
	return rc;
}

static int
load_buffer(struct rmq_config *cfg, const unsigned char *buf, size_t len,
    const char *name, char *err, size_t errlen)
{
	struct loader *ld;
	int            rc;

	/* On the heap: the seen keys are some 20 KiB. */
	ld = calloc(1, sizeof *ld);
	if (ld == NULL) {
		set_err(err, errlen, "%s: out of memory", name);
		rc = -RMQ_ENOMEM;
		goto out;
	}
	memcpy(&ld->cfg, cfg, sizeof ld->cfg);
	ld->name   = name;
	ld->buf    = buf;
	ld->len    = len;
	ld->err    = err;
	ld->errlen = errlen;
	ld->sec_key = -1;
	if (!yaml_parser_initialize(&ld->parser)) {
		set_err(err, errlen, "%s: out of memory", name);
		rc = -RMQ_ENOMEM;
		goto out;
	}
	yaml_parser_set_input_string(&ld->parser, buf, len);
	rc = load_stream(ld);
	if (rc == 0) {
		snprintf(ld->cfg.file, sizeof ld->cfg.file, "%s", name);
		memcpy(cfg, &ld->cfg, sizeof *cfg);
	}
	yaml_event_delete(&ld->ev);
	yaml_parser_delete(&ld->parser);
out:
	free(ld);
	return rc;
}

/* Read a whole file; -errno, or -EFBIG past FILE_MAX bytes. */
static int
read_file(const char *path, unsigned char **bufp, size_t *lenp)
{
	unsigned char *buf = NULL, *nbuf;
	size_t         len = 0, cap = 0;
	FILE          *f;
	int            rc = 0;

	f = fopen(path, "rb");
	if (f == NULL) {
		rc = errno != 0 ? -errno : -EIO;
		goto out;
	}
	for (;;) {
		if (len == cap) {
			if (cap > FILE_MAX) {
				rc = -EFBIG;
				goto out;
			}
			cap  = cap == 0 ? 4096 : cap * 2;
			nbuf = realloc(buf, cap);
			if (nbuf == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			buf = nbuf;
		}
		errno = 0;
		len += fread(buf + len, 1, cap - len, f);
		if (ferror(f)) {
			rc = errno != 0 ? -errno : -EIO;
			goto out;
		}
		if (len > FILE_MAX) { /* cap doubled past it: the exact bound */
			rc = -EFBIG;
			goto out;
		}
		if (feof(f))
			break;
	}
out:
	if (f != NULL)
		fclose(f);
	if (rc != 0) {
		free(buf);
		buf = NULL;
		len = 0;
	}
	*bufp = buf;
	*lenp = len;
	return rc;
}

int
rmq_config_load(
    struct rmq_config *cfg, const char *path, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t         len = 0;
	int            rc;

	set_err(err, errlen, "%s", "");
	if (cfg == NULL || path == NULL) {
		set_err(err, errlen, "rmq_config_load: invalid argument");
		rc = -RMQ_EINVAL;
		goto out;
	}
	rc = read_file(path, &buf, &len);
	if (rc == -EFBIG) {
		set_err(
		    err, errlen, "%s: larger than %d bytes", path, FILE_MAX);
		rc = -RMQ_ECONFIG;
		goto out;
	}
	if (rc != 0) {
		set_err(err, errlen, "%s: %s", path, strerror(-rc));
		goto out;
	}
	rc = load_buffer(cfg, buf, len, path, err, errlen);
out:
	free(buf);
	return rc;
}

int
rmq_config_load_string(struct rmq_config *cfg, const char *yaml,
    const char *name, char *err, size_t errlen)
{
	int rc;

	set_err(err, errlen, "%s", "");
	if (name == NULL)
		name = "<string>";
	if (cfg == NULL || yaml == NULL) {
		set_err(err, errlen, "%s: invalid argument", name);
		rc = -RMQ_EINVAL;
		goto out;
	}
	rc = load_buffer(cfg, (const unsigned char *) yaml, strlen(yaml), name,
	    err, errlen);
out:
	return rc;
}

void
rmq_config_env_name(const char *key, char *buf, size_t len)
{
	size_t i, n = 0;

	if (len == 0)
		return;
	n = (size_t) snprintf(buf, len, "RMQ_");
	for (i = 0; key[i] != '\0' && n + 1 < len; i++, n++)
		buf[n] = key[i] == '.' ? '_'
		         : (key[i] >= 'a' && key[i] <= 'z') ? (char) (key[i] - 32)
		                                             : key[i];
	buf[n < len ? n : len - 1] = '\0';
}

/* Apply one variable to one key; 0, or -RMQ_ECONFIG with err set. */
static int
env_apply(struct rmq_config *tmp, const struct rmq_schema_key *k,
    const char *var, char *err, size_t errlen)
{
	char        what[RMQ_CFG_ERR_MAX];
	const char *v = getenv(var);
	int         rc;

	if (v == NULL || v[0] == '\0')
		return 0;
	rc = rmq_schema_set(k, tmp, v, strlen(v), what, sizeof what);
	if (rc != 0) {
		set_err(err, errlen, "%s: %s", var, what);
		return rc;
	}
	tmp->src[rmq_schema_index(k)] = RMQ_CFG_SRC_ENV;
	return 0;
}

extern char **environ;

/*
 * RMQ_THRESHOLDS_<SECTION>_<KEY>=value: a pattern section's key (SECTION
 * has no underscore; the global RMQ_THRESHOLDS_EAGER_MAX and friends are
 * schema keys, handled before; socket-name sections have no variables).
 */
static int
env_sections(struct rmq_config *tmp, char *err, size_t errlen)
{
	static const char        prefix[] = "RMQ_THRESHOLDS_";
	struct rmq_cfg_section  *sc;
	char                     sect[RMQ_CFG_SECT_NAME], what[RMQ_CFG_ERR_MAX];
	char                     var[96], want[96], dotted[96];
	const char              *name, *us, *eq;
	size_t                   n, i;
	int                      k, rc;

	for (char **ep = environ; ep != NULL && *ep != NULL; ep++) {
		if (strncmp(*ep, prefix, sizeof prefix - 1) != 0)
			continue;
		name = *ep + sizeof prefix - 1;
		eq   = strchr(name, '=');
		us   = strchr(name, '_');
		if (eq == NULL || us == NULL || us > eq || eq[1] == '\0'
		    || (size_t) (eq - *ep) >= sizeof var)
			continue;
		n = (size_t) (us - name);
		if (n == 0 || n >= sizeof sect)
			continue;
		for (i = 0; i < n; i++)
			sect[i] = (char) (name[i] >= 'A' && name[i] <= 'Z'
			        ? name[i] + 32 : name[i]);
		sect[n] = '\0';
		if (strcmp(sect, NAMED_SECT) == 0 || !section_name_ok(sect, n))
			continue;
		memcpy(var, *ep, (size_t) (eq - *ep));
		var[eq - *ep] = '\0';
		for (k = 0; k < RMQ_CFG_NPK; k++) {
			snprintf(dotted, sizeof dotted, "thresholds.%s.%s",
			    sect, rmq_schema_path_keys[k].name);
			rmq_config_env_name(dotted, want, sizeof want);
			if (strcmp(want, var) == 0)
				break;
		}
		if (k == RMQ_CFG_NPK)
			continue; /* not one of ours */
		sc = section_get(tmp->sect, &tmp->nsect, RMQ_CFG_SECT_MAX, sect,
		    n);
		if (sc == NULL) {
			set_err(err, errlen, "%s: at most %d pattern sections",
			    var, RMQ_CFG_SECT_MAX);
			return -RMQ_ECONFIG;
		}
		rc = rmq_schema_set_in(&rmq_schema_path_keys[k], &sc->p,
		    eq + 1, strlen(eq + 1), what, sizeof what);
		if (rc != 0) {
			set_err(err, errlen, "%s: %s", var, what);
			return rc;
		}
		sc->src[k] = RMQ_CFG_SRC_ENV;
	}
	return 0;
}

/*
 * A variable that is set but empty counts as unset, so that
 * "RMQ_LOG= prog" does not fail.  The short names (RMQ_EAGER_MAX) first,
 * then every key's full name (RMQ_THRESHOLDS_EAGER_MAX, RMQ_LIMITS_SNDHWM),
 * which wins where both are set.
 */
int
rmq_config_env(struct rmq_config *cfg, char *err, size_t errlen)
{
	const struct rmq_schema_key *k;
	struct rmq_config            tmp;
	char                         var[96];
	size_t                       i;
	int                          rc = 0;

	set_err(err, errlen, "%s", "");
	if (cfg == NULL) {
		set_err(err, errlen, "rmq_config_env: invalid argument");
		rc = -RMQ_EINVAL;
		goto out;
	}
	memcpy(&tmp, cfg, sizeof tmp);
	for (i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++) {
		k = rmq_schema_find(env_vars[i].key, strlen(env_vars[i].key));
		assert(k != NULL);
		rc = env_apply(&tmp, k, env_vars[i].var, err, errlen);
		if (rc != 0)
			goto out;
	}
	for (i = 0; i < rmq_schema_nkeys(); i++) {
		k = rmq_schema_at(i);
		rmq_config_env_name(k->name, var, sizeof var);
		rc = env_apply(&tmp, k, var, err, errlen);
		if (rc != 0)
			goto out;
	}
	rc = env_sections(&tmp, err, errlen);
	if (rc != 0)
		goto out;
	memcpy(cfg, &tmp, sizeof *cfg);
out:
	return rc;
}

int
rmq_config_key_index(const char *key)
{
	const struct rmq_schema_key *k = rmq_schema_find(key, strlen(key));

	return k != NULL ? (int) rmq_schema_index(k) : -1;
}

const char *
rmq_config_env_var(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++)
		if (strcmp(env_vars[i].key, key) == 0)
			return env_vars[i].var;
	return NULL;
}

int
rmq_config_name_ok(const char *name, size_t len)
{
	size_t i;

	if (name == NULL || len == 0 || len >= RMQ_CFG_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		        || (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

const struct rmq_cfg_section *
rmq_config_named(const struct rmq_config *cfg, const char *name)
{
	const struct rmq_cfg_section *found = NULL;
	int                           i;

	if (cfg == NULL || name == NULL || name[0] == '\0')
		goto out;
	for (i = 0; i < cfg->nnamed; i++)
		if (strcmp(cfg->named[i].name, name) == 0) {
			found = &cfg->named[i];
			goto out;
		}
	for (i = 0; i < cfg->nnamed; i++)
		if (fnmatch(cfg->named[i].name, name, 0) == 0) {
			found = &cfg->named[i];
			goto out;
		}
out:
	return found;
}

const struct rmq_cfg_section *
rmq_config_section(const struct rmq_config *cfg, const char *section)
{
	int i;

	if (cfg == NULL || section == NULL)
		return NULL;
	for (i = 0; i < cfg->nsect; i++)
		if (strcmp(cfg->sect[i].name, section) == 0)
			return &cfg->sect[i];
	return NULL;
}

void
rmq_config_where(const struct rmq_config *cfg, const char *key, char *buf,
    size_t len)
{
	const char *alias = rmq_config_env_var(key);
	int         k     = rmq_config_key_index(key);

	if (k >= 0 && cfg->src[k] == RMQ_CFG_SRC_FILE)
		snprintf(buf, len, "%s:%u:%u: %s", cfg->file, cfg->line[k],
		    cfg->col[k], key);
	else if (k >= 0 && cfg->src[k] == RMQ_CFG_SRC_ENV && alias != NULL
	    && getenv(alias) != NULL)
		snprintf(buf, len, "%s", alias); /* the short name was set */
	else if (k >= 0 && cfg->src[k] == RMQ_CFG_SRC_ENV)
		rmq_config_env_name(key, buf, len);
	else
		snprintf(buf, len, "%s", key);
}

/* RMQ_THRESHOLDS_<SECTION>_<KEY> */
static void
section_env_name(const struct rmq_cfg_section *sc, int key, char *buf,
    size_t len)
{
	char dotted[PATH_MAX_LEN];

	snprintf(dotted, sizeof dotted, "thresholds.%s.%s", sc->name,
	    rmq_schema_path_keys[key].name);
	rmq_config_env_name(dotted, buf, len);
}

void
rmq_config_section_where(const struct rmq_config *cfg,
    const struct rmq_cfg_section *sc, char *buf, size_t len)
{
	int i;

	for (i = 0; i < RMQ_CFG_NPK; i++)
		if (sc->src[i] == RMQ_CFG_SRC_FILE && sc->line[i] != 0) {
			snprintf(buf, len, "%s:%u:%u: thresholds.%s", cfg->file,
			    sc->line[i], sc->col[i], sc->name);
			return;
		}
	for (i = 0; i < RMQ_CFG_NPK; i++)
		if (sc->src[i] == RMQ_CFG_SRC_ENV) {
			section_env_name(sc, i, buf, len);
			return;
		}
	snprintf(buf, len, "%s: thresholds.%s", cfg->file, sc->name);
}

const char *
rmq_config_str(const struct rmq_config *cfg, const char *key)
{
	const struct rmq_schema_key *k;

	if (cfg == NULL || key == NULL)
		return NULL;
	k = rmq_schema_find(key, strlen(key));
	if (k == NULL
	    || (k->type != RMQ_SCHEMA_STR && k->type != RMQ_SCHEMA_STRENUM
	        && k->type != RMQ_SCHEMA_LIST))
		return NULL;
	return (const char *) cfg + k->offset;
}

/* The keys a section set, in key order; prefix is where it lives. */
static void
dump_section(const struct rmq_config *cfg, const struct rmq_cfg_section *sc,
    const char *prefix, bool quoted, FILE *f)
{
	char val[RMQ_CFG_PATH_MAX + 32], var[96];
	int  j;

	for (j = 0; j < RMQ_CFG_NPK; j++) {
		if (sc->src[j] == RMQ_CFG_SRC_DEFAULT)
			continue;
		rmq_schema_format_in(&rmq_schema_path_keys[j], &sc->p, val,
		    sizeof val);
		/* Quoted: a socket-name pattern may start with '*' or '['. */
		fprintf(f, "%s%s.%s.%s%s: %s  # ", quoted ? "\"" : "", prefix,
		    sc->name, rmq_schema_path_keys[j].name, quoted ? "\"" : "",
		    val);
		if (sc->src[j] == RMQ_CFG_SRC_FILE) {
			fprintf(f, "file %s:%u\n", cfg->file, sc->line[j]);
		} else {
			section_env_name(sc, j, var, sizeof var);
			fprintf(f, "environment (%s)\n", var);
		}
	}
}

int
rmq_config_dump(const struct rmq_config *cfg, FILE *f)
{
	const struct rmq_schema_key *k;
	char                         val[RMQ_CFG_PATH_MAX + 32], var[96];
	const char                  *alias;
	size_t                       i;

	fprintf(f, "# effective librmq configuration: file %s, then the\n"
	           "# environment, then the defaults; every key with its source.\n"
	           "# Loads back as it is (dotted keys).\n",
	    cfg->file[0] ? cfg->file : "(none)");
	for (i = 0; i < rmq_schema_nkeys(); i++) {
		k = rmq_schema_at(i);
		rmq_schema_format(k, cfg, val, sizeof val);
		rmq_config_env_name(k->name, var, sizeof var);
		alias = rmq_config_env_var(k->name);
		switch (cfg->src[i]) {
		case RMQ_CFG_SRC_FILE:
			fprintf(f, "%s: %s  # file %s\n", k->name, val, cfg->file);
			break;
		case RMQ_CFG_SRC_ENV:
			fprintf(f, "%s: %s  # environment (%s%s%s)\n", k->name,
			    val, alias ? alias : var, alias ? " or " : "",
			    alias ? var : "");
			break;
		default:
			fprintf(f, "%s: %s  # default\n", k->name, val);
			break;
		}
	}
	for (i = 0; i < (size_t) cfg->nsect; i++)
		dump_section(cfg, &cfg->sect[i], "thresholds", false, f);
	for (i = 0; i < (size_t) cfg->nnamed; i++)
		dump_section(cfg, &cfg->named[i], NAMED_PREFIX, true, f);
	return ferror(f) ? -EIO : 0;
}
