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

void
rmq_hdr_encode(uint8_t *b, const struct rmq_hdr *h)
{
	b[0] = h->version;
	b[1] = h->type;
	rmq_put16(b + 2, h->credits);
	rmq_put32(b + 4, h->conn);
	rmq_put32(b + 8, h->msgid);
	rmq_put32(b + 12, h->len);
}

int
rmq_hdr_decode(struct rmq_hdr *h, const uint8_t *b, size_t len)
{
	uint8_t t;

	if (len < RMQ_HDR_SIZE)
		return -RMQ_EPROTO;
	h->version = b[0];
	h->type    = b[1];
	h->credits = rmq_get16(b + 2);
	h->conn    = rmq_get32(b + 4);
	h->msgid   = rmq_get32(b + 8);
	h->len     = rmq_get32(b + 12);
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
	case RMQ_MT_HELP:
		if (len != RMQ_RTS_SIZE || (h->type & RMQ_MT_F_INJECT) != 0 ||
		    h->len != 0)
			return -RMQ_EPROTO;
		break;
	case RMQ_MT_BATCH:
		/* The items are checked where they are taken (batch.c). */
		if ((size_t) h->len != len - RMQ_HDR_SIZE || h->msgid == 0 ||
		    (h->type & RMQ_MT_F_INJECT) != 0)
			return -RMQ_EPROTO;
		break;
	case RMQ_MT_RING:
		/* In a ring slot: the caller checks len against the slots. */
		if (len < RMQ_HDR_SIZE || (h->type & RMQ_MT_F_INJECT) != 0)
			return -RMQ_EPROTO;
		break;
	case RMQ_MT_RBATCH:
		/* As RING; the items are checked where they are taken. */
		if (len < RMQ_HDR_SIZE || (h->type & RMQ_MT_F_INJECT) != 0 ||
		    h->msgid == 0)
			return -RMQ_EPROTO;
		break;
	case RMQ_MT_FIN:
	case RMQ_MT_CREDIT:
	case RMQ_MT_CTS:
	case RMQ_MT_RCREDIT:
	case RMQ_MT_ABORT:
	case RMQ_MT_HELPED:
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
	rmq_put64(b, r->len);
	rmq_put64(b + 8, r->raddr);
	rmq_put64(b + 16, r->rkey);
	rmq_put32(b + 24, r->cookie);
	rmq_put32(b + 28, r->flags);
}

int
rmq_rts_decode(struct rmq_rts *r, const uint8_t *b)
{
	uint32_t way;

	r->len    = rmq_get64(b);
	r->raddr  = rmq_get64(b + 8);
	r->rkey   = rmq_get64(b + 16);
	r->cookie = rmq_get32(b + 24);
	r->flags  = rmq_get32(b + 28);
	way       = r->flags & ~RMQ_RTS_F_SHARE;
	/* One way of moving the payload, or none (read); SHARE with CMA
	 * only. */
	if ((way & ~(RMQ_RTS_F_SEND | RMQ_RTS_F_WRITE | RMQ_RTS_F_CMA)) != 0 ||
	    (way & (way - 1)) != 0 ||
	    ((r->flags & RMQ_RTS_F_SHARE) && way != RMQ_RTS_F_CMA))
		return -RMQ_EPROTO;
	return 0;
}

void
rmq_seg_encode(uint8_t *b, uint64_t total)
{
	rmq_put64(b, total);
}

uint64_t
rmq_seg_decode(const uint8_t *b)
{
	return rmq_get64(b);
}

static size_t
ctrl_frame(uint8_t *b, int kind, size_t body_len)
{
	memcpy(b, RMQ_CTRL_MAGIC, 4);
	b[4] = RMQ_WIRE_VERSION;
	b[5] = (uint8_t) kind;
	rmq_put16(b + 6, (uint16_t) body_len);
	return RMQ_CTRL_HDR_SIZE + body_len;
}

