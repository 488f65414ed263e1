/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Arbitrary DER through pkcs7_verify_module() against a fixed certificate
 * and module body.  Input: one byte choosing the certificate (even: the
 * P-256 one, odd: the RSA-2048 one), then the DER.  The seeds in
 * corpus/pkcs7-verify are real signatures of FUZZ_BODY by these keys
 * (openssl cms -sign -binary -noattr -nocerts), so mutations start deep
 * inside a valid SignedData.  The private keys were thrown away.
 *
 * With MODSIGN_FUZZ_EXPECT=N set, an input whose result is not -N (0: it
 * verifies) aborts: tests/fuzz/run-brief.sh uses it to show that a seed
 * verifies and its tampered twin does not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/mman.h>
#include <unistd.h>

#include "digest.h"
#include "fuzz.h"
#include "pkcs7.h"

#define FUZZ_BODY "modsign fuzz body: a stand-in for a module\n"

static const char cert_ec[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBaTCCARCgAwIBAgIITW9kc2lnbgEwCgYIKoZIzj0EAwIwGzEZMBcGA1UEAwwQ\n"
	"bW9kc2lnbiBmdXp6IGtleTAgFw0yNjEyMDMwODAyNTRaGA8yMTI2MTEwOTA4MDI1\n"
	"NFowGzEZMBcGA1UEAwwQbW9kc2lnbiBmdXp6IGtleTBZMBMGByqGSM49AgEGCCqG\n"
	"SM49AwEHA0IABAZZgteZjakbrI8QrV8NGvefZ7DNLQeC3W6DqjIzR99oKgZCKIfU\n"
	"tuoHql6zAzRDtlA4/tEOP1pEOq0O3QTS4BSjPDA6MAwGA1UdEwEB/wQCMAAwCwYD\n"
	"VR0PBAQDAgeAMB0GA1UdDgQWBBQbFXOrXAmwc8eELor6wqRFIghmAzAKBggqhkjO\n"
	"PQQDAgNHADBEAiAyEkmrsDKZJxGaIWwaqK/ihsPujT20B9vSfcSUpuMUFwIgYqqf\n"
	"NQCj0VflJ2vlUHfEnFLoJw1OxJXqgk48wCtPvvQ=\n"
	"-----END CERTIFICATE-----\n"
;

static const char cert_rsa[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIC9jCCAd6gAwIBAgIITW9kc2lnbgIwDQYJKoZIhvcNAQELBQAwGzEZMBcGA1UE\n"
	"AwwQbW9kc2lnbiBmdXp6IGtleTAgFw0yNjEyMDMwODAyNTRaGA8yMTI2MTEwOTA4\n"
	"MDI1NFowGzEZMBcGA1UEAwwQbW9kc2lnbiBmdXp6IGtleTCCASIwDQYJKoZIhvcN\n"
	"AQEBBQADggEPADCCAQoCggEBALsrTIrfcABf72tq9r/0YM2659JE5Gd+fvpyU1oq\n"
	"FtkIUXtEgn9f/XhMd2LuNBqffmN6Umlr8g+6wzrdu7c+L11EUBDpQ1dYV5P8Kp1/\n"
	"dL95QHQO29nl7yTPMg7GD2lN4XpCv09sa/BHi3fGLOirdEWIbjif75rE/Uy7HpiW\n"
	"gksdojF5nUNnFz/NEUw7YjKmSysSaU6TCxNzlYxe8CHiANRPDmVnVCfggtnDDNmA\n"
	"FkFoFe1QxZxyG77xrv5HmIxqxdQFmQVb0d6eo3ZamB9w1Hca1l9XDBnp3/hzAZes\n"
	"jU4pCuCfc2NdONZbZT0G8YoWuldgCDQlfTU/vVrbiG4tVFUCAwEAAaM8MDowDAYD\n"
	"VR0TAQH/BAIwADALBgNVHQ8EBAMCB4AwHQYDVR0OBBYEFNsnit594Yutm58Pc6EO\n"
	"DOcCoO2OMA0GCSqGSIb3DQEBCwUAA4IBAQCmeHK/bPfA1B8ejdPUeELmtTfC6Jdr\n"
	"+VtMaRoXPTbY6AEDtufOdeRHrirUHYr7iqJBTVQj8fp783WasrVX36mnvWCuYNHk\n"
	"6ZuO9qcZ5jU/U6MWzvECvQ7VYMKBFNgvkXOmC5X480tYX4QMyJPWpnkRMzYTD3E/\n"
	"Y1C48Me4N7iI9y69rjtx/LdDMcgLf0MOGAm968tBNmi0LIgRWcwH/ZLyGhjeqd+f\n"
	"TJObyWZ7i+rmSSDrHo8AWCORTnhJKGQGIIlQNP9ydUlW5THBwQ60C8NfcbXClqWL\n"
	"d5QkP/VtxYaTGR6onf6BCY4nX23kezkBv16QjhpnDgZgVigJNNHlTlE/\n"
	"-----END CERTIFICATE-----\n"
;

static X509 *certs[2];
static int body_fd = -1;
static int expect = 1; /* 1: no expectation */

static X509 *load(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;

	BIO_free(b);
	return x;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc _unused_, char ***argv _unused_)
{
	const char *e = getenv("MODSIGN_FUZZ_EXPECT");

	certs[0] = load(cert_ec);
	certs[1] = load(cert_rsa);
	body_fd = memfd_create("fuzz-body", MFD_CLOEXEC);
	if (!certs[0] || !certs[1] || body_fd < 0 ||
	    write(body_fd, FUZZ_BODY, strlen(FUZZ_BODY)) != (ssize_t)strlen(FUZZ_BODY))
		abort();
	if (e)
		expect = -atoi(e);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *hash = NULL;
	int r;

	fuzz_canary(data, size);
	if (size < 1)
		return 0;
	r = pkcs7_verify_module(data + 1, size - 1, certs[data[0] & 1], body_fd,
				strlen(FUZZ_BODY), &hash);
	FUZZ_ASSERT(r == 0 || r == -EBADMSG || r == -EPROTO || r == -ENOPKG ||
		    r == -ENOKEY || r == -EKEYREJECTED || r == -ENOMEM);
	if (r == 0)
		FUZZ_ASSERT(hash && digest_lookup(hash) &&
			    strcmp(digest_name(digest_lookup(hash)), hash) == 0);
	/* Nothing may be left on OpenSSL's (per-thread) error queue: in the
	 * daemon's long-lived threads it would grow and mislead later logs. */
	FUZZ_ASSERT(ERR_peek_error() == 0);
	if (expect != 1)
		FUZZ_ASSERT(r == expect);
	return 0;
}
