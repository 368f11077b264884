/*
 * What the libFuzzer targets of tests/fuzz/ share.  Each target feeds the
 * fuzzer's bytes to librmq's real decoders (linked from rmq_internal) and
 * checks what a decoder accepted: it re-encodes it with the real encoder
 * and decodes that again, and the two results must agree.  A mismatch is
 * a bug like a crash: FUZZ_CHECK prints it and aborts, and libFuzzer
 * saves the input (crash-<sha1>) for the reproducer.
 */
#ifndef RMQ_FUZZ_H
#define RMQ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond, ...)                                                \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: check failed: %s: ",         \
			        __FILE__, __LINE__, #cond);                  \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
			abort();                                             \
		}                                                            \
	} while (0)

/* A copy of exactly len bytes on the heap, so that ASan catches a read
 * past the end of what the fuzzer gave. */
static inline uint8_t *
dup_exact(const uint8_t *src, size_t len)
{
	uint8_t *p = malloc(len > 0 ? len : 1);

	FUZZ_CHECK(p != NULL, "out of memory");
	if (len > 0)
		memcpy(p, src, len);
	return p;
}

#endif /* RMQ_FUZZ_H */
