// csc_cxx_terminate.cpp — the terminate handler that names an uncaught C++ exception
// (csc_cxx_terminate.h). Uses only the C++ standard library and the Itanium C++ ABI
// (<cxxabi.h>: libstdc++ on Linux, libc++abi on Apple), no Objective-C.
#include "csc_cxx_terminate.h"

#include <atomic>
#include <cstdlib>
#include <cxxabi.h>
#include <exception>
#include <typeinfo>

#include "csc_capture.h"

// The handler's code has a section of its own, so that capture can tell its frame (between
// std::terminate and abort on every uncaught exception's stack) from the app's: frames in it are
// written with "sdk": true (csc_add_sdk_code_range) and events mark them not in-app.
#if defined(__ELF__)
#define CSC_CXX_SDK_CODE __attribute__((section("csc_cxx_sdk_code"), noinline))
extern "C" const char __start_csc_cxx_sdk_code[] __attribute__((weak, visibility("hidden")));
extern "C" const char __stop_csc_cxx_sdk_code[] __attribute__((weak, visibility("hidden")));
#define CSC_CXX_SDK_CODE_START __start_csc_cxx_sdk_code
#define CSC_CXX_SDK_CODE_END __stop_csc_cxx_sdk_code
#elif defined(__MACH__) && defined(__APPLE__)
#define CSC_CXX_SDK_CODE __attribute__((section("__TEXT,__cs_cxx_sdk,regular,pure_instructions"), noinline))
extern "C" const char csc_cxx_sdk_code_start[] __asm("section$start$__TEXT$__cs_cxx_sdk");
extern "C" const char csc_cxx_sdk_code_end[] __asm("section$end$__TEXT$__cs_cxx_sdk");
#define CSC_CXX_SDK_CODE_START csc_cxx_sdk_code_start
#define CSC_CXX_SDK_CODE_END csc_cxx_sdk_code_end
#else
#define CSC_CXX_SDK_CODE
#define CSC_CXX_SDK_CODE_START ((const char *)nullptr)
#define CSC_CXX_SDK_CODE_END ((const char *)nullptr)
#endif

namespace {

std::atomic<std::terminate_handler> previous_handler{nullptr};
std::atomic<bool> terminating{false};

// The exception's type as the C++ runtime names it, demangled into `buffer`; the mangled name
// when demangling fails; "" without an active exception.
CSC_CXX_SDK_CODE const char *current_type_name(char *&demangled) {
    const std::type_info *type = abi::__cxa_current_exception_type();
    if (type == nullptr) return "";
    const char *mangled = type->name();
    if (mangled == nullptr) return "";
    if (*mangled == '*') mangled++;  // libstdc++ marks some local types with a leading '*'
    int status = 0;
    demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    return status == 0 && demangled != nullptr ? demangled : mangled;
}

[[noreturn]] CSC_CXX_SDK_CODE void terminate_handler() {
    // A second terminate (another thread, or an exception thrown while noting) goes straight on.
    if (!terminating.exchange(true)) {
        char *demangled = nullptr;
        const char *name = current_type_name(demangled);
        const char *what = "";
        if (std::exception_ptr current = std::current_exception()) {
            try {
                std::rethrow_exception(current);
            } catch (const std::exception &exception) {
                what = exception.what();
                csc_note_cxx_exception(name, what != nullptr ? what : "");
            } catch (...) {
                csc_note_cxx_exception(name, "");
            }
        } else {
            csc_note_cxx_exception("", "std::terminate called without an active exception");
        }
        std::free(demangled);
    }
    std::terminate_handler previous = previous_handler.load();
    if (previous != nullptr) previous();
    std::abort();
}

}  // namespace

extern "C" bool csc_cxx_install_terminate_handler(void) {
    const char *start = CSC_CXX_SDK_CODE_START, *end = CSC_CXX_SDK_CODE_END;
    if (start != nullptr && start < end) {
        csc_add_sdk_code_range(reinterpret_cast<uintptr_t>(start), reinterpret_cast<uintptr_t>(end));
    }
    if (std::get_terminate() == terminate_handler) return true;
    std::terminate_handler previous = std::set_terminate(terminate_handler);
    if (previous != terminate_handler) previous_handler.store(previous);
    return std::get_terminate() == terminate_handler;
}
