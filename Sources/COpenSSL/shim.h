#ifndef EXOSPHERE_COPENSSL_SHIM_H
#define EXOSPHERE_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#endif
