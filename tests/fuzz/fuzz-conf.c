/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The configuration file format (lib/conf.h) through conf_parse_buf():
 * every setting handed to the callback is a valid key and a trimmed value
 * of one line; a refused file names its line.
 */
#include <ctype.h>
#include <errno.h>

#include "conf.h"
#include "fuzz.h"

struct seen {
	unsigned settings;
};

static int setting(const char *key, const char *value, void *userdata)
{
	struct seen *s = userdata;
	size_t kl = strlen(key), vl = strlen(value);

	FUZZ_ASSERT(kl > 0 && kl <= CONF_MAX_LINE && vl <= CONF_MAX_LINE);
	for (const char *k = key; *k; k++)
		FUZZ_ASSERT(islower((unsigned char)*k) || isdigit((unsigned char)*k) ||
			    *k == '-');
	FUZZ_ASSERT(!strchr(value, '\n'));
	if (vl)
		FUZZ_ASSERT(!isspace((unsigned char)value[0]) &&
			    !isspace((unsigned char)value[vl - 1]));
	s->settings++;
	/* A callback's refusal stops the parse and is passed back. */
	return strcmp(key, "stop") == 0 ? -ENOTRECOVERABLE : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen s = { 0 };
	unsigned line = 0, lines = 1;
	int r;

	fuzz_canary(data, size);
	if (size > CONF_MAX_FILE)
		return 0;
	r = conf_parse_buf((const char *)data, size, setting, &s, &line);
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	FUZZ_ASSERT(r == 0 || r == -EBADMSG || r == -ENOTRECOVERABLE);
	if (r == 0)
		FUZZ_ASSERT(line == 0 && s.settings <= lines);
	else
		FUZZ_ASSERT((line >= 1 && line <= lines) ||
			    (r == -EBADMSG && line == 0 && memchr(data, '\0', size)));
	return 0;
}
