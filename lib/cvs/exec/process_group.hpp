// A Boost.Process launch property: the child leads a process group of its own (setpgid(0, 0)
// before exec). run_all's children, so a timeout or Ctrl-C can kill what they forked too; a node
// stream, so a terminal's Ctrl-C reaches the suite (which stops the run through the streams) and
// not the streams themselves (which would die mid-stop).
#pragma once

#include <unistd.h>

#include <memory>   // before Boost.Process: its posix handles.hpp uses std::unique_ptr unincluded
#include <utility>  // before Boost 1.74 asio: its awaitable.hpp uses std::exchange unincluded

#include <boost/process/extend.hpp>

namespace cvs {

struct NewProcessGroup : boost::process::extend::handler {
  template <class Executor>
  void on_exec_setup(Executor&) const {
    ::setpgid(0, 0);
  }
};

}  // namespace cvs
