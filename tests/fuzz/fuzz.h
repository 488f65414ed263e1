/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_FUZZ_H
#define MODSIGN_FUZZ_H

/*
 * Shared by the libFuzzer targets in tests/fuzz.  Each target checks the
 * contract of the parser it drives (FUZZ_ASSERT aborts, so libFuzzer keeps
 * the input), not just that it does not crash.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

#define FUZZ_ASSERT(cond)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: contract broken: %s\n",        \
				__FILE__, __LINE__, #cond);                    \
			abort();                                               \
		}                                                              \
	} while (0)

/*
 * The tampered twin of "the fuzzers found nothing": with
 * MODSIGN_FUZZ_CANARY set, an input starting with "CANARY!" aborts, so
 * tests/fuzz/run-brief.sh can show that a crash would be caught.
 */
static inline void fuzz_canary(const uint8_t *data, size_t size)
{
	static int armed = -1;

	if (armed < 0)
		armed = getenv("MODSIGN_FUZZ_CANARY") != NULL;
	if (armed && size >= 7 && memcmp(data, "CANARY!", 7) == 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