size_t
rmq_ctrl_encode_hello(uint8_t *b, const struct rmq_hello *h)
{
	uint8_t *p = b + RMQ_CTRL_HDR_SIZE;
	size_t   pl = strnlen(h->prov, RMQ_PROVNAME_MAX - 1);

	rmq_put16(p, h->pattern);
	p += 2;
	*p++ = (uint8_t) pl;
	memcpy(p, h->prov, pl);
	p += pl;
	rmq_put32(p, h->conn);
	rmq_put32(p + 4, h->rcvhwm);
	rmq_put64(p + 8, h->maxmsg);
	rmq_put32(p + 16, h->features);
	rmq_put32(p + 20, h->eager_max);
	rmq_put16(p + 24, h->addr_len);
	p += 26;
	memcpy(p, h->addr, h->addr_len);
	p += h->addr_len;
	if (h->features & RMQ_FEAT_RING) {
		rmq_put64(p, h->ring_addr);
		rmq_put64(p + 8, h->ring_key);
		rmq_put32(p + 16, h->ring_slots);
		rmq_put32(p + 20, h->ring_slot_size);
		p += 24;
	}
	if (h->features & RMQ_FEAT_LOCAL) {
		memcpy(p, h->host, 16);
		rmq_put64(p + 16, h->host_name);
		rmq_put32(p + 24, h->uid);
		rmq_put32(p + 28, h->pid);
		rmq_put32(p + 32, h->lfd);
		rmq_put32(p + 36, h->lefd);
		rmq_put32(p + 40, h->lsize);
		rmq_put32(p + 44, h->lflags);
		rmq_put64(p + 48, h->lnonce);
		p += RMQ_LOCAL_HELLO_SIZE;
	}
	if (h->features & RMQ_FEAT_RID) {
		*p++ = h->rid_len;
		memcpy(p, h->rid, h->rid_len);
		p += h->rid_len;
	}
	return ctrl_frame(b, RMQ_CK_HELLO,
	                  (size_t) (p - b) - RMQ_CTRL_HDR_SIZE);
}

size_t
rmq_ctrl_encode_reject(uint8_t *b, const struct rmq_reject *r)
{
	size_t rl = strnlen(r->reason, sizeof(r->reason) - 1);

	rmq_put32(b + RMQ_CTRL_HDR_SIZE, r->code);
	memcpy(b + RMQ_CTRL_HDR_SIZE + 4, r->reason, rl);
	return ctrl_frame(b, RMQ_CK_REJECT, 4 + rl);
}

size_t
rmq_ctrl_encode_bye(uint8_t *b, uint64_t sent, uint64_t took)
{
	rmq_put64(b + RMQ_CTRL_HDR_SIZE, sent);
	if (took == RMQ_BYE_NO_TOOK)
		return ctrl_frame(b, RMQ_CK_BYE, 8);
	rmq_put64(b + RMQ_CTRL_HDR_SIZE + 8, took);
	return ctrl_frame(b, RMQ_CK_BYE, 16);
}

size_t
rmq_ctrl_encode_bye_ack(uint8_t *b)
{
	return ctrl_frame(b, RMQ_CK_BYE_ACK, 0);
}

size_t
rmq_ctrl_encode_auth(uint8_t *b, const uint8_t nonce[RMQ_AUTH_NONCE],
                     const uint8_t mac[RMQ_AUTH_MAC])
{
	memcpy(b + RMQ_CTRL_HDR_SIZE, nonce, RMQ_AUTH_NONCE);
	memcpy(b + RMQ_CTRL_HDR_SIZE + RMQ_AUTH_NONCE, mac, RMQ_AUTH_MAC);
	return ctrl_frame(b, RMQ_CK_AUTH, RMQ_AUTH_NONCE + RMQ_AUTH_MAC);
}

size_t
rmq_ctrl_encode_pat(uint8_t *b, const uint8_t *body, size_t len)
{
	memcpy(b + RMQ_CTRL_HDR_SIZE, body, len);
	return ctrl_frame(b, RMQ_CK_PAT, len);
}

int
rmq_ctrl_decode_hdr(const uint8_t *b, int *kind, size_t *body_len)
{
	if (memcmp(b, RMQ_CTRL_MAGIC, 4) != 0)
		return -RMQ_EPROTO;
	if (b[4] != RMQ_WIRE_VERSION)
		return -RMQ_EVERSION;
	*kind     = b[5];
	*body_len = rmq_get16(b + 6);
	if (*body_len > RMQ_CTRL_BODY_MAX)
		return -RMQ_EPROTO;
	if (*kind < RMQ_CK_HELLO || *kind > RMQ_CK_AUTH)
		return -RMQ_EPROTO;
	return 0;
}

