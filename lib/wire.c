/* Encoding and validation of librmq's wire formats (see wire.h). */
#include <string.h>

#include "rmq.h"
#include "wire.h"

_Static_assert(RMQ_HDR_SIZE == 16, "fabric header is 16 bytes on the wire");
_Static_assert(RMQ_RTS_SIZE == 48, "RTS is 48 bytes on the wire");
_Static_assert(RMQ_CTRL_HDR_SIZE == 8, "control frame header is 8 bytes");
_Static_assert(2 + 1 + RMQ_PROVNAME_MAX + 4 + 4 + 8 + 4 + 4 + 2 + RMQ_ADDR_MAX <=
                   RMQ_CTRL_BODY_MAX,
               "a HELLO fits in one control frame");

static void
put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t) v;
	b[1] = (uint8_t) (v >> 8);
}

static void
put32(uint8_t *b, uint32_t v)
{
	put16(b, (uint16_t) v);
	put16(b + 2, (uint16_t) (v >> 16));
}

static void
put64(uint8_t *b, uint64_t v)
{
	put32(b, (uint32_t) v);
	put32(b + 4, (uint32_t) (v >> 32));
}

static uint16_t
get16(const uint8_t *b)
{
	return (uint16_t) (b[0] | (b[1] << 8));
}

static uint32_t
get32(const uint8_t *b)
{
	return (uint32_t) get16(b) | ((uint32_t) get16(b + 2) << 16);
}

static uint64_t
get64(const uint8_t *b)
{
	return (uint64_t) get32(b) | ((uint64_t) get32(b + 4) << 32);
}

void
rmq_hdr_encode(uint8_t *b, const struct rmq_hdr *h)
{
	b[0] = h->version;
	b[1] = h->type;
	put16(b + 2, h->credits);
	put32(b + 4, h->conn);
	put32(b + 8, h->msgid);
	put32(b + 12, h->len);
}

int
rmq_hdr_decode(struct rmq_hdr *h, const uint8_t *b, size_t len)
{
	uint8_t t;

	if (len < RMQ_HDR_SIZE)
		return -RMQ_EPROTO;
	h->version = b[0];
	h->type    = b[1];
	h->credits = get16(b + 2);
	h->conn    = get32(b + 4);
	h->msgid   = get32(b + 8);
	h->len     = get32(b + 12);
	if (h->version != RMQ_WIRE_VERSION)
		return -RMQ_EVERSION;
	t = h->type & RMQ_MT_MASK;
	switch (t) {
	case RMQ_MT_DATA:
		/* The completion length must match the header exactly. */
		if ((size_t) h->len != len - RMQ_HDR_SIZE)
			return -RMQ_EPROTO;
		break;
	case RMQ_MT_RTS:
		if (len != RMQ_RTS_SIZE || (h->type & RMQ_MT_F_INJECT) != 0 ||
		    h->len != 0)
			return -RMQ_EPROTO;
		break;
	case RMQ_MT_SEG:
		if (len < RMQ_SEG_HDR_SIZE ||
		    (size_t) h->len != len - RMQ_SEG_HDR_SIZE ||
		    (h->type & RMQ_MT_F_INJECT) != 0)
			return -RMQ_EPROTO;
		break;
	case RMQ_MT_GRANT:
		if (len != RMQ_RTS_SIZE || (h->type & RMQ_MT_F_INJECT) != 0 ||
		    h->len != 0)
			return -RMQ_EPROTO;
		break;
	case RMQ_MT_RING:
		/* In a ring slot: the caller checks len against the slots. */
		if (len < RMQ_HDR_SIZE || (h->type & RMQ_MT_F_INJECT) != 0)
			return -RMQ_EPROTO;
		break;
	case RMQ_MT_FIN:
	case RMQ_MT_CREDIT:
	case RMQ_MT_CTS:
	case RMQ_MT_RCREDIT:
	case RMQ_MT_ABORT:
		if (len != RMQ_HDR_SIZE)
			return -RMQ_EPROTO;
		break;
	default:
		return -RMQ_EPROTO;
	}
	return 0;
}

void
rmq_rts_encode(uint8_t *b, const struct rmq_rts *r)
{
	put64(b, r->len);
	put64(b + 8, r->raddr);
	put64(b + 16, r->rkey);
	put32(b + 24, r->cookie);
	put32(b + 28, r->flags);
}

int
rmq_rts_decode(struct rmq_rts *r, const uint8_t *b)
{
	r->len    = get64(b);
	r->raddr  = get64(b + 8);
	r->rkey   = get64(b + 16);
	r->cookie = get32(b + 24);
	r->flags  = get32(b + 28);
	if ((r->flags & ~(RMQ_RTS_F_SEND | RMQ_RTS_F_WRITE)) != 0 ||
	    r->flags == (RMQ_RTS_F_SEND | RMQ_RTS_F_WRITE))
		return -RMQ_EPROTO;
	return 0;
}

void
rmq_seg_encode(uint8_t *b, uint64_t total)
{
	put64(b, total);
}

uint64_t
rmq_seg_decode(const uint8_t *b)
{
	return get64(b);
}

static size_t
ctrl_frame(uint8_t *b, int kind, size_t body_len)
{
	memcpy(b, RMQ_CTRL_MAGIC, 4);
	b[4] = RMQ_WIRE_VERSION;
	b[5] = (uint8_t) kind;
	put16(b + 6, (uint16_t) body_len);
	return RMQ_CTRL_HDR_SIZE + body_len;
}

