/* The pattern registry and compatibility rules. */
#include "pattern.h"

const struct rmq_pattern_ops *
rmq_pattern_find(int type)
{
	switch (type) {
	case RMQ_PAIR:
		return &rmq_pattern_pair;
	case RMQ_REQ:
		return &rmq_pattern_req;
	case RMQ_REP:
		return &rmq_pattern_rep;
	default:
		return NULL;
	}
}

bool
rmq_pattern_compatible(uint16_t ours, uint16_t theirs)
{
	switch (ours) {
	case RMQ_WIRE_PAIR:
		return theirs == RMQ_WIRE_PAIR;
	case RMQ_WIRE_REQ:
		return theirs == RMQ_WIRE_REP;
	case RMQ_WIRE_REP:
		return theirs == RMQ_WIRE_REQ;
	case RMQ_WIRE_PUB:
		return theirs == RMQ_WIRE_SUB;
	case RMQ_WIRE_SUB:
		return theirs == RMQ_WIRE_PUB;
	case RMQ_WIRE_PUSH:
		return theirs == RMQ_WIRE_PULL;
	case RMQ_WIRE_PULL:
		return theirs == RMQ_WIRE_PUSH;
	default:
		return false;
	}
}
