/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_ATTACH_H
#define MODSIGN_CLIENT_ATTACH_H

/*
 * A detached signature, made where the key is (sign --detached, sign-file
 * -d), put into its module where the package is built: for attach, and
 * for sign-file -s.  Nothing is appended unchecked: the signature must
 * first verify over this very module with the certificate, by the
 * kernel's rules.  Every failure is one line on stderr naming the module
 * (or signature file) and why; the module is then as it was.
 */

#include <stddef.h>
#include <stdint.h>

#include <openssl/x509.h>

#include "digest.h"

struct attach_pin {
	X509 *cert;              /* what each signature must verify with */
	const char *cert_path;   /* its file, for messages */
	const struct digest *md; /* NULL: any hash the kernel takes */
};

/* @pin's certificate from the file @path (a reference the caller frees);
 * 0 or -errno, said. */
int attach_pin_load(struct attach_pin *pin, const char *path);

/*
 * The signature file @name in the directory @dirfd (AT_FDCWD: @name is a
 * path; @path names it in messages): a regular file, not reached through
 * a link, neither empty nor larger than a module trailer holds.  A new
 * buffer in *@ret of *@ret_len bytes, or -errno.
 */
int attach_read_sig(int dirfd, const char *name, const char *path, uint8_t **ret,
		    size_t *ret_len);

/*
 * Verify @sig (@len bytes) over @module with @pin, then write it in, at
 * @dest (NULL: in place, an old signature replaced): untouched or
 * completely signed, never half-written (modfile_write()).  0 or -errno.
 */
int attach_module(const struct attach_pin *pin, const char *module, const char *dest,
		  const uint8_t *sig, size_t len);

#endif
