// TIRC_TEST_SANITIZED: defined when the code under test runs under a sanitizer (the ASan +
// UBSan CI job), where the interpreter is about 15 times slower and frames are larger, so
// tests take fewer seeds or smaller cases. The test drivers themselves are compiled without
// instrumentation (CMakeLists.txt), so the compiler's __SANITIZE_ADDRESS__ cannot tell them:
// CMake defines TIRC_SANITIZED for them.
#pragma once

#if defined(TIRC_SANITIZED) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TIRC_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TIRC_TEST_SANITIZED 1
#endif
#endif
