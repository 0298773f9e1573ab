#include "model/beside_thread.h"

#include <exception>
#include <system_error>
#include <thread>

namespace ckptspec {

void RunBeside(const std::function<void()>& beside, const std::function<void()>& here) {
  std::exception_ptr beside_error;
  const auto guarded = [&] {
    try {
      beside();
    } catch (...) {
      beside_error = std::current_exception();
    }
  };
  std::thread thread;
  try {
    thread = std::thread(guarded);
  } catch (const std::system_error&) {
    guarded();  // no thread to be had: the same work, serially
  }
  std::exception_ptr here_error;
  try {
    here();
  } catch (...) {
    here_error = std::current_exception();
  }
  if (thread.joinable()) thread.join();
  if (here_error) std::rethrow_exception(here_error);
  if (beside_error) std::rethrow_exception(beside_error);
}

}  // namespace ckptspec
