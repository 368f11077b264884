/*
 * PUB/SUB's state and its log: what the pattern (pubsub.c) shares with
 * the log's publisher side (fanout.c) and subscriber side (fanout_read.c).
 * pubsub.c calls into the log; the log calls nothing of pubsub.c (it
 * matches and frames with topics.h).  Private to patterns/.
 */
#ifndef RMQ_FANOUT_H
#define RMQ_FANOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include "pattern.h"
#include "topics.h"

#define PS_LOG_SUBS        64   /* log subscribers a PUB has; the rest are
                                 * pushed to */

/* ---- PUB ---- */

enum { PS_PUSH = 0, PS_LOG };

struct pub_peer {
	struct rmq_peer *p;
	struct prefixes  subs;
	bool             synced; /* its connect-time subscriptions are in */
	/* fanout.c */
	int              mode;   /* PS_* */
	int              idx;    /* its bit in the log's masks */
	uint64_t         cursor; /* the next entry it will read, as it said */
	uint64_t         took;   /* entries for it it took, as it said */
	uint64_t         marked; /* entries marked for it */
	uint64_t         mprev;  /* of them, before cursor */
	uint64_t        *cm;     /* [seq % slots]: marked before seq */
	bool             join_later; /* synced while a message of several
	                              * frames was going: onto the log before
	                              * the next */
};

struct ps_log;

struct pub_state {
	struct pub_peer **subs; /* live subscribers */
	int               nsubs, cap;
	uint32_t         *ids;  /* a send's snapshot of their peer ids */
	int               ids_cap;
	int               ids_n; /* valid ones; -1: taken again at the next
	                          * send (a subscriber came or went) */
	int               nodrop;
	struct ps_log    *log;  /* NULL until fan-out reaches the threshold */
	int64_t           news_at; /* when a send last took in the
	                            * subscribers' news (progress) */
};

/* ---- the log (fanout.c, fanout_read.c) ---- */

/* An entry: H, mask, len, flags, payload or out-of-line address and key,
 * ..., T (fanout.c says how they are written and read). */
#define E_H      0
#define E_MASK   8
#define E_LEN    16
#define E_FLAGS  20
#define E_SUM    24          /* ps_entry_sum of the rest */
#define E_BODY   32
#define E_TAIL   40          /* H, mask, len, flags, sum + T */
#define E_F_OOL  1u
#define E_F_MORE 2u          /* frames of its message follow it */
#define E_F_CONT 4u          /* it follows its message's first frame */
#define E_BUSY   UINT64_MAX
#define E_GONE   (UINT64_MAX - 1) /* T: retired early, step over it */

#define CELL     32          /* cursor, took, check, pad */

/*
 * An entry's checksum: seq, mask, len and flags, and the body (blen
 * bytes: the payload, or the out-of-line address and key).  A copy that
 * raced a rewrite can pass the H and T test where the copy was not made
 * in address order (a CPU's fast string copy need not be): it does not
 * pass this one.
 */
static inline uint64_t
ps_entry_sum(uint64_t seq, const uint8_t *e, size_t blen)
{
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	uint64_t       h = seq * k, w;
	size_t         i;

	memcpy(&w, e + 8, 8);   /* mask */
	h = (h ^ w) * k;
	h ^= h >> 32;
	memcpy(&w, e + 16, 8);  /* len, flags */
	h = (h ^ w) * k;
	h ^= h >> 32;
	for (i = 0; i + 8 <= blen; i += 8) {
		memcpy(&w, e + 32 + i, 8);
		h = (h ^ w) * k;
		h ^= h >> 32;
	}
	if (i < blen) {
		w = 0;
		memcpy(&w, e + 32 + i, blen - i);
		h = (h ^ w) * k;
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}
#define LOG_FRAME (SUB_FRAME_HDR + 3 * 4 + 6 * 8)
static inline uint64_t
ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline void
st64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline uint64_t
cell_check(uint64_t c, uint64_t t)
{
	return ~c ^ (t * 0x9e3779b97f4a7c15ull);
}

/* fanout.c, publisher side. */
/* Start the log if the subscribers reached the threshold; move every
 * synced push subscriber to it (room permitting).  0 or -error. */
int  ps_log_maybe_start(struct rmq_socket *s, struct pub_state *st);
/* A subscriber synced: onto the log if there is one. */
void ps_log_join(struct rmq_socket *s, struct pub_state *st,
                 struct pub_peer *sp);
void ps_log_leave(struct pub_state *st, struct pub_peer *sp);
/* Append one frame for the log subscribers (fr: PS_FR_*; a message's
 * first is matched against their subscriptions, the frames after it go
 * where it went): 0, or -RMQ_EAGAIN when RMQ_NODROP waited in vain
 * (nothing appended; never once a message began). */
#define PS_FR_MORE 1u /* frames follow */
#define PS_FR_CONT 2u /* a frame after the first */
int  ps_log_append(struct rmq_socket *s, struct pub_state *st,
                   const uint8_t *b, size_t len, int flags, unsigned fr);
/* Did the frame last appended say more follow (the rest are appended)? */
bool ps_log_open(const struct pub_state *st);
/* Subscribers that synced while a message was going: onto the log. */
void ps_log_join_later(struct rmq_socket *s, struct pub_state *st);
/* RMQ_NODROP: could a message every subscriber takes go now? */
bool ps_log_room(struct rmq_socket *s, struct pub_state *st);
bool ps_log_flushed(struct pub_state *st);
/* Subscribers on the log. */
int  ps_log_count(const struct pub_state *st);
void ps_log_free(struct pub_state *st);

/* ---- SUB ---- */

struct ps_reader;

struct sub_peer {
	struct rmq_peer  *p;
	uint32_t          want;  /* the last frame sent to it */
	uint32_t          acked; /* the last frame it applied */
	struct ps_reader *rd;    /* reading its log (fanout.c), or NULL */
};

struct sub_state {
	struct prefixes   subs;
	uint32_t          seq;
	struct sub_peer **pubs; /* live publishers */
	int               npubs, cap;
	struct ps_reader *readers; /* every reader not yet freed */
};

/* fanout.c, subscriber side: a LOG frame from sp's publisher: 0 or
 * -RMQ_EPROTO. */
int  ps_reader_frame(struct rmq_socket *s, struct sub_state *st,
                     struct sub_peer *sp, const uint8_t *body, size_t len);
/* No read or write of sp's publisher's memory is under way (it said BYE:
 * nothing new starts). */
bool ps_reader_quiet(const struct sub_peer *sp);
/* sp's publisher is gone. */
void ps_reader_gone(struct sub_state *st, struct sub_peer *sp);
/* The socket is closing: no new read or write; true once none is under
 * way (a read the publisher serves lands in our memory). */
bool ps_readers_stop(struct sub_state *st);
/* The socket closed (its endpoint first): free every reader. */
void ps_readers_free(struct sub_state *st);

#endif /* RMQ_FANOUT_H */
