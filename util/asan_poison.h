// MVKV_ASAN is defined when AddressSanitizer is on; MVKV_POISON and
// MVKV_UNPOISON mark a region of memory a pool or arena owns as off limits
// (free) or usable again, so that AddressSanitizer reports a use of a freed
// node as it would for the heap. Without it they do nothing.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define MVKV_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MVKV_ASAN 1
#endif
#endif

#ifdef MVKV_ASAN
#include <sanitizer/asan_interface.h>
#define MVKV_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define MVKV_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define MVKV_POISON(p, n) ((void)(p), (void)(n))
#define MVKV_UNPOISON(p, n) ((void)(p), (void)(n))
#endif
