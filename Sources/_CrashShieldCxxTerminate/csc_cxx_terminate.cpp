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

namespace {

std::atomic<std::terminate_handler> previous_handler{nullptr};
std::atomic<bool> terminating{false};

// The exception's type as the C++ runtime names it, demangled into `buffer`; the mangled name
// when demangling fails; "" without an active exception.
const char *current_type_name(char *&demangled) {
    const std::type_info *type = abi::__cxa_current_exception_type();
    if (type == nullptr) return "";
    const char *mangled = type->name();
    if (mangled == nullptr) return "";
    if (*mangled == '*') mangled++;  // libstdc++ marks some local types with a leading '*'
    int status = 0;
    demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    return status == 0 && demangled != nullptr ? demangled : mangled;
}

[[noreturn]] void terminate_handler() {
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
    if (std::get_terminate() == terminate_handler) return true;
    std::terminate_handler previous = std::set_terminate(terminate_handler);
    if (previous != terminate_handler) previous_handler.store(previous);
    return std::get_terminate() == terminate_handler;
}