size_t
rmq_ctrl_encode_hello(uint8_t *b, const struct rmq_hello *h)
{
	uint8_t *p = b + RMQ_CTRL_HDR_SIZE;
	size_t   pl = strnlen(h->prov, RMQ_PROVNAME_MAX - 1);

	put16(p, h->pattern);
	p += 2;
	*p++ = (uint8_t) pl;
	memcpy(p, h->prov, pl);
	p += pl;
	put32(p, h->conn);
	put32(p + 4, h->rcvhwm);
	put64(p + 8, h->maxmsg);
	put32(p + 16, h->features);
	put32(p + 20, h->eager_max);
	put16(p + 24, h->addr_len);
	p += 26;
	memcpy(p, h->addr, h->addr_len);
	p += h->addr_len;
	if (h->features & RMQ_FEAT_RING) {
		put64(p, h->ring_addr);
		put64(p + 8, h->ring_key);
		put32(p + 16, h->ring_slots);
		put32(p + 20, h->ring_slot_size);
		p += 24;
	}
	return ctrl_frame(b, RMQ_CK_HELLO,
	                  (size_t) (p - b) - RMQ_CTRL_HDR_SIZE);
}

size_t
rmq_ctrl_encode_reject(uint8_t *b, const struct rmq_reject *r)
{
	size_t rl = strnlen(r->reason, sizeof(r->reason) - 1);

	put32(b + RMQ_CTRL_HDR_SIZE, r->code);
	memcpy(b + RMQ_CTRL_HDR_SIZE + 4, r->reason, rl);
	return ctrl_frame(b, RMQ_CK_REJECT, 4 + rl);
}

size_t
rmq_ctrl_encode_bye(uint8_t *b, uint64_t sent)
{
	put64(b + RMQ_CTRL_HDR_SIZE, sent);
	return ctrl_frame(b, RMQ_CK_BYE, 8);
}

size_t
rmq_ctrl_encode_bye_ack(uint8_t *b)
{
	return ctrl_frame(b, RMQ_CK_BYE_ACK, 0);
}

int
rmq_ctrl_decode_hdr(const uint8_t *b, int *kind, size_t *body_len)
{
	if (memcmp(b, RMQ_CTRL_MAGIC, 4) != 0)
		return -RMQ_EPROTO;
	if (b[4] != RMQ_WIRE_VERSION)
		return -RMQ_EVERSION;
	*kind     = b[5];
	*body_len = get16(b + 6);
	if (*body_len > RMQ_CTRL_BODY_MAX)
		return -RMQ_EPROTO;
	if (*kind < RMQ_CK_HELLO || *kind > RMQ_CK_BYE_ACK)
		return -RMQ_EPROTO;
	return 0;
}

int
rmq_ctrl_decode_hello(struct rmq_hello *h, const uint8_t *body, size_t len)
{
	const uint8_t *p = body, *end = body + len;
	size_t         pl;

	memset(h, 0, sizeof(*h));
	if (end - p < 3)
		return -RMQ_EPROTO;
	h->pattern = get16(p);
	pl         = p[2];
	p += 3;
	if (pl == 0 || pl >= RMQ_PROVNAME_MAX || (size_t) (end - p) < pl)
		return -RMQ_EPROTO;
	memcpy(h->prov, p, pl);
	if (memchr(h->prov, '\0', pl) != NULL)
		return -RMQ_EPROTO;
	p += pl;
	if (end - p < 26)
		return -RMQ_EPROTO;
	h->conn      = get32(p);
	h->rcvhwm    = get32(p + 4);
	h->maxmsg    = get64(p + 8);
	h->features  = get32(p + 16);
	h->eager_max = get32(p + 20);
	h->addr_len  = get16(p + 24);
	p += 26;
	if ((h->features & ~RMQ_FEAT_KNOWN) != 0 || h->addr_len == 0 ||
	    h->addr_len > RMQ_ADDR_MAX ||
	    (size_t) (end - p) !=
	        h->addr_len + ((h->features & RMQ_FEAT_RING) ? 24u : 0u))
		return -RMQ_EPROTO;
	memcpy(h->addr, p, h->addr_len);
	p += h->addr_len;
	if (h->features & RMQ_FEAT_RING) {
		h->ring_addr      = get64(p);
		h->ring_key       = get64(p + 8);
		h->ring_slots     = get32(p + 16);
		h->ring_slot_size = get32(p + 20);
		if (h->ring_slots < 4 || h->ring_slots > RMQ_RING_SLOTS_MAX ||
		    h->ring_slot_size < 64 || h->ring_slot_size > (1u << 20))
			return -RMQ_EPROTO;
	}
	if (h->rcvhwm == 0)
		return -RMQ_EPROTO;
	return 0;
}

int
rmq_ctrl_decode_reject(struct rmq_reject *r, const uint8_t *body, size_t len)
{
	size_t rl;

	memset(r, 0, sizeof(*r));
	if (len < 4)
		return -RMQ_EPROTO;
	r->code = get32(body);
	rl      = len - 4;
	if (rl > sizeof(r->reason) - 1)
		rl = sizeof(r->reason) - 1;
	memcpy(r->reason, body + 4, rl);
	return 0;
}

int
rmq_ctrl_decode_bye(uint64_t *sent, const uint8_t *body, size_t len)
{
	if (len != 8)
		return -RMQ_EPROTO;
	*sent = get64(body);
	return 0;
}