int
rmq_ctrl_decode_hello(struct rmq_hello *h, const uint8_t *body, size_t len)
{
	const uint8_t *p = body, *end = body + len;
	size_t         pl, fixed;

	memset(h, 0, sizeof(*h));
	if (end - p < 3)
		return -RMQ_EPROTO;
	h->pattern = rmq_get16(p);
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
	h->conn      = rmq_get32(p);
	h->rcvhwm    = rmq_get32(p + 4);
	h->maxmsg    = rmq_get64(p + 8);
	h->features  = rmq_get32(p + 16);
	h->eager_max = rmq_get32(p + 20);
	h->addr_len  = rmq_get16(p + 24);
	p += 26;
	if ((h->features & ~RMQ_FEAT_KNOWN) != 0 || h->addr_len == 0 ||
	    h->addr_len > RMQ_ADDR_MAX)
		return -RMQ_EPROTO;
	fixed = h->addr_len + ((h->features & RMQ_FEAT_RING) ? 24u : 0u) +
	        ((h->features & RMQ_FEAT_LOCAL) ? RMQ_LOCAL_HELLO_SIZE : 0u);
	/* The routing id last: its length byte says how long it is. */
	if (h->features & RMQ_FEAT_RID) {
		if ((size_t) (end - p) <= fixed)
			return -RMQ_EPROTO;
		h->rid_len = p[fixed];
		if (h->rid_len == 0 ||
		    (size_t) (end - p) != fixed + 1 + h->rid_len)
			return -RMQ_EPROTO;
		memcpy(h->rid, p + fixed + 1, h->rid_len);
	} else if ((size_t) (end - p) != fixed) {
		return -RMQ_EPROTO;
	}
	memcpy(h->addr, p, h->addr_len);
	p += h->addr_len;
	if (h->features & RMQ_FEAT_RING) {
		h->ring_addr      = rmq_get64(p);
		h->ring_key       = rmq_get64(p + 8);
		h->ring_slots     = rmq_get32(p + 16);
		h->ring_slot_size = rmq_get32(p + 20);
		if (h->ring_slots < 4 || h->ring_slots > RMQ_RING_SLOTS_MAX ||
		    h->ring_slot_size < 64 || h->ring_slot_size > (1u << 20))
			return -RMQ_EPROTO;
		p += 24;
	}
	if (h->features & RMQ_FEAT_LOCAL) {
		memcpy(h->host, p, 16);
		h->host_name = rmq_get64(p + 16);
		h->uid       = rmq_get32(p + 24);
		h->pid       = rmq_get32(p + 28);
		h->lfd       = rmq_get32(p + 32);
		h->lefd      = rmq_get32(p + 36);
		h->lsize     = rmq_get32(p + 40);
		h->lflags    = rmq_get32(p + 44);
		h->lnonce    = rmq_get64(p + 48);
		/* The ring's size is checked against the segment when it is
		 * mapped (link/local.c); these only bound the numbers. */
		if ((h->lflags & ~(RMQ_LOCAL_F_MAPPED | RMQ_LOCAL_F_SHARE)) != 0 ||
		    (h->lfd != 0 && (h->lsize < (64u << 10) ||
		                     h->lsize > (64u << 20) ||
		                     (h->lsize & (h->lsize - 1)) != 0)))
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
	r->code = rmq_get32(body);
	rl      = len - 4;
	if (rl > sizeof(r->reason) - 1)
		rl = sizeof(r->reason) - 1;
	memcpy(r->reason, body + 4, rl);
	return 0;
}

int
rmq_ctrl_decode_bye(uint64_t *sent, uint64_t *took, const uint8_t *body,
                    size_t len)
{
	if (len != 8 && len != 16)
		return -RMQ_EPROTO;
	*sent = rmq_get64(body);
	*took = len == 16 ? rmq_get64(body + 8) : RMQ_BYE_NO_TOOK;
	return 0;
}

int
rmq_ctrl_decode_auth(uint8_t nonce[RMQ_AUTH_NONCE], uint8_t mac[RMQ_AUTH_MAC],
                     const uint8_t *body, size_t len)
{
	if (len != RMQ_AUTH_NONCE + RMQ_AUTH_MAC)
		return -RMQ_EPROTO;
	memcpy(nonce, body, RMQ_AUTH_NONCE);
	memcpy(mac, body + RMQ_AUTH_NONCE, RMQ_AUTH_MAC);
	return 0;
}

int
rmq_batch_check(const uint8_t *b, size_t len, uint32_t count, uint32_t *found)
{
	size_t   off = 0, n, item;
	uint32_t i;

	for (i = 0; i < count; i++, off += item) {
		if (len - off < RMQ_BATCH_ITEM_HDR)
			break;
		n    = rmq_get32(b + off);
		item = rmq_batch_item_size(n);
		if (n > RMQ_BATCH_ITEM_MAX || item > len - off)
			break;
	}
	*found = i;
	return i == count && off == len ? 0 : -RMQ_EPROTO;
}
