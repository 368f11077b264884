/*
 * Patterns: each is a const ops table over the engine (struct
 * rmq_pattern_ops in rmq_int.h), as nng's protocols are.
 *
 * Wire ids, sent in the handshake (peers must be compatible):
 *
 *   0x10 pair   <-> pair
 *   0x20 pub    <-> 0x21 sub    (not yet implemented)
 *   0x30 req    <-> 0x31 rep
 *   0x50 push   <-> 0x51 pull   (not yet implemented)
 */
#ifndef RMQ_PATTERN_H
#define RMQ_PATTERN_H

#include "rmq_int.h"

#define RMQ_WIRE_PAIR 0x10
#define RMQ_WIRE_PUB  0x20
#define RMQ_WIRE_SUB  0x21
#define RMQ_WIRE_REQ  0x30
#define RMQ_WIRE_REP  0x31
#define RMQ_WIRE_PUSH 0x50
#define RMQ_WIRE_PULL 0x51

extern const struct rmq_pattern_ops rmq_pattern_pair;
extern const struct rmq_pattern_ops rmq_pattern_req;
extern const struct rmq_pattern_ops rmq_pattern_rep;

#endif /* RMQ_PATTERN_H */
