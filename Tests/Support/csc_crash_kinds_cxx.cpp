// csc_crash_kinds_cxx.cpp — crash kinds that end in std::terminate, for `shield crash` and the
// tests (csc_test_support.h). Each function names the app-like frame a report must show.
#include "csc_test_support.h"

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

namespace crashshield_test {

// An app's own exception type that does not derive from std::exception.
struct PaymentDeclined {
    int code;
};

__attribute__((noinline)) void checkout_total(int items) {
    throw std::out_of_range("cart index " + std::to_string(items) + " beyond 3 items");
}

__attribute__((noinline)) void charge_card(int cents) {
    throw PaymentDeclined{cents};
}

__attribute__((noinline)) void print_receipt(int copies) {
    if (copies > 0) throw std::runtime_error("receipt printer offline");
}

// A noexcept function whose callee throws: the runtime unwinds to its boundary and terminates
// there, so the callee's frame is gone and this one is the innermost frame of the throw.
__attribute__((noinline)) void save_receipt(int copies) noexcept {
    print_receipt(copies);
}

}  // namespace crashshield_test

extern "C" void csc_crash_cxx_exception(void) { crashshield_test::checkout_total(7); }

extern "C" void csc_crash_cxx_custom_type(void) { crashshield_test::charge_card(1999); }

extern "C" void csc_crash_cxx_noexcept(void) { crashshield_test::save_receipt(1); }

extern "C" void csc_crash_thread_cxx_exception(void) {
    std::thread worker([] { crashshield_test::checkout_total(11); });
    worker.join();
}

extern "C" void csc_crash_cxx_terminate(void) { std::terminate(); }

// A C++ exception thrown and caught, then abort(): a plain abort, no exception in the report.
extern "C" void csc_crash_cxx_caught_then_abort(void) {
    try {
        crashshield_test::checkout_total(2);
    } catch (const std::exception &) {
    }
    csc_crash_abort();
}

// The app's own terminate handler, installed before capture: it must still run (after the note).
extern "C" void csc_test_install_app_terminate_handler(void) {
    std::set_terminate([] {
        std::fputs("app terminate handler ran\n", stderr);
        std::abort();
    });
}
