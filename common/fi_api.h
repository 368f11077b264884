/*
 * The libfabric API version every fi_getinfo of librmq, its tools and its
 * tests asks for: the one its headers were built with (1.17 on Debian 12,
 * 2.1 on Debian 13), lowered to the one the library it runs on offers.
 * libfabric keeps the soname libfabric.so.1 from 1.x to 2.x, so a program
 * built on 2.x headers may meet a 1.x library, which refuses a version
 * newer than itself.  Asking for 2.x also tells the providers the caller
 * knows 2.0's rules (no FI_MR_BASIC, FI_LOCAL_MR or FI_MR_UNSPEC; lib/caps.c
 * reads the 1.x spellings only where the headers still have them).
 * Supported and tested: docs/INTERNALS.md, "libfabric versions".
 */
#ifndef RMQ_FI_API_H
#define RMQ_FI_API_H

#include <stdint.h>

#include <rdma/fabric.h>

/* 1.x spellings of memory-registration modes (FI_MR_BASIC, FI_LOCAL_MR):
 * deprecated in 2.x's headers and never reported under its API. */
#define RMQ_FI_LEGACY_MR (FI_MAJOR_VERSION < 2)

static inline uint32_t
rmq_fi_api(void)
{
	uint32_t built = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
	uint32_t runs  = fi_version();

	return runs < built ? runs : built;
}

#endif
