/*
 * PUB/SUB's topics: a set of subscribed prefixes, matching a message
 * against it, and the pattern frames a SUB and its publishers exchange
 * (their ops: pubsub.c's header comment, and fanout.c for LOG).  Both the
 * pattern (pubsub.c) and its log (fanout.c, fanout_read.c) match and
 * frame; neither calls the other for it.  Private to patterns/.
 */
#ifndef RMQ_TOPICS_H
#define RMQ_TOPICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Control frames (RMQ_CK_PAT bodies): u8 op | u32 seq | body. */
#define SUB_OP_SUBSCRIBE   1 /* SUB -> PUB: prefix */
#define SUB_OP_UNSUBSCRIBE 2 /* SUB -> PUB: prefix */
#define SUB_OP_SYNC        3 /* SUB -> PUB: the connect-time ones are in */
#define SUB_OP_ACK         4 /* PUB -> SUB: every frame up to seq applied */
#define SUB_OP_LOG         5 /* PUB -> SUB: read my log (fanout.c) */

#define SUB_FRAME_HDR      5    /* op + seq */
#define SUB_PREFIX_MAX     1000 /* bytes in one prefix */

struct prefix {
	uint8_t *b;
	size_t   len;
	uint32_t count; /* SUB: times subscribed */
};

struct prefixes {
	struct prefix *v;
	int            n, cap;
	int            nall; /* of length 0: everything matches */
};

/* The index of exactly this prefix, or -1. */
int  ps_prefix_find(const struct prefixes *ps, const uint8_t *b, size_t len);
/* Add a copy (count 1): 0 or -RMQ_ENOMEM. */
int  ps_prefix_add(struct prefixes *ps, const uint8_t *b, size_t len);
/* Remove the one at index i (the last takes its place). */
void ps_prefix_del(struct prefixes *ps, int i);
/* Remove them all; ps is empty and may be used again. */
void ps_prefixes_free(struct prefixes *ps);
/* Does some prefix of ps begin the message b? */
bool ps_match(const struct prefixes *ps, const uint8_t *b, size_t len);
/* Write the frame op | seq | body (len bytes) into b: its length. */
size_t ps_frame(uint8_t *b, int op, uint32_t seq, const void *body,
                size_t len);

#endif /* RMQ_TOPICS_H */
